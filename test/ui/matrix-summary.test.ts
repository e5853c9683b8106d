/**
 * The matrix read at rail scale: each rail's count, and the failing cells folded by their likely
 * cause — what plain lines, the run log and the live view print under a multi-rail matrix.
 */
import { describe, expect, it } from 'vitest';
import { plainHandler } from '../../src/ui/plain.js';
import {
  causeGroups,
  formatCauseGroupText,
  formatMatrixStartText,
  formatRailsText,
  railCounts,
} from '../../src/ui/text/matrix-summary.js';
import type { CellCause, MatrixCell } from '../../src/vocabulary.js';
import { cell, host, nic, result } from './fixtures.js';

const hosts = [16, 34, 40].map((id) => host(id, `gpu${id}`));
const ends = hosts.flatMap((h) => Array.from({ length: 8 }, (_, i) => nic(h, i + 1, `ibp${i}s0`)));
const undeployed = (end: { host: number; iface: string }): CellCause => ({
  kind: 'routing-missing',
  host: end.host,
  iface: end.iface,
  text: `${end.host}/${end.iface}: no rule (per-NIC routing not deployed)`,
});

/** The seeds' failure at 8 NICs: only NIC 1 ↔ NIC 1 passes, every other cell fails with the routing missing at both ends. */
const beforeDeploy: MatrixCell[] = ends.flatMap((from) =>
  ends
    .filter((to) => to.host !== from.host)
    .map((to) =>
      from.nic === 1 && to.nic === 1
        ? cell(from, to, true)
        : cell(from, to, false, { causes: [undeployed(from), undeployed(to)] }),
    ),
);

describe('each rail', () => {
  it('counts NIC n → NIC n per rail, then every cell across rails', () => {
    const counts = railCounts(beforeDeploy);
    expect(counts.map((c) => `${c.rail ?? 'across'} ${c.passed}/${c.total}`)).toEqual([
      '1 6/6',
      '2 0/6',
      '3 0/6',
      '4 0/6',
      '5 0/6',
      '6 0/6',
      '7 0/6',
      '8 0/6',
      'across 0/336',
    ]);
    expect(formatRailsText(beforeDeploy)).toBe(
      'by rail (NIC n → NIC n): 1 6/6 · 2 0/6 · 3 0/6 · 4 0/6 · 5 0/6 · 6 0/6 · 7 0/6 · 8 0/6 · across rails 0/336 passed',
    );
  });

  it('hosts of one or two NICs read as before: no rail line', () => {
    expect(formatRailsText(beforeDeploy.filter((c) => c.from.nic === 1 && c.to.nic === 1))).toBeUndefined();
    expect(formatRailsText(beforeDeploy.filter((c) => c.from.nic <= 2 && c.to.nic <= 2))).toBeUndefined();
  });
});

describe('failing cells by likely cause', () => {
  it('378 cells of one kind at 24 NICs: one line, with the command that fixes it', () => {
    const groups = causeGroups(beforeDeploy);
    expect(groups).toHaveLength(1);
    expect(formatCauseGroupText(groups[0]!)).toBe(
      '378 cells: no per-NIC routing on 24 NICs — ibfleet deploy --hosts 16,34,40',
    );
    // With the run's inventory, as status's not-deployed line and each cell's cause say it: it runs from any directory.
    expect(formatCauseGroupText(groups[0]!, '/run/ibfleet-lab/my lab/inventory.yaml')).toBe(
      "378 cells: no per-NIC routing on 24 NICs — ibfleet deploy -i '/run/ibfleet-lab/my lab/inventory.yaml' --hosts 16,34,40",
    );
  });

  it('a cause found at one end is said whole; kinds that explain more come first, cells nothing explains last', () => {
    const down: CellCause = {
      kind: 'port-not-active',
      host: 34,
      iface: 'ibp1s0',
      text: '34/ibp1s0: port mlx5_2/1 is DOWN (Disabled)',
    };
    const cells = [
      ...ends.filter((e) => e.host === 16).map((from) => cell(from, ends[9]!, false, { causes: [down] })),
      cell(ends[0]!, ends[20]!, false),
      cell(ends[0]!, ends[16]!, true),
    ];
    expect(causeGroups(cells).map((g) => formatCauseGroupText(g))).toEqual([
      '8 cells: 34/ibp1s0: port mlx5_2/1 is DOWN (Disabled)',
      "1 cell: nothing in the hosts' state explains it (each cell's detail says what its tool saw)",
    ]);
    // Nothing explained at all: the cells' own details say it all, no folding.
    expect(causeGroups([cell(ends[0]!, ends[20]!, false)])).toEqual([]);
  });

  it("a host's own text in a cause is shown safely (it may carry escape sequences)", () => {
    const route: CellCause = {
      kind: 'no-route',
      host: 16,
      iface: 'ibp0s0',
      text: '16/ibp0s0: no route (\u001b[2JRTNETLINK)',
    };
    expect(formatCauseGroupText(causeGroups([cell(ends[0]!, ends[9]!, false, { causes: [route] })])[0]!)).toBe(
      '1 cell: 16/ibp0s0: no route (RTNETLINK)',
    );
  });
});

