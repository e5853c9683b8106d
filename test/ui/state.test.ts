/** The reducer as a specification: events in, view model out. */
import { describe, expect, it } from 'vitest';
import type { HostResult, HostStatus } from '../../src/vocabulary.js';
import {
  failingHostSets,
  freezesRow,
  initialRunState,
  reduceRun,
  runSucceeded,
  waitingCount,
  type RunAction,
} from '../../src/ui/tui/state.js';
import { toFinishedHost } from '../../src/ui/tui/finished-host.js';
import { formatSummary } from '../../src/ui/tui/lines.js';
import { cpu16, fold, host, mem34, result, runStart, start, T0 } from './fixtures.js';
import * as scenario from './scenarios.js';

const done = (status: HostStatus, id = 16): RunAction => ({ type: 'hostDone', result: result(host(id), status) });

describe('header', () => {
  it('comes from onRunStart and is the first frozen item', () => {
    const state = fold([start('deploy', [mem34, cpu16], { dryRun: true, concurrency: 8 })]);
    expect(state.header).toEqual({
      command: 'deploy',
      hostCount: 2,
      hostSet: '16,34',
      inventory: 'inventory/fleet.yaml',
      playbook: 'playbooks/dual-ib-routing.yaml',
      concurrency: 8,
      dryRun: true,
      showScripts: false,
      diff: false,
    });
    expect(state.staticItems.map((i) => i.kind)).toEqual(['header']);
    expect(state.hosts.map((h) => h.id)).toEqual([16, 34]);
    expect(state.layout).toEqual({ idWidth: 2, nameWidth: 11 });
  });
});

describe('running hosts', () => {
  it.each([
    {
      name: 'start registers a host with no stage yet',
      events: [{ type: 'hostStart', host: cpu16, at: T0 + 5 }],
      stage: undefined,
      startedAt: T0 + 5,
    },
    {
      name: 'a stage replaces the previous one, the start time stays',
      events: [
        { type: 'hostStart', host: cpu16, at: T0 + 5 },
        { type: 'stage', host: cpu16, stage: 'probe', at: T0 + 50 },
        { type: 'stage', host: cpu16, stage: 'push', at: T0 + 90 },
      ],
      stage: 'push',
      startedAt: T0 + 5,
    },
    {
      name: 'a stage without a start counts as the start',
      events: [{ type: 'stage', host: cpu16, stage: 'connect', at: T0 + 7 }],
      stage: 'connect',
      startedAt: T0 + 7,
    },
  ] as const)('$name', ({ events, stage, startedAt }) => {
    const state = fold([start('deploy', [cpu16, mem34]), ...events]);
    expect(state.running.get(16)).toEqual({ host: cpu16, stage, startedAt });
    expect(waitingCount(state)).toBe(1);
  });

  it('a finished host leaves the running set and later stage events for it are ignored', () => {
    const state = fold([
      start('deploy', [cpu16]),
      { type: 'hostStart', host: cpu16, at: T0 },
      done('changed'),
      { type: 'stage', host: cpu16, stage: 'verify', at: T0 + 1 },
    ]);
    expect(state.running.size).toBe(0);
    expect(state.finished.map((f) => f.status)).toEqual(['changed']);
  });

  it('keeps start order, so the oldest (possibly stuck) host is listed first', () => {
    const state = fold([
      start('deploy', [cpu16, mem34]),
      { type: 'hostStart', host: mem34, at: T0 },
      { type: 'hostStart', host: cpu16, at: T0 + 1 },
    ]);
    expect([...state.running.keys()]).toEqual([34, 16]);
  });
});

