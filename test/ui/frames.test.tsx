/**
 * What a person sees, frame by frame: the Ink tree rendered by ink-testing-library from states
 * folded out of named event streams. Colour is off and the clock is injected, so frames are exact.
 */
import { cleanup, render } from 'ink-testing-library';
import { afterEach, describe, expect, it } from 'vitest';
import type { CommandName } from '../../src/vocabulary.js';
import { planLiveArea } from '../../src/ui/tui/layout.js';
import type { RunAction } from '../../src/ui/tui/state.js';
import { TuiApp } from '../../src/ui/tui/tui-app.js';
import { cell, fold, host, nic, plain, result, start, T0 } from './fixtures.js';
import * as scenario from './scenarios.js';

afterEach(() => cleanup());

function frame(
  actions: readonly RunAction[],
  options: { command?: CommandName; now?: number; rows?: number; spinner?: number } = {},
): string {
  const state = fold(actions, { command: options.command ?? 'deploy', rows: options.rows ?? 24 });
  const { lastFrame } = render(
    <TuiApp
      state={state}
      now={options.now ?? T0 + 3400}
      frame={options.spinner ?? 0}
      rows={options.rows ?? 24}
      columns={100}
      color={false}
    />,
  );
  return plain(lastFrame());
}

const HEADER_16_34 = [
  'ibfleet deploy · 2 hosts (16,34) · playbook playbooks/dual-ib-routing.yaml · inventory',
  'inventory/fleet.yaml · concurrency 32',
];

describe('deploy frames', () => {
  it('running: two hosts mid-stage, each with spinner, stage and elapsed; summary last', () => {
    expect(frame(scenario.runningTwo)).toBe(
      [
        ...HEADER_16_34,
        '⠋ 16 cpuserver16  push           3.3s',
        '⠋ 34 memserver34  probe          3.1s',
        '⠋ deploy 3.4s: 0/2 done, 2 running',
      ].join('\n'),
    );
  });

  it('the spinner advances with the shared frame counter', () => {
    expect(frame(scenario.runningTwo, { spinner: 3 }).split('\n').slice(2)).toEqual([
      '⠸ 16 cpuserver16  push           3.3s',
      '⠸ 34 memserver34  probe          3.1s',
      '⠸ deploy 3.4s: 0/2 done, 2 running',
    ]);
  });

  it('all succeeded: every host frozen on one line with outcome, manager, duration and what changed', () => {
    expect(frame(scenario.allSucceeded)).toBe(
      [
        ...HEADER_16_34,
        '✓ 16 cpuserver16  changed      networkmanager    5.2s  added route 172.16.0.0/16 table 941; added r…',
        '✓ 34 memserver34  unchanged    netplan           3.0s',
        '✓ deploy finished in 6.1s: 1 changed, 1 unchanged',
      ].join('\n'),
    );
  });

  it('mixed failures: the failed host shows its error tail, the unreachable one its reason', () => {
    expect(frame(scenario.mixedFailures)).toBe(
      [
        'ibfleet deploy · 3 hosts (16,34,40) · playbook playbooks/dual-ib-routing.yaml · inventory',
        'inventory/fleet.yaml · concurrency 32',
        '✓ 16 cpuserver16  changed      networkmanager    5.2s  added route 172.16.0.0/16 table 941',
        '✗ 34 memserver34  failed       netplan           2.7s  apply: routing script failed (exit 2)',
        '     │ + ip -4 route replace 172.16.0.0/16 dev ib0 table 941',
        '     │ + ip -4 rule add from 172.16.34.1 lookup 941 priority 941',
        '     │ + ip -4 route replace 172.16.0.0/16 dev ib1 table 942',
        '     │ Cannot find device "ib1"',
        '     │ + exit 2',
        '✗ 40 cpuserver40  unreachable                   1m00s  connect: no answer from 10.208.130.40:22',
        '                                                       within 60s; is the host up?',
        '✗ deploy finished in 1m00s: 1 failed, 1 unreachable, 1 changed',
      ].join('\n'),
    );
  });

  it('dry run: the plan by kind, hosts folded, the scripts one option away', () => {
    expect(frame(scenario.dryRunOne)).toBe(
      [
        'ibfleet deploy --dry-run · 1 host (34) · playbook playbooks/dual-ib-routing.yaml · inventory',
        'inventory/fleet.yaml · concurrency 32 · dry run: nothing is changed',
        '~ planned      1 host: 34',
        'plan: 1 host to change (the exact scripts: --show-scripts)',
        '34 memserver34 (netplan): +1 rule +1 table route',
        '  + ib1: rule 942: from 172.16.34.2 lookup 942',
        '  + ib1: table 942 ← 172.16.0.0/16 src 172.16.34.2',
        '✓ deploy finished in 2.0s: 1 planned',
      ].join('\n'),
    );
  });

  it("dry run --show-scripts: each host's row with the exact script under it, then the plan", () => {
    expect(frame(scenario.dryRunScripts)).toBe(
      [
        'ibfleet deploy --dry-run · 1 host (34) · playbook playbooks/dual-ib-routing.yaml · inventory',
        'inventory/fleet.yaml · concurrency 32 · dry run: nothing is changed',
        '~ 34 memserver34  planned      netplan           1.9s  +1 rule +1 table route',
        '     would run:',
        '       ip -4 route replace 172.16.0.0/16 dev ib1 src 172.16.34.2 table 942',
        '       ip -4 rule add from 172.16.34.2 lookup 942 priority 942',
        'plan: 1 host to change',
        '34 memserver34 (netplan): +1 rule +1 table route',
        '  + ib1: rule 942: from 172.16.34.2 lookup 942',
        '  + ib1: table 942 ← 172.16.0.0/16 src 172.16.34.2',
        '✓ deploy finished in 2.0s: 1 planned',
      ].join('\n'),
    );
  });

  it('interrupted: the final frame names who was cut off and where', () => {
    expect(frame(scenario.interruptedTwo)).toBe(
      [
        ...HEADER_16_34,
        '✓ 16 cpuserver16  changed      networkmanager    2.5s  added route 172.16.0.0/16 table 941',
        '✗ interrupted  34 (probe 1)',
        '✗ deploy interrupted after 4.0s: 1 changed, 1 not finished (34)',
      ].join('\n'),
    );
  });
});

