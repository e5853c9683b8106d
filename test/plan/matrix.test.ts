import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadInventory } from '../../src/inventory/load.js';
import {
  chooseMatrixMode,
  finishCell,
  hostPairs,
  hostVerdict,
  matrixCells,
  matrixSize,
  parsePing,
  parseRping,
  rpingCellVerdict,
} from '../../src/plan/matrix.js';
import type { CellCause, MatrixCell } from '../../src/vocabulary.js';
import { reproduceCommand } from '../../src/render/verify-commands.js';
import { CellStream, parseCapabilities, parseCellOutput, rpingUnavailable } from '../../src/plan/verify-output.js';
import { renderPingScript } from '../../src/render/verify-scripts.js';

const sample = (name: string) => readFileSync(new URL(`../fixtures/tool-output/${name}`, import.meta.url), 'utf8');
const fleet = loadInventory(
  'fabric: { subnet: 172.16.0.0/16 }\nhosts:\n  16: { name: cpuserver16, address: a16, interfaces: [ibs5f0, ibs5f1] }\n  34: { name: memserver34, address: a34 }\n  40: { name: node40, address: a40 }\n',
  't.yaml',
);

describe('which cells the matrix has', () => {
  it('full: every ordered pair of hosts, every NIC to every NIC', () => {
    const cells = matrixCells(fleet.hosts.slice(0, 2), 'full', ['ping']);
    expect(cells.map((c) => `${c.from.host}/${c.from.iface}>${c.to.host}/${c.to.iface}`)).toEqual([
      '16/ibs5f0>34/ib0',
      '16/ibs5f0>34/ib1',
      '16/ibs5f1>34/ib0',
      '16/ibs5f1>34/ib1',
      '34/ib0>16/ibs5f0',
      '34/ib0>16/ibs5f1',
      '34/ib1>16/ibs5f0',
      '34/ib1>16/ibs5f1',
    ]);
    expect(matrixCells(fleet.hosts, 'full', ['ping', 'rping'])).toHaveLength(3 * 2 * 4 * 2);
  });

  it('ring: each host to the next, wrapping around', () => {
    expect(hostPairs(fleet.hosts, 'ring').map(([a, b]) => `${a.id}>${b.id}`)).toEqual(['16>34', '34>40', '40>16']);
    expect(matrixCells(fleet.hosts, 'ring', ['ping'])).toHaveLength(3 * 4);
    expect(hostPairs(fleet.hosts.slice(0, 1), 'full')).toEqual([]);
  });

  it('rail: NIC n of every host to NIC n of every other host; a NIC only one host has is on no rail with the other', () => {
    const mixed = loadInventory(
      'fabric: { subnet: 172.16.0.0/16 }\nhosts:\n  16: { name: gpu16, nics: 4 }\n  17: { name: gpu17, nics: 4 }\n  34: { name: mem34 }\n',
      't.yaml',
    );
    const cells = matrixCells(mixed.hosts, 'rail', ['ping']);
    expect(cells.filter((c) => c.from.host === 16).map((c) => `${c.from.nic}>${c.to.host}/${c.to.nic}`)).toEqual([
      '1>17/1',
      '2>17/2',
      '3>17/3',
      '4>17/4',
      '1>34/1',
      '2>34/2',
    ]);
    expect(cells.every((c) => c.from.nic === c.to.nic)).toBe(true);
    expect(cells).toHaveLength(4 + 2 + 4 + 2 + 2 + 2);
    expect(matrixSize(mixed.hosts, 'rail')).toEqual({ cells: 16, perHost: 6 });
    expect(matrixSize(mixed.hosts, 'full')).toEqual({
      cells: matrixCells(mixed.hosts, 'full', ['ping']).length,
      perHost: 4 * 4 + 4 * 2,
    });
  });

  it('says how to reproduce a cell by hand, where to run it', () => {
    const [ping] = matrixCells(fleet.hosts.slice(0, 2), 'full', ['ping']);
    expect(reproduceCommand(ping!)).toBe('on cpuserver16: ping -n -c 3 -i 0.2 -W 1 -I 172.16.16.1 172.16.34.1');
    const [rping] = matrixCells(fleet.hosts.slice(0, 2), 'full', ['rping']);
    expect(reproduceCommand(rping!, 7175)).toBe(
      'on memserver34: rping -s -a 172.16.34.1 -p 7175 -C 3 -v  then on cpuserver16: rping -c -I 172.16.16.1 -a 172.16.34.1 -p 7175 -C 3 -v',
    );
  });
});

