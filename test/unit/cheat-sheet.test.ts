/**
 * The student's cheat sheet: the seeds' exact command forms for every NIC combination, both
 * directions, marked with what verify saw.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadInventory } from '../../src/inventory/load.js';
import { finishCell, matrixCells } from '../../src/plan/matrix.js';
import type { MatrixCell } from '../../src/vocabulary.js';
import { buildCheatSheet } from '../../src/plan/cheat-sheet.js';
import { formatCheatSheetText } from '../../src/ui/text/cheat-sheet.js';

const fleet = loadInventory(
  readFileSync(new URL('../../inventory/fleet.yaml', import.meta.url), 'utf8'),
  'inventory/fleet.yaml',
);
const [cpu, mem] = [fleet.hosts[0]!, fleet.hosts[1]!];
const details = new Map([
  [16, { os: 'Ubuntu 20.04.6 LTS', manager: 'networkmanager' as const }],
  [34, { os: 'Ubuntu 18.04.6 LTS', manager: 'netplan' as const }],
]);

/** verify's matrix for the pair: ping as `ping(cell)` says, rping skipped for want of RDMA devices. */
function cells(ping: (c: { from: { nic: number }; to: { nic: number } }) => boolean = () => true): MatrixCell[] {
  return [
    ...matrixCells([cpu, mem], 'full', ['ping']).map((c) =>
      finishCell(c, ping(c) ? { ok: true, detail: '3/3 replies, avg 0.05 ms' } : { ok: false, detail: '0/3 replies' }),
    ),
    ...matrixCells([cpu, mem], 'full', ['rping']).map((c) =>
      finishCell(c, { ok: null, detail: `skipped: no RDMA device on ${c.from.name} (/sys/class/infiniband is empty)` }),
    ),
  ];
}

describe('cheat sheet', () => {
  it('after a passing verify without RDMA devices: the pair, each NIC, every command, and why rping was not checked', () => {
    const text = formatCheatSheetText(buildCheatSheet({ owner: 'alice', cpu, mem, details, cells: cells() }));
    expect(text).toBe(`alice's machine pair
  cpu  16  cpuserver16  10.208.130.16  Ubuntu 20.04.6 LTS, networkmanager
       NIC 1  ibs5f0  172.16.16.1/16
       NIC 2  ibs5f1  172.16.16.2/16
  mem  34  memserver34  10.208.130.34  Ubuntu 18.04.6 LTS, netplan
       NIC 1  ib0     172.16.34.1/16
       NIC 2  ib1     172.16.34.2/16

Name the NIC every time (-I): each NIC now sends from its own address through its own routing table.

ping (all 8 checked just now)
  on cpuserver16:
    ping -c 3 -I ibs5f0 172.16.34.1
    ping -c 3 -I ibs5f0 172.16.34.2
    ping -c 3 -I ibs5f1 172.16.34.1
    ping -c 3 -I ibs5f1 172.16.34.2
  on memserver34:
    ping -c 3 -I ib0 172.16.16.1
    ping -c 3 -I ib0 172.16.16.2
    ping -c 3 -I ib1 172.16.16.1
    ping -c 3 -I ib1 172.16.16.2

rping (not checked here)
  start the server first; it serves one client and exits: start it again before the next client
  to memserver34 ib0 (172.16.34.1):
    on memserver34:  rping -s -a 172.16.34.1 -p 7174 -v
    on cpuserver16:  rping -c -I 172.16.16.1 -a 172.16.34.1 -p 7174 -C 10 -v
                     rping -c -I 172.16.16.2 -a 172.16.34.1 -p 7174 -C 10 -v
  to memserver34 ib1 (172.16.34.2):
    on memserver34:  rping -s -a 172.16.34.2 -p 7174 -v
    on cpuserver16:  rping -c -I 172.16.16.1 -a 172.16.34.2 -p 7174 -C 10 -v
                     rping -c -I 172.16.16.2 -a 172.16.34.2 -p 7174 -C 10 -v
  to cpuserver16 ibs5f0 (172.16.16.1):
    on cpuserver16:  rping -s -a 172.16.16.1 -p 7174 -v
    on memserver34:  rping -c -I 172.16.34.1 -a 172.16.16.1 -p 7174 -C 10 -v
                     rping -c -I 172.16.34.2 -a 172.16.16.1 -p 7174 -C 10 -v
  to cpuserver16 ibs5f1 (172.16.16.2):
    on cpuserver16:  rping -s -a 172.16.16.2 -p 7174 -v
    on memserver34:  rping -c -I 172.16.34.1 -a 172.16.16.2 -p 7174 -C 10 -v
                     rping -c -I 172.16.34.2 -a 172.16.16.2 -p 7174 -C 10 -v

note: rping could not be checked here: no RDMA device on cpuserver16 (/sys/class/infiniband is empty); no RDMA device on memserver34 (/sys/class/infiniband is empty). The commands are right for this pair; run them once the machines have their RDMA devices.
`);
  });

  it('the commands are the seeds’ forms: ping -c 3 -I <iface> <peer>, rping server -s -a, client -c -I <local> -a <peer> -C 10', () => {
    const sheet = buildCheatSheet({ owner: 'alice', cpu, mem });
    expect(sheet.ping).toHaveLength(8);
    expect(sheet.ping.filter((c) => c.on === 'cpuserver16').map((c) => c.command)).toEqual([
      'ping -c 3 -I ibs5f0 172.16.34.1',
      'ping -c 3 -I ibs5f0 172.16.34.2',
      'ping -c 3 -I ibs5f1 172.16.34.1',
      'ping -c 3 -I ibs5f1 172.16.34.2',
    ]);
    expect(sheet.rping).toHaveLength(4);
    expect(sheet.rping[1]).toMatchObject({
      on: 'memserver34',
      command: 'rping -s -a 172.16.34.2 -p 7174 -v',
      clients: [
        { on: 'cpuserver16', command: 'rping -c -I 172.16.16.1 -a 172.16.34.2 -p 7174 -C 10 -v' },
        { on: 'cpuserver16', command: 'rping -c -I 172.16.16.2 -a 172.16.34.2 -p 7174 -C 10 -v' },
      ],
    });
    expect(sheet.rping.map((s) => s.on)).toEqual(['memserver34', 'memserver34', 'cpuserver16', 'cpuserver16']);
    expect(sheet.ping.every((c) => c.checked === 'not-checked')).toBe(true);
    expect(sheet.notes).toEqual([
      'verify did not run: none of these commands was checked (ibfleet verify --pair alice checks them).',
    ]);
  });

  it('marks the commands that failed just now, with what verify saw', () => {
    const sheet = buildCheatSheet({
      owner: 'alice',
      cpu,
      mem,
      details,
      cells: cells((c) => c.from.nic === 1 && c.to.nic === 1),
    });
    const text = formatCheatSheetText(sheet);
    expect(text).toContain('ping (2 of 8 worked just now; the FAILED ones are marked)');
    expect(text).toContain('    ping -c 3 -I ibs5f0 172.16.34.1\n');
    expect(text).toContain('    ping -c 3 -I ibs5f1 172.16.34.2   # FAILED just now: 0/3 replies\n');
    expect(sheet.ping.find((c) => c.command === 'ping -c 3 -I ib1 172.16.16.2')).toMatchObject({
      checked: 'failed',
      detail: '0/3 replies',
    });
  });

  it('passed rping cells count as checked; a port can be chosen', () => {
    const all = matrixCells([cpu, mem], 'full', ['ping', 'rping']).map((c) =>
      finishCell(c, { ok: true, detail: c.method === 'ping' ? '3/3 replies' : '3/3 rdma pings' }),
    );
    const sheet = buildCheatSheet({ owner: 'alice', cpu, mem, cells: all, port: 9401 });
    const text = formatCheatSheetText(sheet);
    expect(text).toContain('rping (all 8 checked just now)');
    expect(text).toContain('rping -s -a 172.16.34.1 -p 9401 -v');
    expect(sheet.notes).toEqual([]);
  });
});

