import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadInventory } from '../../src/inventory/load.js';
import { hostPairs, matrixCells, parsePing, parseRping, rpingCellVerdict } from '../../src/plan/matrix.js';
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

  it('says how to reproduce a cell by hand, where to run it', () => {
    const [ping] = matrixCells(fleet.hosts.slice(0, 2), 'full', ['ping']);
    expect(reproduceCommand(ping!)).toBe('on cpuserver16: ping -n -c 3 -i 0.2 -W 1 -I ibs5f0 172.16.34.1');
    const [rping] = matrixCells(fleet.hosts.slice(0, 2), 'full', ['rping']);
    expect(reproduceCommand(rping!, 7175)).toBe('on memserver34: rping -s -a 172.16.34.1 -p 7175 -C 3 -v  then on cpuserver16: rping -c -I 172.16.16.1 -a 172.16.34.1 -p 7175 -C 3 -v');
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
    ['killed by timeout after one ping', 'rping-timeout.txt', 124, { ok: false, detail: 'timed out after 1 of 3 pings' }],
    ['no RDMA device', 'rping-no-device.txt', 19, { ok: false, detail: 'no RDMA device' }],
  ])('rping: %s', (_, file, code, verdict) => {
    expect(parseRping(sample(file), code)).toEqual(verdict);
  });

  it('capabilities: RDMA devices and rping, and why a host cannot do rping', () => {
    const none = parseCapabilities('rdma-devices=\nrping=/usr/bin/rping\nping=/usr/bin/ping\n');
    expect(rpingUnavailable('memserver34', none)).toBe('no RDMA device on memserver34 (/sys/class/infiniband is empty)');
    const noTool = parseCapabilities('rdma-devices=mlx5_0 mlx5_1 \nrping=\nping=/bin/ping\n');
    expect(noTool.rdmaDevices).toEqual(['mlx5_0', 'mlx5_1']);
    expect(rpingUnavailable('memserver34', noTool)).toMatch(/rping is not installed on memserver34 \(apt install rdmacm-utils\)/);
  });
});

describe('cell output framing', () => {
  it('runs cells in batches of parallel jobs and frames each result', () => {
    const cells = matrixCells(fleet.hosts, 'full', ['ping'])
      .filter((c) => c.from.host === 16)
      .map((cell, id) => ({ id, cell }));
    const script = renderPingScript(cells);
    expect(script.match(/^job \d+ ping /gm)).toHaveLength(8);
    expect(script).toContain('job 0 ping -n -c 3 -i 0.2 -W 1 -I ibs5f0 172.16.34.1 &');
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

describe('an rping cell names the server\'s own failure, not its debug chatter', () => {
  const rejected = { output: 'cma event RDMA_CM_EVENT_REJECTED, error 8\n', exitCode: 255 };
  it.each([
    ['bound to ib1 (mlx5_1/1)\nrdma_listen on 172.16.34.2:7175\n', 'REJECTED (error 8)'],
    ['rdma_bind_addr: Address already in use\n', 'REJECTED (error 8); server: rdma_bind_addr: Address already in use'],
    ['rdma_bind_addr successful\nrdma_bind_addr: Cannot assign requested address\n', 'REJECTED (error 8); server: rdma_bind_addr: Cannot assign requested address'],
  ])('server said %j → %s', (server, detail) => {
    expect(rpingCellVerdict(rejected, server)).toEqual({ ok: false, detail });
  });
});