describe('254 hosts in a 24-row terminal', () => {
  const HEADER_254 = [
    'ibfleet deploy · 254 hosts (1-254) · playbook playbooks/dual-ib-routing.yaml · inventory',
    'inventory/fleet.yaml · concurrency 32',
  ];
  const FAILURES = [
    '✗  40 node040  failed       ifupdown          3.1s  push: cannot write',
    '                                                    /etc/network/if-up.d/ibfleet-routes: read-only',
    '                                                    file system',
    '      │ sftp: EROFS',
    '✗  77 node077  unreachable                   30.0s  connect: connection refused by 10.208.130.77:22',
  ];

  it('mid-run: failures frozen and named live, the oldest running hosts shown, the rest counted', () => {
    const actions = scenario.bigFleetMidRun();
    expect(frame(actions, { now: T0 + 40_000 })).toBe(
      [
        ...HEADER_254,
        ...FAILURES,
        '⠋ 201 node201  connect        4.0s',
        '⠋ 202 node202  probe          3.9s',
        '⠋ 203 node203  plan           3.8s',
        '⠋ 204 node204  push           3.7s',
        '⠋ 205 node205  apply          3.6s',
        '⠋ 206 node206  connect        3.5s',
        '⠋ 207 node207  probe          3.4s',
        '⠋ 208 node208  plan           3.3s',
        '⠋ 209 node209  push           3.2s',
        '… 23 more running (connect 5, probe 5, plan 4, push 4, apply 5)',
        '✓ 198 more finished: 149 changed, 49 unchanged',
        '✗ failed 40; unreachable 77 (details above)',
        '⠋ deploy 40.0s: 200/254 done, 1 failed, 1 unreachable, 149 changed, 49 unchanged, 32 running, 22 wa…',
      ].join('\n'),
    );
    // The live area (everything below the frozen rows) leaves room on a 24-row screen.
    expect(planLiveArea(fold(actions), { rows: 24, columns: 100 }).height).toBe(13);
  });

  it('finished: successes folded into one line per outcome, count first', () => {
    expect(frame(scenario.bigFleetFinished(), { now: T0 + 52_300 })).toBe(
      [
        ...HEADER_254,
        ...FAILURES,
        '✓ changed      203 hosts: 1-3,5-7,9-11,13-15,17-19,21-23,25-27,29-31,33-35,37-39,41-43,45-47,49-51,…',
        '✓ unchanged    49 hosts: 4,8,12,16,20,24,28,32,36,44,48,52,56,60,64,68,72,76,80,84,88,92,96,100,104…',
        '✗ deploy finished in 52.3s: 1 failed, 1 unreachable, 203 changed, 49 unchanged',
      ].join('\n'),
    );
  });
});