describe('finished hosts and counts', () => {
  it.each<[string, HostStatus[], Partial<Record<HostStatus, number>>]>([
    [
      'one of each',
      ['changed', 'unchanged', 'planned', 'failed', 'unreachable', 'ok', 'drift'],
      { changed: 1, unchanged: 1, planned: 1, failed: 1, unreachable: 1, ok: 1, drift: 1 },
    ],
    ['repeats', ['changed', 'changed', 'failed'], { changed: 2, failed: 1 }],
    ['none', [], {}],
  ])('%s', (_name, statuses, expected) => {
    const hosts = statuses.map((_, i) => host(i + 1));
    const state = fold([start('deploy', hosts), ...statuses.map((s, i) => done(s, i + 1))]);
    const nonZero = Object.fromEntries(Object.entries(state.counts).filter(([, n]) => n > 0));
    expect(nonZero).toEqual(expected);
  });

  it('ignores a second result for the same host', () => {
    const state = fold([start('deploy', [cpu16]), done('failed'), done('changed')]);
    expect(state.finished.map((f) => f.status)).toEqual(['failed']);
    expect(state.counts.changed).toBe(0);
  });

  it('onRunEnd adds results that never came as onHostDone (e.g. hosts never started)', () => {
    const state = fold([
      start('deploy', [cpu16, mem34]),
      done('changed'),
      {
        type: 'runEnd',
        event: {
          results: [result(cpu16, 'changed'), result(mem34, 'unreachable')],
          cells: [],
          durationMs: 10,
          interrupted: false,
        },
      },
    ]);
    expect(state.finished.map((f) => [f.host.id, f.status])).toEqual([
      [16, 'changed'],
      [34, 'unreachable'],
    ]);
  });

  it('ignores everything after the run ended', () => {
    const ended = fold([...scenario.allSucceeded]);
    expect(reduceRun(ended, [done('failed', 99)])).toBe(ended);
  });
});

describe('one-line reasons and error tails', () => {
  it.each([
    {
      name: 'failed: stage, message and exit code',
      result: result(cpu16, 'failed', {
        reasons: ['x'],
        error: { stage: 'apply', message: 'routing script failed', stderrTail: 'a\nb', exitCode: 2 },
      }),
      reason: 'apply: routing script failed (exit 2)',
      tail: ['a', 'b'],
    },
    {
      name: 'failed: no exit code repeated when the message says it',
      result: result(cpu16, 'failed', {
        error: { stage: 'push', message: 'sftp exited 4', stderrTail: '', exitCode: 4 },
      }),
      reason: 'push: sftp exited 4',
      tail: [],
    },
    {
      name: 'unreachable: the connect message, first line only',
      result: result(cpu16, 'unreachable', {
        error: { stage: 'connect', message: 'timed out\nafter 60s', stderrTail: '' },
      }),
      reason: 'connect: timed out',
      tail: [],
    },
    {
      name: 'drift: every reason',
      result: result(cpu16, 'drift', { reasons: ['rule missing', 'hook missing'] }),
      reason: 'rule missing; hook missing',
      tail: [],
    },
    {
      name: 'changed: what changed',
      result: result(cpu16, 'changed', { reasons: ['added route'] }),
      reason: 'added route',
      tail: [],
    },
    {
      name: 'ok with checks: how many passed',
      result: result(cpu16, 'ok', {
        checks: [
          { name: 'a', ok: true, detail: '' },
          { name: 'b', ok: true, detail: '' },
        ],
      }),
      reason: '2/2 checks passed',
      tail: [],
    },
    { name: 'unchanged: nothing to say', result: result(cpu16, 'unchanged'), reason: '', tail: [] },
    {
      name: 'remote escape sequences never reach the terminal',
      result: result(cpu16, 'failed', {
        error: { stage: 'apply', message: 'bad \u001b[2Jthing', stderrTail: '\u001b[31mred\u001b[0m\n\u0007bell\n\n' },
      }),
      reason: 'apply: bad thing',
      tail: ['red', '?bell'],
    },
    {
      name: 'the tail keeps the last six lines',
      result: result(cpu16, 'failed', {
        error: { stage: 'apply', message: 'x', stderrTail: '1\n2\n3\n4\n5\n6\n7\n8\n' },
      }),
      reason: 'apply: x',
      tail: ['3', '4', '5', '6', '7', '8'],
    },
  ])('$name', ({ result: r, reason, tail }) => {
    const row = toFinishedHost(r);
    expect(row.reason).toBe(reason);
    expect(row.errorTail).toEqual(tail);
  });
});