describe('the matrix verify checks when given no mode: the most thorough one within 8 192 cells a host', () => {
  const fleetOf = (hosts: number, nics: number) =>
    loadInventory(
      `fabric: { subnet: 172.16.0.0/16, nics: ${nics} }\nhosts:\n${Array.from({ length: hosts }, (_, i) => `  ${i + 1}: { name: h${i + 1} }`).join('\n')}\n`,
      't.yaml',
    ).hosts;
  it.each([
    { hosts: 2, nics: 2, mode: 'full' },
    { hosts: 20, nics: 2, mode: 'full' },
    { hosts: 254, nics: 2, mode: 'full' },
    { hosts: 3, nics: 8, mode: 'full' },
    { hosts: 17, nics: 8, mode: 'full' },
    { hosts: 18, nics: 8, mode: 'full' },
    { hosts: 100, nics: 8, mode: 'full' },
    { hosts: 129, nics: 8, mode: 'full' },
    { hosts: 130, nics: 8, mode: 'rail' },
    { hosts: 254, nics: 8, mode: 'rail' },
    { hosts: 254, nics: 16, mode: 'rail' },
  ])('$hosts hosts × $nics NICs: $mode', ({ hosts, nics, mode }) => {
    expect(chooseMatrixMode(fleetOf(hosts, nics), undefined).mode).toBe(mode);
  });

  it('says what it left out and how to get it; a mode asked for is taken as it is', () => {
    expect(chooseMatrixMode(fleetOf(254, 8), undefined).reason).toBe(
      'the full matrix (4112768 cells, up to 16192 a host) is more than 8192 cells a host: --full checks it',
    );
    // No fleet of 254 hosts and 16 NICs outgrows the rails; a smaller budget shows the ring's reason.
    expect(chooseMatrixMode(fleetOf(254, 16), undefined, 1024)).toEqual({
      mode: 'ring',
      reason:
        'the full matrix (16451072 cells, up to 64768 a host) and the rails (1028192 cells, up to 4048 a host) are more than 1024 cells a host: --full or --rail checks them',
    });
    expect(chooseMatrixMode(fleetOf(100, 8), 'full')).toEqual({ mode: 'full' });
    expect(chooseMatrixMode(fleetOf(3, 8), undefined)).toEqual({ mode: 'full' });
  });
});

describe('reading ping and rping output', () => {
  it.each([
    ['all replies', 'ping-ok.txt', 0, { ok: true, detail: '3/3 replies, avg 0.070 ms' }],
    ['no reply (the seeds’ NIC 2 failure)', 'ping-no-reply.txt', 1, { ok: false, detail: '0/3 replies' }],
    ['no such interface', 'ping-no-device.txt', 2, { ok: false, detail: 'ping: SO_BINDTODEVICE ib7: No such device' }],
  ])('ping: %s', (_, file, code, verdict) => {
    expect(parsePing(sample(file), code)).toEqual(verdict);
  });

  it('ping: partial loss fails the cell and says how many were lost', () => {
    const text = sample('ping-ok.txt').replace('3 received', '2 received');
    expect(parsePing(text, 0)).toEqual({ ok: false, detail: '2/3 replies, avg 0.070 ms (1 lost)' });
  });

  it.each([
    ['three pings', 'rping-ok.txt', 0, { ok: true, detail: '3/3 rdma pings' }],
    ['REJECTED, as in the seeds', 'rping-rejected.txt', 255, { ok: false, detail: 'REJECTED (error 8)' }],
    ['address resolution error', 'rping-addr-error.txt', 255, { ok: false, detail: 'ADDR_ERROR (error -110)' }],
    [
      'killed by timeout after one ping',
      'rping-timeout.txt',
      124,
      { ok: false, detail: 'timed out after 1 of 3 pings' },
    ],
    ['no RDMA device', 'rping-no-device.txt', 19, { ok: false, detail: 'no RDMA device' }],
  ])('rping: %s', (_, file, code, verdict) => {
    expect(parseRping(sample(file), code)).toEqual(verdict);
  });

  it('capabilities: RDMA devices and rping, and why a host cannot do rping', () => {
    const none = parseCapabilities('rdma-devices=\nrping=/usr/bin/rping\nping=/usr/bin/ping\n');
    expect(rpingUnavailable('memserver34', none)).toBe(
      'no RDMA device on memserver34 (/sys/class/infiniband is empty)',
    );
    const noTool = parseCapabilities('rdma-devices=mlx5_0 mlx5_1 \nrping=\nping=/bin/ping\n');
    expect(noTool.rdmaDevices).toEqual(['mlx5_0', 'mlx5_1']);
    expect(rpingUnavailable('memserver34', noTool)).toMatch(
      /rping is not installed on memserver34 \(apt install rdmacm-utils\)/,
    );
  });
});