describe('status frames', () => {
  it('folds hosts with identical answers, lists drift reasons, failing groups first', () => {
    expect(frame(scenario.statusFolding, { command: 'status' })).toBe(
      [
        'ibfleet status · 10 hosts (16-20,34,40,42,44,77) · inventory inventory/fleet.yaml · concurrency 32',
        '✗ unreachable  77  connect: connection refused',
        '! drift        40,42 (2 hosts)',
        '    - rule from 172.16.H.2 lookup 942 missing',
        '    - hook /etc/network/if-up.d/ibfleet-routes not installed',
        '! drift        44',
        '    - main table still has 172.16.0.0/16 dev ib1',
        '✓ ok           16-20,34 (6 hosts)',
        '✗ status finished in 10.2s: 1 unreachable, 3 drift, 6 ok',
      ].join('\n'),
    );
  });

  it('shows the groups live while hosts are still being checked', () => {
    const partial = scenario.statusFolding.filter((a) => a.type !== 'runEnd').slice(0, 5);
    expect(frame(partial, { command: 'status', now: T0 + 900 })).toBe(
      [
        'ibfleet status · 10 hosts (16-20,34,40,42,44,77) · inventory inventory/fleet.yaml · concurrency 32',
        '✓ ok           16-19 (4 hosts)',
        '⠋ status 0.9s: 4/10 done, 4 ok, 6 waiting',
      ].join('\n'),
    );
  });
});

describe('verify frames (2 hosts × 2 NICs, ping)', () => {
  const HEADER = 'ibfleet verify · 2 hosts (16,34) · inventory inventory/fleet.yaml · concurrency 32';
  const COLUMNS = String.raw`from \ to  16/ibs5f0  16/ibs5f1  34/ib0  34/ib1`;
  const LEGEND = 'rows: from, columns: to · ✓ reachable  ✗ failed  · pending  – skipped · method ping';

  it('half filled: results where they arrived, the rest pending', () => {
    expect(frame(scenario.verifyHalf(), { command: 'verify', now: T0 + 1500 })).toBe(
      [
        HEADER,
        COLUMNS,
        '16/ibs5f0                  ✓        ✓       ✓',
        '16/ibs5f1      ✓                    ✓       ✗',
        '34/ib0         ·          ·                 ·',
        '34/ib1         ·          ·        ·',
        LEGEND,
        '⠋ verify 1.5s: 0/2 done, 2 waiting, cells 5 passed, 1 failed, 6 pending',
      ].join('\n'),
    );
  });

  it('complete: the matrix frozen, every failing cell with the command that reproduces it', () => {
    expect(frame(scenario.verifyComplete(), { command: 'verify', now: T0 + 3600 })).toBe(
      [
        HEADER,
        '✓ ok           2 hosts: 16,34',
        COLUMNS,
        '16/ibs5f0                  ✓        ✓       ✓',
        '16/ibs5f1      ✓                    ✓       ✗',
        '34/ib0         ✓          ✓                 ✓',
        '34/ib1         ✓          ✗        ✓',
        LEGEND,
        '✗ 16/ibs5f1 → 34/ib1 (ping 172.16.16.2 → 172.16.34.2): 0/3 replies (100% loss)',
        '    ssh root@10.208.130.16 ping -c 3 -I 172.16.16.2 172.16.34.2',
        '✗ 34/ib1 → 16/ibs5f1 (ping 172.16.34.2 → 172.16.16.2): 0/3 replies (100% loss)',
        '    ssh root@10.208.130.34 ping -c 3 -I 172.16.34.2 172.16.16.2',
        '✗ verify finished in 3.6s: 2 ok, cells 10 passed, 2 failed',
      ].join('\n'),
    );
  });
});