describe("cheat sheet: the pair's job settings beside the rping commands", () => {
  const settings = (gid: string) => [
    { name: 'NCCL_IB_HCA', value: '=mlx5_0:1,mlx5_1:1', library: 'nccl' as const },
    { name: 'NCCL_IB_GID_INDEX', value: gid, library: 'nccl' as const },
  ];
  const block = (hosts: number[], names: string[], gid: string) => ({
    hosts,
    names,
    settings: settings(gid),
    notes: [],
  });

  it('one block for both, as export lines to paste', () => {
    const sheet = buildCheatSheet({ owner: 'alice', cpu, mem, details, cells: cells() });
    const text = formatCheatSheetText({
      ...sheet,
      env: { fleet: { blocks: [block([16, 34], ['cpuserver16', 'memserver34'], '3')], reasons: [] }, refused: [] },
    });
    const at = text
      .split('\n')
      .indexOf('for jobs: NCCL, UCX and Open MPI settings (ibfleet env --hosts pair:alice prints them to source)');
    expect(text.split('\n').slice(at - 1, at + 4)).toEqual([
      '',
      'for jobs: NCCL, UCX and Open MPI settings (ibfleet env --hosts pair:alice prints them to source)',
      '  on both:',
      "    export NCCL_IB_HCA='=mlx5_0:1,mlx5_1:1'",
      "    export NCCL_IB_GID_INDEX='3'",
    ]);
  });

  it('a machine per block with the reason; a machine not ready says why', () => {
    const sheet = buildCheatSheet({ owner: 'alice', cpu, mem, details });
    const split = formatCheatSheetText({
      ...sheet,
      env: {
        fleet: {
          blocks: [block([16], ['cpuserver16'], '3'), block([34], ['memserver34'], '5')],
          reasons: ['NCCL_IB_GID_INDEX differs: 16 has 3, 34 has 5'],
        },
        refused: [],
      },
    });
    expect(split).toContain('  differ: NCCL_IB_GID_INDEX differs: 16 has 3, 34 has 5\n  on cpuserver16:\n');
    const refused = formatCheatSheetText({
      ...sheet,
      env: { fleet: { blocks: [], reasons: [] }, refused: [{ host: 34, cause: 'ib1 → mlx5_1/1 is DOWN' }] },
    });
    expect(refused).toContain('  host 34 is not ready for RDMA jobs: ib1 → mlx5_1/1 is DOWN\n');
  });
});