describe('plain lines of a multi-rail verify', () => {
  it('say which matrix ran and why (when verify chose it), then each rail and the causes after the cells', () => {
    const lines: string[] = [];
    const plain = plainHandler(
      { write: (chunk: string) => void lines.push(...chunk.split('\n').filter(Boolean)), isTTY: false },
      { command: 'verify', stages: false },
    );
    const reason = 'the full matrix (633600 cells, up to 6336 a host) is more than 1024 cells a host: --full checks it';
    const rail = beforeDeploy.filter((c) => c.from.nic === c.to.nic);
    plain.onMatrix?.(rail, { mode: 'rail', reason });
    expect(lines[0]).toBe(`matrix: rail (NIC n to NIC n of every other host) — ${reason}`);
    plain.onRunEnd?.({
      results: hosts.map((h) => result(h, 'failed')),
      cells: rail,
      matrix: { mode: 'rail', reason },
      durationMs: 9000,
      interrupted: false,
    });
    const tail = lines.slice(lines.findIndex((l) => l.startsWith('by rail')));
    expect(tail).toEqual([
      'by rail (NIC n → NIC n): 1 6/6 · 2 0/6 · 3 0/6 · 4 0/6 · 5 0/6 · 6 0/6 · 7 0/6 · 8 0/6 passed',
      'failing cells by likely cause:',
      '  - 42 cells: no per-NIC routing on 21 NICs — ibfleet deploy --hosts 16,34,40',
      `matrix: rail (NIC n to NIC n of every other host) — ${reason}`,
      'summary: 3 failed · matrix 6/48 passed · 9.0s',
    ]);
  });

  it('the full matrix asked for or chosen without a reason says nothing of its mode', () => {
    expect(formatMatrixStartText({ mode: 'full' })).toBeUndefined();
    expect(formatMatrixStartText({ mode: 'ring' })).toBe('matrix: ring (each host to the next, every NIC pair)');
  });
});

describe('cells an unreachable host kept from running: one line, not one per cell', () => {
  const [a, b, c] = hosts.map((h) => [nic(h, 1, 'ib0'), nic(h, 2, 'ib1')]) as [
    ReturnType<typeof nic>[],
    ReturnType<typeof nic>[],
    ReturnType<typeof nic>[],
  ];
  const gone = (id: number): CellCause => ({
    kind: 'unreachable',
    host: id,
    text: `host ${id} unreachable at connect: connection refused by a${id}:22 (is sshd running?)`,
  });
  const notRun = (from: ReturnType<typeof nic>, to: ReturnType<typeof nic>, cause: CellCause): MatrixCell =>
    cell(from, to, null, { state: 'not-run', detail: `not run: ${cause.text}`, causes: [cause] });
  const cells: MatrixCell[] = [
    cell(a[0]!, b[0]!, true),
    ...a.flatMap((from) => c.map((to) => notRun(from, to, gone(40)))),
    ...c.flatMap((from) => a.map((to) => notRun(from, to, gone(40)))),
    cell(b[1]!, a[1]!, null, { state: 'not-run', detail: 'not run: interrupted' }),
  ];

  it('plain output: the cells of host 40 folded under its cause, the interrupted one listed as before, no FAIL, no reproduce', () => {
    const lines: string[] = [];
    const plain = plainHandler(
      { write: (chunk: string) => void lines.push(...chunk.split('\n').filter(Boolean)), isTTY: false },
      { command: 'verify', stages: false },
    );
    for (const x of cells) plain.onCell?.(x);
    plain.onRunEnd?.({
      results: [result(hosts[0]!, 'ok'), result(hosts[1]!, 'not-run'), result(hosts[2]!, 'unreachable')],
      cells,
      durationMs: 2000,
      interrupted: false,
    });
    expect(lines.filter((l) => !l.startsWith('ok ') && !l.startsWith('summary'))).toEqual([
      'not run ping 34/ib1 (172.16.34.2) → 16/ib1 (172.16.16.2): not run: interrupted',
      'not run: 8 cells — host 40 unreachable at connect: connection refused by a40:22 (is sshd running?)',
    ]);
  });
});