function fleetMatrix(
  ids: readonly number[],
  ok: (from: { host: number; nic: number }, to: { host: number; nic: number }) => boolean | 'not-run',
) {
  const hosts = ids.map((id) => host(id));
  const ends = hosts.flatMap((h) => [nic(h, 1, 'ib0'), nic(h, 2, 'ib1')]);
  const pairs = ends.flatMap((from) =>
    ends.filter((to) => to.host !== from.host).map((to) => ({ from, to, method: 'ping' as const })),
  );
  const cells = pairs.map((p) => {
    const verdict = ok(p.from, p.to);
    return verdict === 'not-run'
      ? cell(p.from, p.to, null, { state: 'not-run', detail: 'not run: interrupted' })
      : cell(p.from, p.to, verdict);
  });
  return { hosts, pairs, cells };
}

/** The lab of issue 17: 20 hosts, 2 NICs each. */
const LAB_20 = [16, 34, ...Array.from({ length: 18 }, (_, i) => 40 + i)];

describe('verify at fleet scale, 80×24', () => {
  function frame80(actions: readonly RunAction[]): string[] {
    const state = fold(actions, { command: 'verify', rows: 24 });
    const { lastFrame } = render(
      <TuiApp state={state} now={T0 + 3400} frame={0} rows={24} columns={80} color={false} />,
    );
    return plain(lastFrame()).split('\n');
  }

  it('20 hosts: the NIC grid (40 columns) does not fit, the host×host grid does, every line within 80 columns', () => {
    const { hosts, pairs, cells } = fleetMatrix(
      LAB_20,
      (from, to) => !(to.host === 50 && to.nic === 2 && from.nic === 2),
    );
    const text = frame80([
      start('verify', hosts, { playbook: undefined }),
      { type: 'matrix', cells: pairs },
      ...cells.map((c): RunAction => ({ type: 'cell', cell: c })),
      {
        type: 'runEnd',
        event: { results: hosts.map((h) => result(h, 'ok')), cells: [], durationMs: 8000, interrupted: false },
      },
    ]);
    const grid = text.slice(text.findIndex((l) => l.startsWith('from\\to')));
    expect(grid[0]).toBe('from\\to 16 34 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57');
    expect(grid[1]).toBe('     16     ✓  ✓  ✓  ✓  ✓  ✓  ✓  ✓  ✓  ✓  ✓  3  ✓  ✓  ✓  ✓  ✓  ✓  ✓');
    expect(grid[13]).toBe('     50  ✓  ✓  ✓  ✓  ✓  ✓  ✓  ✓  ✓  ✓  ✓  ✓     ✓  ✓  ✓  ✓  ✓  ✓  ✓');
    expect(grid[21]).toBe('host×host, 4 cells each: ✓ all passed  3 = 3 passed  ✗ none · ping');
    expect(grid[22]).toBe('✗ 16/ib1 → 50/ib1 (ping 172.16.16.2 → 172.16.50.2): 0/3 replies');
    expect(text.every((l) => l.length <= 80)).toBe(true);
  });

  it('20 hosts while running: the live host grid and the summary fit 24 rows', () => {
    const { hosts, pairs, cells } = fleetMatrix(LAB_20, () => true);
    const text = frame80([
      start('verify', hosts, { playbook: undefined }),
      ...hosts.map((h): RunAction => ({ type: 'stage', host: h, stage: 'check', at: T0 })),
      { type: 'matrix', cells: pairs },
      ...cells.slice(0, 700).map((c): RunAction => ({ type: 'cell', cell: c })),
    ]);
    // Above the live area: the frozen header (2 lines at 80 columns), which scrolls away; the live area stays within 23 lines.
    expect(text.slice(0, 2).join(' ')).toMatch(/^ibfleet verify · 20 hosts/);
    expect(text.length - 2).toBeLessThanOrEqual(23);
    expect(text.find((l) => l.startsWith('     57'))).toBe(
      '     57  ·  ·  ·  ·  ·  ·  ·  ·  ·  ·  ·  ·  ·  ·  ·  ·  ·  ·  ·',
    );
    expect(text.at(-1)).toBe('⠋ verify 3.4s: 0/20 done, 20 running, cells 700 passed, 0 failed, 820 pending');
  });

  it('interrupted: cells that never ran are not run (○), not failed, in the grid and the summary', () => {
    const { hosts, pairs, cells } = fleetMatrix(LAB_20, (from) => (from.host <= 34 ? true : 'not-run'));
    const text = frame80([
      start('verify', hosts, { playbook: undefined }),
      { type: 'matrix', cells: pairs },
      ...cells.map((c): RunAction => ({ type: 'cell', cell: c })),
      {
        type: 'runEnd',
        event: {
          results: hosts.map((h) => result(h, h.id <= 34 ? 'ok' : 'not-run')),
          cells: [],
          durationMs: 2000,
          interrupted: true,
        },
      },
    ]);
    expect(text.find((l) => l.startsWith('     34'))).toBe(
      '     34  ✓     ✓  ✓  ✓  ✓  ✓  ✓  ✓  ✓  ✓  ✓  ✓  ✓  ✓  ✓  ✓  ✓  ✓  ✓',
    );
    expect(text.find((l) => l.startsWith('     40'))).toBe(
      '     40  ○  ○     ○  ○  ○  ○  ○  ○  ○  ○  ○  ○  ○  ○  ○  ○  ○  ○  ○',
    );
    expect(text.some((l) => l.startsWith('✗ ') && l.includes('→'))).toBe(false);
    expect(text.at(-1)).toBe(
      '✗ verify interrupted after 2.0s: 18 not-run, 2 ok, cells 152 passed, 0 failed, 1368 not run',
    );
  });
});