describe('cell output framing', () => {
  it('runs cells in batches of parallel jobs and frames each result', () => {
    const cells = matrixCells(fleet.hosts, 'full', ['ping'])
      .filter((c) => c.from.host === 16)
      .map((cell, id) => ({ id, cell }));
    const script = renderPingScript(cells);
    expect(script.match(/^job \d+ ping /gm)).toHaveLength(8);
    expect(script).toContain('job 0 ping -n -c 3 -i 0.2 -W 1 -I 172.16.16.1 172.16.34.1 &');
  });

  it('streams results as each cell ends, whatever the output looks like', () => {
    const seen: number[] = [];
    const stream = new CellStream((c) => seen.push(c.id));
    const text = `@@cell 3 0\n${sample('ping-ok.txt')}\n@@cell-end\n@@cell 7 1\nno newline at end@@cell-end\n@@cell-end\n`;
    for (const line of text.split('\n')) stream.push(line);
    expect(seen).toEqual([3, 7]);
    expect(parseCellOutput(text).get(3)).toMatchObject({ exitCode: 0 });
  });
});

describe("an rping cell names the server's own failure, not its debug chatter", () => {
  const rejected = { output: 'cma event RDMA_CM_EVENT_REJECTED, error 8\n', exitCode: 255 };
  it.each([
    ['bound to ib1 (mlx5_1/1)\nrdma_listen on 172.16.34.2:7175\n', 'REJECTED (error 8)'],
    ['rdma_bind_addr: Address already in use\n', 'REJECTED (error 8); server: rdma_bind_addr: Address already in use'],
    [
      'rdma_bind_addr successful\nrdma_bind_addr: Cannot assign requested address\n',
      'REJECTED (error 8); server: rdma_bind_addr: Cannot assign requested address',
    ],
  ])('server said %j → %s', (server, detail) => {
    expect(rpingCellVerdict(rejected, server)).toEqual({ ok: false, detail });
  });
});

describe('a cell is charged to the host that caused it', () => {
  const specs = matrixCells(fleet.hosts, 'full', ['ping']);
  const port34: CellCause = {
    kind: 'port-not-active',
    host: 34,
    iface: 'ib1',
    text: '34/ib1: port mlx5_1/1 is DOWN (Disabled): the port is disabled: enable it (ibportstate … enable, or on the switch)',
  };
  const gone40: CellCause = {
    kind: 'unreachable',
    host: 40,
    text: 'host 40 unreachable at connect: connection refused by a40:22 (is sshd running?)',
  };
  /** The matrix with `judge` deciding each cell: passed unless it says otherwise. */
  const matrix = (
    judge: (from: string, to: string) => { state: 'failed' | 'not-run'; causes?: CellCause[] } | undefined,
  ): MatrixCell[] =>
    specs.map((spec) => {
      const j = judge(`${spec.from.host}/${spec.from.iface}`, `${spec.to.host}/${spec.to.iface}`);
      if (!j) return finishCell(spec, { ok: true, detail: '3/3 replies' });
      const cell =
        j.state === 'failed'
          ? finishCell(spec, { ok: false, detail: '0/3 replies' })
          : finishCell(spec, { ok: null, detail: 'not run', notRun: true });
      return j.causes ? { ...cell, causes: j.causes } : cell;
    });
  const verdicts = (cells: MatrixCell[]) =>
    fleet.hosts.map((h) => [h.id, hostVerdict(h, cells).status, hostVerdict(h, cells).reasons.join('')]);

  it.each([
    {
      case: 'a port down at 34: only 34 fails, its reason says what was found there and the fix',
      cells: matrix((from, to) =>
        from === '34/ib1' || to === '34/ib1' ? { state: 'failed', causes: [port34] } : undefined,
      ),
      expected: [
        [16, 'ok', ''],
        [34, 'failed', `8 of 16 cells through memserver34 failed: ${port34.text}`],
        [40, 'ok', ''],
      ],
    },
    {
      case: 'host 40 unreachable: its cells are not run, and the others are ok, not "interrupted"',
      cells: matrix((from, to) =>
        from.startsWith('40/') || to.startsWith('40/') ? { state: 'not-run', causes: [gone40] } : undefined,
      ),
      expected: [
        [16, 'ok', ''],
        [34, 'ok', ''],
        [40, 'ok', ''],
      ],
    },
    {
      case: 'a failure nothing explains: charged to its source, which ran the tool that saw it',
      cells: matrix((from, to) => (from === '16/ibs5f1' && to === '34/ib0' ? { state: 'failed' } : undefined)),
      expected: [
        [16, 'failed', '1 of 8 cells from cpuserver16 failed'],
        [34, 'ok', ''],
        [40, 'ok', ''],
      ],
    },
    {
      case: "interrupted: the cells not run without a cause are the host's own",
      cells: matrix((from) => (from.startsWith('16/') ? { state: 'not-run' } : undefined)),
      expected: [
        [16, 'not-run', 'interrupted: 8 of 8 cells from cpuserver16 not run'],
        [34, 'ok', ''],
        [40, 'ok', ''],
      ],
    },
  ])('$case', ({ cells, expected }) => {
    expect(verdicts(cells)).toEqual(expected);
  });
});