describe('display mode and what is frozen', () => {
  it.each([
    [2, 24, 'rows'],
    [20, 24, 'rows'],
    [21, 24, 'compact'],
    [254, 24, 'compact'],
    [254, 300, 'rows'],
  ] as const)('%i hosts in %i rows → %s', (count, rows, mode) => {
    const hosts = Array.from({ length: count }, (_, i) => host(i + 1));
    expect(fold([start('deploy', hosts)], { rows }).mode).toBe(mode);
  });

  it.each([
    // Rows mode keeps every host live, in host order, and freezes them in that order at the end.
    ['deploy', 'rows', 'changed', false],
    ['deploy', 'rows', 'failed', false],
    ['deploy', 'compact', 'changed', false],
    ['deploy', 'compact', 'unchanged', false],
    ['deploy', 'compact', 'failed', true],
    ['deploy', 'compact', 'unreachable', true],
    ['rollback', 'compact', 'drift', true],
    ['status', 'rows', 'drift', false],
    ['status', 'rows', 'ok', false],
    ['verify', 'rows', 'ok', false],
    ['verify', 'rows', 'unreachable', true],
  ] as const)('%s in %s mode freezes %s: %s', (command, mode, status, frozen) => {
    expect(freezesRow({ command, mode }, status)).toBe(frozen);
  });

  it('compact deploy: failures frozen as they come, successes folded once at the end', () => {
    const state = fold(scenario.bigFleetFinished());
    expect(state.staticItems.map((i) => i.key)).toEqual(['header', 'host-40', 'host-77', 'outcomes']);
    const outcomes = state.staticItems[3]!;
    expect(outcomes.kind === 'groups' && outcomes.groups.map((g) => [g.status, g.ids.length])).toEqual([
      ['changed', 203],
      ['unchanged', 49],
    ]);
  });

  it('rows deploy: rows frozen at the end in host order, whatever order the hosts finished in', () => {
    const state = fold([
      start('deploy', [cpu16, mem34, host(40)]),
      { type: 'hostDone', result: result(host(40), 'changed') },
      {
        type: 'hostDone',
        result: result(mem34, 'failed', { error: { stage: 'apply', message: 'boom', stderrTail: '' } }),
      },
      { type: 'hostDone', result: result(cpu16, 'unchanged') },
      { type: 'runEnd', event: { results: [], cells: [], durationMs: 1, interrupted: false } },
    ]);
    expect(state.staticItems.map((i) => i.key)).toEqual(['header', 'host-16', 'host-34', 'host-40']);
  });

  it('compact deploy: successes fold by outcome and by what changed', () => {
    const changes = (n: number): HostResult['changes'] =>
      Array.from({ length: n }, (_, i) => ({ kind: 'rule', action: 'add', subject: `ib${i}`, text: `ib${i}: rule` }));
    const hosts = Array.from({ length: 30 }, (_, i) => host(i + 1));
    const state = fold([
      start('deploy', hosts),
      ...hosts.map((h) => ({
        type: 'hostDone' as const,
        result: result(h, 'changed', { changes: changes(h.id <= 10 ? 1 : 2) }),
      })),
      { type: 'runEnd', event: { results: [], cells: [], durationMs: 1, interrupted: false } },
    ]);
    const outcomes = state.staticItems.find((i) => i.key === 'outcomes')!;
    expect(outcomes.kind === 'groups' && outcomes.groups.map((g) => [g.hostSet, g.reasons])).toEqual([
      ['1-10', ['+1 rule']],
      ['11-30', ['+2 rules']],
    ]);
  });

  it('status: nothing frozen per host, one folded view at the end', () => {
    const state = fold(scenario.statusFolding, { command: 'status' });
    expect(state.staticItems.map((i) => i.kind)).toEqual(['header', 'groups']);
  });
});

describe('matrix cells', () => {
  it('starts all pending, fills in as cells arrive, keeps failures for the report', () => {
    const half = fold(scenario.verifyHalf(), { command: 'verify' });
    expect(half.matrix?.counts).toEqual({ pending: 6, passed: 5, failed: 1, skipped: 0, 'not-run': 0 });
    expect(half.matrix?.failures.map((c) => `${c.from.iface}>${c.to.iface}`)).toEqual(['ibs5f1>ib1']);
    const full = fold(scenario.verifyComplete(), { command: 'verify' });
    expect(full.matrix?.counts).toEqual({ pending: 0, passed: 10, failed: 2, skipped: 0, 'not-run': 0 });
    expect(full.staticItems.map((i) => i.kind)).toEqual(['header', 'groups', 'matrix']);
  });

  it('folding events one at a time or as one batch gives the same state', () => {
    const actions = scenario.verifyComplete();
    const batched = fold(actions, { command: 'verify' });
    const oneByOne = actions.reduce((s, a) => reduceRun(s, [a]), initialRunState({ command: 'verify' }));
    expect(oneByOne.matrix?.counts).toEqual(batched.matrix?.counts);
    expect(oneByOne.matrix?.grids).toEqual(batched.matrix?.grids);
    expect(oneByOne.finished).toEqual(batched.finished);
  });
});

describe('interruption', () => {
  it('detach ends the run as interrupted and keeps who was running', () => {
    const state = fold(scenario.interruptedTwo);
    expect(state.end).toEqual({ durationMs: 4000, interrupted: true });
    expect(state.staticItems.at(-1)).toMatchObject({ kind: 'interrupted', hosts: [{ host: mem34, stage: 'probe' }] });
    expect(runSucceeded(state)).toBe(false);
  });
});

