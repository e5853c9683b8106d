/**
 * Plain lines (pipes, logs, CI — and a terminal with IBFLEET_PLAIN=1) say the same as the TUI:
 * what a host sent back never reaches the terminal as escape sequences, and durations, the order
 * outcomes are listed in and the folding of hosts come from the one text layer both use.
 */
import { describe, expect, it } from 'vitest';
import { formatSummary } from '../../src/ui/tui/lines.js';
import { statusGroups } from '../../src/ui/tui/finished-host.js';
import { plainHandler } from '../../src/ui/plain.js';
import type { CommandName, HostResult, RunEnd } from '../../src/vocabulary.js';
import { cpu16, fold, host, mem34, result, runStart, start, T0 } from './fixtures.js';

function capture(command: CommandName, stages = command === 'deploy') {
  let text = '';
  const events = plainHandler({ write: (chunk: string) => (text += chunk), isTTY: true }, { command, stages });
  return { events, text: () => text };
}

function end(results: readonly HostResult[], durationMs = 4200): RunEnd {
  return { results, cells: [], durationMs, interrupted: false };
}

// What a hostile or broken host might print: a title change, a screen clear, colours, a bell, a raw CR.
const HOSTILE = 'line one \u001b]0;pwned\u0007\u001b[2J\u001b[31mred\u001b[0m\u0007 beep\r\nline\ttwo\u0000\n';

describe('plain output sanitises what hosts send back', () => {
  it("a failed host's stderr tail and message: no escape sequence, control characters shown as ?, tabs kept", () => {
    const { events, text } = capture('deploy');
    events.onHostDone!(
      result(mem34, 'failed', {
        reasons: ['boom'],
        error: {
          stage: 'apply',
          message: 'applying failed (exit 1): \u001b[2Jcleared',
          stderrTail: HOSTILE,
          exitCode: 1,
        },
      }),
    );
    expect(text()).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/);
    expect(text()).toBe(
      '[34 memserver34] failed at apply (4.2s): applying failed (exit 1): cleared\n    | line one red? beep\n    | line\ttwo?\n',
    );
  });

  it("a dry run's script (--show-scripts) is shown line by line, sanitised", () => {
    const { events, text } = capture('deploy');
    events.onRunStart!(runStart([cpu16], { dryRun: true, showScripts: true }));
    events.onHostDone!(
      result(cpu16, 'planned', {
        reasons: ['ib1: rule 942'],
        planText: 'ip rule add from 172.16.16.2 lookup 942\n\u001b[1mbold\u001b[0m\n',
      }),
    );
    expect(text().split('\n').slice(1).join('\n')).toBe(
      '[16 cpuserver16] planned (4.2s): 1 change\n    script that would run as root on the host:\n    | ip rule add from 172.16.16.2 lookup 942\n    | bold\n',
    );
  });

  it('a dry run without --show-scripts: one line per host by kind, then the plan folded across hosts', () => {
    const { events, text } = capture('deploy', false);
    const plan = (h: typeof cpu16) =>
      result(h, 'planned', {
        manager: 'netplan',
        changes: [
          { kind: 'rule', action: 'add', subject: 'ib1', text: `ib1: rule 942: from 172.16.${h.id}.2 lookup 942` },
        ],
        planText: 'script',
      });
    const hosts = [host(40, 'node40', ['ib0', 'ib1']), host(41, 'node41', ['ib0', 'ib1'])];
    events.onRunStart!(runStart(hosts, { dryRun: true }));
    for (const h of hosts) events.onHostDone!(plan(h));
    events.onRunEnd!(end(hosts.map(plan)));
    expect(text().split('\n').slice(1)).toEqual([
      '[40 node40] planned (netplan, 4.2s): +1 rule',
      '[41 node41] planned (netplan, 4.2s): +1 rule',
      '40-41: planned: +1 rule',
      'plan: 2 hosts to change, all alike (the exact scripts: --show-scripts)',
      '40-41 (2 hosts, netplan): +1 rule',
      '  + ib1: rule 942: from 172.16.H.2 lookup 942',
      'summary: 2 planned · 4.2s',
      '',
    ]);
  });

  it('drift reasons and status lines too', () => {
    const { events, text } = capture('status');
    events.onRunEnd!(end([result(cpu16, 'drift', { reasons: ['ib1: \u001b[31mrule\u001b[0m missing'] })]));
    expect(text()).toMatch(/^16: drift: ib1: rule missing\n/);
  });
});