describe('verify on a fleet too big for a grid', () => {
  it('shows counts instead of a grid, and lists as many failing cells with their commands as fit the screen', () => {
    // 40 hosts: neither the NIC grid nor the host grid (40 columns of 3) fits 100 columns.
    const hosts = Array.from({ length: 40 }, (_, i) => host(i + 1));
    const ends = hosts.flatMap((h) => [nic(h, 1, 'ib0'), nic(h, 2, 'ib1')]);
    const pairs = ends.flatMap((from) =>
      ends.filter((to) => to !== from).map((to) => ({ from, to, method: 'ping' as const })),
    );
    // Every cell to 40/ib1 fails (79 cells); everything else passes.
    const cells = pairs.map((p) => cell(p.from, p.to, !(p.to.host === 40 && p.to.nic === 2)));
    const text = frame(
      [
        start('verify', hosts, { playbook: undefined }),
        { type: 'matrix', cells: pairs },
        ...cells.map((c): RunAction => ({ type: 'cell', cell: c })),
        {
          type: 'runEnd',
          event: { results: hosts.map((h) => result(h, 'ok')), cells: [], durationMs: 8000, interrupted: false },
        },
      ],
      { command: 'verify' },
    ).split('\n');
    expect(text[2]).toBe('matrix 80x80 NICs, 6320 cells: 6241 passed, 79 failed');
    expect(text.slice(3, 5)).toEqual([
      '✗ 1/ib0 → 40/ib1 (ping 172.16.1.1 → 172.16.40.2): 0/3 replies',
      '    ssh root@10.208.130.1 ping -c 3 -I 172.16.1.1 172.16.40.2',
    ]);
    // 24 rows: the counts line, 10 cells of two lines, the rest counted, the summary.
    expect(text.filter((l) => l.startsWith('✗ ') && l.includes('→'))).toHaveLength(10);
    expect(text.slice(-2)).toEqual([
      '✗ … and 69 more failing cells (the run log and --json list every cell)',
      '✗ verify finished in 8.0s: 40 ok, cells 6241 passed, 79 failed',
    ]);
  });
});