describe('derived numbers', () => {
  it('failing host sets are folded per status', () => {
    const state = fold([
      start(
        'deploy',
        [16, 17, 18, 34].map((id) => host(id)),
      ),
      done('failed', 16),
      done('failed', 17),
      done('failed', 18),
      done('unreachable', 34),
    ]);
    expect(failingHostSets(state)).toEqual([
      { status: 'failed', hostSet: '16-18', count: 3 },
      { status: 'unreachable', hostSet: '34', count: 1 },
    ]);
  });

  it.each([
    ['all succeeded', scenario.allSucceeded, true],
    ['a failure', scenario.mixedFailures, false],
    ['a failed matrix cell', scenario.verifyComplete(), false],
  ] as const)('success: %s → %s', (_name, actions, ok) => {
    expect(runSucceeded(fold(actions))).toBe(ok);
  });

  it('a fresh state before any event', () => {
    const state = initialRunState({ command: 'status' });
    expect(state).toMatchObject({ command: 'status', terminalRows: 24, header: undefined, end: undefined });
    expect(reduceRun(state, [])).toBe(state);
    expect(runStart([]).hosts).toEqual([]);
  });
});

describe('robustness', () => {
  it('a second onRunStart is ignored: one TUI shows one run', () => {
    const state = fold([start('deploy', [cpu16]), start('verify', [cpu16, mem34])]);
    expect(state.command).toBe('deploy');
    expect(state.staticItems.map((i) => i.kind)).toEqual(['header']);
  });

  it('events before onRunStart are kept, and the header still comes first', () => {
    const state = fold([{ type: 'hostStart', host: cpu16, at: T0 }, start('deploy', [cpu16])]);
    expect(state.running.has(16)).toBe(true);
    expect(state.staticItems[0]?.kind).toBe('header');
  });
});

describe('status: the fabric', () => {
  it("at the end, each host's RDMA ports folded and the run's warnings follow the status groups", () => {
    const nic = {
      nic: 2,
      iface: 'ib1',
      device: 'mlx5_1',
      port: 1,
      state: 'ACTIVE',
      physState: 'LinkUp',
      rate: '100 Gb/sec (4X EDR)',
      linkLayer: 'InfiniBand',
      lid: 4,
      smLid: 1,
      mode: 'datagram',
      mtu: 2044,
      up: true,
      roceV2Gid: null,
    };
    const results = [host(16), host(34)].map((h) => ({ ...result(h, 'ok'), fabric: [nic] }));
    const state = fold([
      start('status', [host(16), host(34)]),
      {
        type: 'runEnd',
        event: {
          results,
          cells: [],
          warnings: ['IPoIB mode differs: 40/ib1 connected'],
          durationMs: 5,
          interrupted: false,
        },
      },
    ]);
    expect(state.staticItems.map((i) => i.kind)).toEqual(['header', 'groups', 'notes']);
    expect(state.staticItems[2]).toMatchObject({
      fabric: ['fabric 16,34: ib1 → mlx5_1/1 ACTIVE LinkUp 100 Gb/sec InfiniBand, datagram MTU 2044'],
      warnings: ['warning IPoIB mode differs: 40/ib1 connected'],
    });
  });

  it('a fleet problem (a port in another subnet) is said first, fails the run and is counted in the summary; verify says it too', () => {
    for (const command of ['status', 'verify'] as const) {
      const state = fold(
        [
          start(command, [host(16), host(34)]),
          {
            type: 'runEnd',
            event: {
              results: [result(host(16), 'ok'), result(host(34), 'ok')],
              cells: [],
              warnings: ['NIC 2: RoCE v2 GID index differs'],
              problems: ['SM LID differs: host 34 NIC 2 (ib1 → mlx5_1/1) sees SM LID 2'],
              durationMs: 5,
              interrupted: false,
            },
          },
        ],
        { command },
      );
      expect(state.staticItems.find((i) => i.kind === 'notes')).toMatchObject({
        warnings: [
          'problem SM LID differs: host 34 NIC 2 (ib1 → mlx5_1/1) sees SM LID 2',
          'warning NIC 2: RoCE v2 GID index differs',
        ],
      });
      expect(runSucceeded(state)).toBe(false);
      expect(formatSummary(state, T0).text).toMatch(/: 2 ok, 1 fleet problem$/);
    }
  });
});