describe('plain output and the TUI use one text layer', () => {
  it('one duration rule: 65 s is 1m05s in plain lines as in the TUI, 12.34 s is 12.3s', () => {
    const { events, text } = capture('deploy');
    events.onHostDone!(result(cpu16, 'changed', { manager: 'netplan', durationMs: 12_340 }));
    events.onRunEnd!(end([result(cpu16, 'changed', { durationMs: 12_340 })], 65_000));
    expect(text()).toBe('[16 cpuserver16] changed (netplan, 12.3s): 0 changes\nsummary: 1 changed · 1m05s\n');
    const tui = fold([
      start('deploy', [cpu16]),
      { type: 'runEnd', event: end([result(cpu16, 'changed', { durationMs: 12_340 })], 65_000) },
    ]);
    expect(formatSummary(tui, T0).text).toBe('deploy finished in 1m05s: 1 changed');
  });

  it('one status order and one folding: plain status lines list the same groups, in the same order, as the TUI', () => {
    const results = [
      result(cpu16, 'ok'),
      result(host(17), 'ok'),
      result(mem34, 'drift', { reasons: ['ib1: rule 942 missing'] }),
      result(host(40), 'unreachable', {
        reasons: ['no route'],
        error: { stage: 'connect', message: 'no route to 10.208.130.40', stderrTail: '' },
      }),
      result(host(41), 'ok'),
    ];
    const { events, text } = capture('status');
    events.onRunEnd!(end(results));
    const plainGroups = text()
      .split('\n')
      .filter((l) => /^\d/.test(l))
      .map((l) => l.split(': ').slice(0, 2));
    const tuiState = fold(
      [
        start(
          'status',
          results.map((r) => r.host),
        ),
        ...results.map((r) => ({ type: 'hostDone' as const, result: r })),
      ],
      { command: 'status' },
    );
    const tuiGroups = statusGroups(tuiState.results, tuiState.header?.inventory).map((g) => [g.hostSet, g.status]);
    expect(plainGroups).toEqual([
      ['40', 'unreachable'],
      ['34', 'drift'],
      ['16-17,41', 'ok'],
    ]);
    expect(plainGroups).toEqual(tuiGroups);
  });

  it('hosts never deployed: one line, whatever their manager, with the deploy command for exactly them; the TUI says the same', () => {
    const drift = (id: number, manager: 'netplan' | 'ifupdown', reasons: string[]) =>
      result(host(id), 'drift', { manager, notDeployed: true, reasons });
    const results = [
      result(cpu16, 'ok'),
      drift(60, 'netplan', ['ib0 is down (no 172.16.60.1)', 'ib0: rule from 172.16.60.1 is missing']),
      drift(61, 'netplan', ['ib0 is down (no 172.16.61.1)', 'ib0: rule from 172.16.61.1 is missing']),
      drift(62, 'ifupdown', ['ib0 carries no IPv4 address']),
      result(mem34, 'drift', { reasons: ['ib1: rule 942 missing'] }),
    ];
    const { events, text } = capture('status');
    events.onRunStart!(
      runStart(
        results.map((r) => r.host),
        { command: 'status', inventory: '/run/lab x/inventory.yaml' },
      ),
    );
    events.onRunEnd!(end(results));
    expect(
      text()
        .split('\n')
        .filter((l) => /^\d/.test(l)),
    ).toEqual([
      '34: drift: ib1: rule 942 missing',
      "60-62: not deployed — ibfleet deploy -i '/run/lab x/inventory.yaml' --hosts 60-62",
      '16: ok',
    ]);
    const tuiState = fold(
      [
        start(
          'status',
          results.map((r) => r.host),
          { inventory: '/run/lab x/inventory.yaml' },
        ),
        ...results.map((r) => ({ type: 'hostDone' as const, result: r })),
      ],
      { command: 'status' },
    );
    expect(
      statusGroups(tuiState.results, tuiState.header?.inventory).map((g) => [
        g.hostSet,
        g.status,
        g.summary ?? g.reasons.join('; '),
      ]),
    ).toEqual([
      ['34', 'drift', 'ib1: rule 942 missing'],
      ['60-62', 'drift', "not deployed — ibfleet deploy -i '/run/lab x/inventory.yaml' --hosts 60-62"],
      ['16', 'ok', ''],
    ]);
    // The summary counts them as their line names them, not as `4 drift`.
    expect(text()).toMatch(/^summary: 1 drift, 3 not deployed, 1 ok · /m);
    const ended = fold(
      [
        start(
          'status',
          results.map((r) => r.host),
          { inventory: '/run/lab x/inventory.yaml' },
        ),
        { type: 'runEnd' as const, event: end(results) },
      ],
      { command: 'status' },
    );
    expect(formatSummary(ended, T0).text).toMatch(/^status finished in \S+: 1 drift, 3 not deployed, 1 ok$/);
  });

  it("the header line: the same words as the TUI's", () => {
    const { events, text } = capture('deploy');
    events.onRunStart!({
      command: 'deploy',
      hosts: [mem34, cpu16],
      concurrency: 32,
      inventory: 'inventory/fleet.yaml',
      playbook: 'dual-ib-routing',
      dryRun: true,
      startedAt: T0,
    });
    expect(text()).toBe(
      'ibfleet deploy --dry-run: 2 hosts (16,34) · playbook dual-ib-routing · inventory inventory/fleet.yaml · concurrency 32\n',
    );
  });
});