describe('verify on multi-rail hosts (3 hosts × 8 NICs, before deploy: only NIC 1 ↔ NIC 1 passes), 80×24', () => {
  const IFACES = ['ibp12s0', 'ibp75s0', 'ibp141s0', 'ibp186s0', 'ibp18s0', 'ibp84s0', 'ibp151s0', 'ibp200s0'];
  const hosts = [16, 34, 40].map((id) => host(id, `gpu${id}`));
  const ends = hosts.flatMap((h) => IFACES.map((iface, i) => nic(h, i + 1, iface)));
  /** The routing missing at both ends, as verify's probe finds it before deploy. */
  const undeployed = (end: { host: number; iface: string }) => ({
    kind: 'routing-missing' as const,
    host: end.host,
    iface: end.iface,
    text: `${end.host}/${end.iface}: no rule, table empty (per-NIC routing not deployed: ibfleet deploy --hosts ${end.host})`,
  });

  function run(mode: 'full' | 'rail', reason?: string): string[] {
    const pairs = ends.flatMap((from) =>
      ends
        .filter((to) => to.host !== from.host && (mode === 'full' || to.nic === from.nic))
        .map((to) => ({ from, to, method: 'ping' as const })),
    );
    const cells = pairs.map((p) =>
      p.from.nic === 1 && p.to.nic === 1
        ? cell(p.from, p.to, true)
        : cell(p.from, p.to, false, { causes: [undeployed(p.from), undeployed(p.to)] }),
    );
    const state = fold(
      [
        start('verify', hosts, { playbook: undefined }),
        { type: 'matrix', cells: pairs, start: { mode, ...(reason ? { reason } : {}) } },
        ...cells.map((c): RunAction => ({ type: 'cell', cell: c })),
        {
          type: 'runEnd',
          event: { results: hosts.map((h) => result(h, 'failed')), cells: [], durationMs: 12000, interrupted: false },
        },
      ],
      { command: 'verify', rows: 24 },
    );
    const { lastFrame } = render(
      <TuiApp state={state} now={T0 + 3400} frame={0} rows={24} columns={80} color={false} />,
    );
    return plain(lastFrame()).split('\n');
  }

  it('the NIC grid (24 columns) does not fit: the host×host grid, the rail grid under it, the failures folded by cause', () => {
    const text = run('full');
    const at = text.findIndex((l) => l.startsWith('from\\to'));
    expect(text.slice(at, at + 5)).toEqual([
      'from\\to 16 34 40',
      '     16     1  1',
      '     34  1     1',
      '     40  1  1',
      'host×host, 64 cells each: ✓ all passed  3 = 3 passed  ✗ none · ping',
    ]);
    expect(text.slice(at + 5, at + 15)).toEqual(
      [
        'NIC\\NIC  1  2  3  4  5  6  7  8',
        '      1  6  ✗  ✗  ✗  ✗  ✗  ✗  ✗',
        '      2  ✗  ✗  ✗  ✗  ✗  ✗  ✗  ✗',
        '      3  ✗  ✗  ✗  ✗  ✗  ✗  ✗  ✗',
        '      4  ✗  ✗  ✗  ✗  ✗  ✗  ✗  ✗',
        '      5  ✗  ✗  ✗  ✗  ✗  ✗  ✗  ✗',
        '      6  ✗  ✗  ✗  ✗  ✗  ✗  ✗  ✗',
        '      7  ✗  ✗  ✗  ✗  ✗  ✗  ✗  ✗',
        '      8  ✗  ✗  ✗  ✗  ✗  ✗  ✗  ✗',
        'NIC×NIC over host pairs (≤6 cells each; rails on the diagonal): ✓ all passed  3…',
      ].map((l, i) => (i === 1 ? l.replace('  6  ✗', '  ✓  ✗') : l)),
    );
    // The cause line wraps rather than cut its command short of the hosts.
    expect(text.slice(at + 15, at + 17)).toEqual([
      '✗ 378 cells: no per-NIC routing on 24 NICs — ibfleet deploy -i',
      'inventory/fleet.yaml --hosts 16,34,40',
    ]);
    expect(text.every((l) => l.length <= 80)).toBe(true);
    expect(text.at(-1)).toBe('✗ verify finished in 12.0s: 3 failed, cells 6 passed, 378 failed');
  });

  it('--rail: the cells on the diagonal only; a mode verify chose says why above the grids', () => {
    const text = run('rail', 'the full matrix (…) is more than 1024 cells a host: --full checks it');
    const at = text.findIndex((l) => l.startsWith('matrix: rail'));
    expect(text[at]).toBe('matrix: rail (NIC n to NIC n of every other host) — the full matrix (…) is more…');
    const rails = text.slice(text.findIndex((l) => l.startsWith('NIC\\NIC')));
    expect(rails.slice(1, 4)).toEqual(['      1  ✓', '      2     ✗', '      3        ✗']);
    const cause = text.findIndex((l) => l.startsWith('✗ 42 cells'));
    expect(text.slice(cause, cause + 2).join(' ')).toBe(
      '✗ 42 cells: no per-NIC routing on 21 NICs — ibfleet deploy -i inventory/fleet.yaml --hosts 16,34,40',
    );
  });
});
