import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadInventory } from '../../src/inventory/load.js';
import type { MatrixCell, RunEvents } from '../../src/vocabulary.js';
import { ConnectError } from '../../src/runner/transport.js';
import type { RpingMode } from '../../src/plan/matrix.js';
import { runVerify } from '../../src/runner/verify.js';
import { fakeTransport, ok, type FakeHost } from '../helpers/fake-transport.js';

const sample = (name: string) => readFileSync(new URL(`../fixtures/tool-output/${name}`, import.meta.url), 'utf8');
const fleet = loadInventory(
  'fabric: { subnet: 172.16.0.0/16 }\nhosts:\n  16: { name: cpuserver16, address: a16, interfaces: [ibs5f0, ibs5f1] }\n  34: { name: memserver34, address: a34 }\n',
  't.yaml',
);

/**
 * A host that answers verify's scripts: `works(from, to)` decides each cell's outcome. Its rping
 * servers say their ports and READY_MARK, then wait for the stop word before they print their
 * cells, as the server script does; the client script ends with CLIENTS_DONE_MARK.
 */
function host(opts: { rdma: boolean; works: (fromIp: string, toIp: string) => boolean; probe?: string }): FakeHost {
  const frame = (id: string, code: number, text: string) => `@@cell ${id} ${code}\n${text}\n@@cell-end\n`;
  let listening: string[] = [];
  return {
    respond: (script) => {
      if (script.includes('rdma-devices'))
        return ok(
          `rdma-devices=${opts.rdma ? 'mlx5_0' : ''}\nrping=/usr/bin/rping\nping=/usr/bin/ping\n${opts.probe ?? ''}`,
        );
      if (script.includes('rping -s')) {
        listening = [
          ...new Set(
            [...script.matchAll(/rping -s -a \S+ -p "\$port_\d+" -C 3 -v -d >"\$dir\/(\d+)"/g)].map((m) => m[1]!),
          ),
        ];
        const ports = [...script.matchAll(/^port_(\d+)=(\d+);/gm)]
          .map((m) => `@@rping-port ${m[1]} ${m[2]}\n`)
          .join('');
        return ok(`${ports}@@rping-ready\n`);
      }
      if (script === 'stop\n') {
        const stopped = listening;
        listening = [];
        return ok(stopped.map((id) => frame(id, 0, sample('rping-server-ok.txt'))).join(''));
      }
      const clients = script.includes('rping -c') ? '@@rping-clients-done\n' : '';
      const jobs = [
        ...script.matchAll(/^job (\d+) (.*) &$/gm),
        ...[...script.matchAll(/^timeout \d+ (rping -c .*) >"\$dir\/(\d+)" 2>&1 & pid_\d+=\$!$/gm)].map((m) => [
          m[0],
          m[2],
          m[1],
        ]),
      ].map((m) => ({ id: m[1]!, command: m[2]! }));
      return ok(
        jobs
          .map(({ id, command }) => {
            const rping = /rping -c -I (\S+) -a (\S+)/.exec(command);
            if (rping)
              return opts.works(rping[1]!, rping[2]!)
                ? frame(id, 0, sample('rping-ok.txt'))
                : frame(id, 255, sample('rping-rejected.txt'));
            const ping = /-I (\S+) (\S+)$/.exec(command)!;
            const fromIp = ping[1]!.endsWith('.2') ? '.2' : '.1';
            return opts.works(fromIp, ping[2]!)
              ? frame(id, 0, sample('ping-ok.txt'))
              : frame(id, 1, sample('ping-no-reply.txt'));
          })
          .join('') + clients,
      );
    },
  };
}

async function verify(hosts: Record<number, FakeHost>, rping: RpingMode, timeoutMs = 5000) {
  const transport = fakeTransport(hosts);
  const cells: MatrixCell[] = [];
  let announced = 0;
  const events: RunEvents = { onCell: (c) => cells.push(c), onMatrix: (m) => (announced = m.length) };
  const out = await runVerify({
    fleet,
    hosts: fleet.hosts,
    mode: 'full',
    rping,
    transport,
    concurrency: 4,
    timeoutMs,
    interrupt: new AbortController().signal,
    events,
  });
  return { ...out, streamed: cells, announced, transport };
}

const allWork = () => true;
/** The seeds' failure: anything touching NIC 2 fails. */
const nic1Only = (fromIp: string, toIp: string) => !fromIp.endsWith('.2') && !toIp.endsWith('.2');

describe('verify (fake transport)', () => {
  it('ping matrix: every cell streamed once, one connection and two channels per host', async () => {
    const { cells, streamed, announced, results } = await verify(
      { 16: host({ rdma: false, works: allWork }), 34: host({ rdma: false, works: allWork }) },
      'auto',
    );
    expect(announced).toBe(8);
    expect(streamed).toHaveLength(8);
    expect(cells.every((c) => c.ok === true && c.method === 'ping')).toBe(true);
    expect(results.map((r) => [r.status, r.connections, r.channels])).toEqual([
      ['ok', 1, 2],
      ['ok', 1, 2],
    ]);
  });

  it('the seeds’ broken state: NIC 2 cells fail with a reproduce command, the host is failed', async () => {
    const { cells, results } = await verify(
      { 16: host({ rdma: false, works: nic1Only }), 34: host({ rdma: false, works: nic1Only }) },
      'off',
    );
    expect(cells.filter((c) => c.ok).map((c) => `${c.from.iface}>${c.to.iface}`)).toEqual(['ibs5f0>ib0', 'ib0>ibs5f0']);
    const failed = cells.find((c) => c.from.iface === 'ibs5f1' && c.to.iface === 'ib1')!;
    expect(failed).toMatchObject({
      ok: false,
      detail: '0/3 replies',
      reproduce: 'on cpuserver16: ping -n -c 3 -i 0.2 -W 1 -I 172.16.16.2 172.16.34.2',
    });
    expect(results[0]).toMatchObject({ status: 'failed', reasons: ['3 of 4 cells from cpuserver16 failed'] });
  });

  it('a failed cell says why when the probe can tell: the port down at the destination, the routing missing at the source', async () => {
    const links = (a: string, b: string) =>
      `@@ibfleet ip\n2: ${a}: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 2044\n3: ${b}: <BROADCAST,MULTICAST,UP> mtu 2044\n`;
    const port = (dev: string, state: string) => `port ${dev} 1 ${state}|100 Gb/sec (4X EDR)|InfiniBand|0x3|0x1`;
    const rdma = (a: string, b: string, second: string) =>
      `@@ibfleet rdma\ndevices mlx5_0 mlx5_1\nnic ${a}|datagram|0|0x0|mlx5_0\nnic ${b}|datagram|0|0x0|mlx5_1\n${port('mlx5_0', '4: ACTIVE|5: LinkUp')}\n${port('mlx5_1', second)}\n`;
    const probe = (a: string, b: string, second: string) =>
      `@@ibfleet probe 3\n${links(a, b)}${rdma(a, b, second)}@@ibfleet end\n`;
    const { cells } = await verify(
      {
        16: host({ rdma: true, works: nic1Only, probe: probe('ibs5f0', 'ibs5f1', '4: ACTIVE|5: LinkUp') }),
        34: host({ rdma: true, works: nic1Only, probe: probe('ib0', 'ib1', '1: DOWN|2: Polling') }),
      },
      'off',
    );
    const into = cells.find((c) => c.from.iface === 'ibs5f0' && c.to.iface === 'ib1')!;
    expect(into.ok).toBe(false);
    expect(into.detail).toContain(
      '0/3 replies — likely: 16/ibs5f0: no rule from 172.16.16.1, table 941 empty (per-NIC routing not deployed: ibfleet deploy -i t.yaml --hosts 16)',
    );
    expect(into.detail).toContain('34/ib1: port mlx5_1/1 is DOWN (Polling)');
    // The same causes, typed, for the displays to fold cells by.
    expect(into.causes?.map((c) => `${c.kind} ${c.host}/${c.iface}`)).toEqual([
      'routing-missing 16/ibs5f0',
      'port-not-active 34/ib1',
    ]);
  });

  it('--rail: NIC n to NIC n only, announced with its mode (and the reason verify chose it) and returned with the cells', async () => {
    const transport = fakeTransport({
      16: host({ rdma: false, works: nic1Only }),
      34: host({ rdma: false, works: nic1Only }),
    });
    let announced: { cells: number; start: unknown } | undefined;
    const out = await runVerify({
      fleet,
      hosts: fleet.hosts,
      mode: 'rail',
      modeReason: 'because',
      rping: 'off',
      transport,
      concurrency: 4,
      timeoutMs: 5000,
      interrupt: new AbortController().signal,
      events: { onMatrix: (cells, start) => (announced = { cells: cells.length, start }) },
    });
    expect(announced).toEqual({ cells: 4, start: { mode: 'rail', reason: 'because' } });
    expect(out.matrix).toEqual({ mode: 'rail', reason: 'because' });
    expect(out.cells.map((c) => `${c.from.host}/${c.from.nic}>${c.to.host}/${c.to.nic} ${c.state}`)).toEqual([
      '16/1>34/1 passed',
      '16/2>34/2 failed',
      '34/1>16/1 passed',
      '34/2>16/2 failed',
    ]);
  });

  it("a cell cut off by a host's time limit says so: the host finished none of its cells for --timeout", async () => {
    // The clients outlive the host's deadline: the time limit closes their channel before they answer.
    const hangingClients = (fake: FakeHost): FakeHost => ({
      respond: (script, signal) =>
        script.includes('rping -c')
          ? new Promise((_, reject) =>
              signal.addEventListener('abort', () => reject(new Error('the channel was closed'))),
            )
          : fake.respond(script, signal),
    });
    const { cells } = await verify(
      {
        16: hangingClients(host({ rdma: true, works: allWork })),
        34: hangingClients(host({ rdma: true, works: allWork })),
      },
      'on',
      400,
    );
    const rping = cells.filter((c) => c.method === 'rping');
    expect(rping).toHaveLength(8);
    for (const c of rping)
      expect(c.detail).toMatch(
        /^no client result — likely: host (16|34)'s time limit ran out: it finished none of its cells for 0.4 s \(--timeout\)$/,
      );
    expect(cells.filter((c) => c.method === 'ping').every((c) => c.ok)).toBe(true);
  });

  it('a host that keeps finishing cells runs past --timeout: the limit is renewed by each finished part, so a large matrix is not cut off', async () => {
    // Every script takes 250 ms, and ends early as a real channel does if its signal aborts: each
    // part finishes within the 400 ms limit, the whole (probe, pings, rping servers and clients)
    // takes well over it.
    const slow = (fake: FakeHost): FakeHost => ({
      respond: async (script, signal) => {
        await new Promise<void>((resolve, reject) => {
          if (signal?.aborted) return reject(new Error('the channel was closed: time limit'));
          const t = setTimeout(resolve, 250);
          signal?.addEventListener(
            'abort',
            () => (clearTimeout(t), reject(new Error('the channel was closed: time limit'))),
            { once: true },
          );
        });
        return fake.respond(script, signal);
      },
    });
    const { cells, results } = await verify(
      { 16: slow(host({ rdma: true, works: allWork })), 34: slow(host({ rdma: true, works: allWork })) },
      'on',
      400,
    );
    expect(cells).toHaveLength(16);
    expect(cells.filter((c) => !c.ok).map((c) => c.detail)).toEqual([]);
    expect(results.map((r) => r.status)).toEqual(['ok', 'ok']);
    expect(Math.max(...results.map((r) => r.durationMs ?? 0))).toBeGreaterThan(400);
  });

  it('a host that stops answering mid-matrix is cut off within --timeout and blamed alone: hosts waiting on it are not', async () => {
    const fleet3 = loadInventory(
      'fabric: { subnet: 172.16.0.0/16 }\nhosts:\n  16: { name: cpuserver16, address: a16 }\n  34: { name: memserver34, address: a34 }\n  40: { name: node40, address: a40 }\n',
      't.yaml',
    );
    const after = (ms: number, signal?: AbortSignal) =>
      new Promise<void>((resolve, reject) => {
        if (signal?.aborted) return reject(new Error('the channel was closed'));
        const t = setTimeout(resolve, ms);
        signal?.addEventListener('abort', () => (clearTimeout(t), reject(new Error('the channel was closed'))), {
          once: true,
        });
      });
    // Each script takes 150 ms (the whole run, well over the 400 ms limit); host 40 answers its probe, then nothing.
    const working = (fake: FakeHost): FakeHost => ({
      respond: async (script, signal) => (await after(150, signal), fake.respond(script, signal)),
    });
    let probed = false;
    const lost = host({ rdma: true, works: allWork });
    const silent: FakeHost = {
      respond: async (script, signal) =>
        probed
          ? (await after(60_000, signal), lost.respond(script, signal))
          : ((probed = true), lost.respond(script, signal)),
    };
    const transport = fakeTransport({
      16: working(host({ rdma: true, works: allWork })),
      34: working(host({ rdma: true, works: allWork })),
      40: silent,
    });
    const cells: MatrixCell[] = [];
    const started = Date.now();
    const out = await runVerify({
      fleet: fleet3,
      hosts: fleet3.hosts,
      mode: 'full',
      rping: 'on',
      transport,
      concurrency: 4,
      timeoutMs: 400,
      interrupt: new AbortController().signal,
      events: { onCell: (c) => cells.push(c) },
    });
    expect(Date.now() - started).toBeLessThan(30_000);
    const without40 = out.cells.filter((c) => c.from.host !== 40 && c.to.host !== 40);
    expect(without40).toHaveLength(16);
    expect(without40.filter((c) => !c.ok).map((c) => c.detail)).toEqual([]);
    // What host 40 had to run (its pings, its rping servers and clients) fails; a ping into it ran on the other host.
    const with40 = out.cells.filter((c) => c.from.host === 40 || (c.to.host === 40 && c.method === 'rping'));
    expect(with40).toHaveLength(24);
    for (const c of with40) expect(c.ok, `${c.from.host}→${c.to.host} ${c.method}`).toBe(false);
    expect(out.cells.filter((c) => /host (16|34)'s time limit/.test(c.detail))).toEqual([]);
    expect(
      with40.filter((c) =>
        c.detail.includes("host 40's time limit ran out: it finished none of its cells for 0.4 s (--timeout)"),
      ).length,
    ).toBeGreaterThan(0);
    // Each failed cell is charged to the host its cause names: 40's time limit, not the hosts that waited on it.
    expect(out.results.map((r) => [r.host.id, r.status])).toEqual([
      [16, 'ok'],
      [34, 'ok'],
      [40, 'failed'],
    ]);
  });

  it('rping where both ends have RDMA: servers on the destination on distinct ports, REJECTED reported', async () => {
    const { cells, transport } = await verify(
      { 16: host({ rdma: true, works: nic1Only }), 34: host({ rdma: true, works: nic1Only }) },
      'auto',
    );
    const rping = cells.filter((c) => c.method === 'rping');
    expect(rping).toHaveLength(8);
    expect(rping.find((c) => c.from.ip === '172.16.16.1' && c.to.ip === '172.16.34.1')).toMatchObject({
      ok: true,
      detail: '3/3 rdma pings',
    });
    expect(rping.find((c) => c.from.ip === '172.16.16.2' && c.to.ip === '172.16.34.2')).toMatchObject({
      ok: false,
      detail: 'REJECTED (error 8)',
    });
    const serverScript = transport.log.scripts.get(34)!.find((s) => s.includes('rping -s'))!;
    const ports = [...serverScript.matchAll(/^port_\d+=(\d+);/gm)].map((m) => Number(m[1]));
    expect(ports).toHaveLength(4);
    expect(new Set(ports).size).toBe(ports.length);
    expect(serverScript).toMatch(
      /^port_\d+=\d+; timeout 20 stdbuf -oL rping -s -a 172\.16\.34\.\d -p "\$port_\d+" -C 3 -v -d/m,
    );
  });

  it("the servers wait as long as the host's time limit (a late client is no REJECTED) and are told to stop once the clients are done", async () => {
    const { cells, transport } = await verify(
      { 16: host({ rdma: true, works: allWork }), 34: host({ rdma: true, works: allWork }) },
      'on',
      90_000,
    );
    expect(cells.filter((c) => c.method === 'rping').map((c) => c.detail)).toEqual(Array(8).fill('3/3 rdma pings'));
    const scripts = transport.log.scripts.get(34)!;
    expect(scripts.find((s) => s.includes('rping -s'))).toMatch(/^port_\d+=\d+; timeout 90 stdbuf -oL rping -s /m);
    expect(scripts).toContain('stop\n');
  });

  it('rping is skipped, never passed, where a host has no RDMA device', async () => {
    const { cells } = await verify(
      { 16: host({ rdma: true, works: allWork }), 34: host({ rdma: false, works: allWork }) },
      'on',
    );
    const rping = cells.filter((c) => c.method === 'rping');
    expect(rping).toHaveLength(8);
    expect(
      rping.every(
        (c) => c.ok === null && c.detail === 'skipped: no RDMA device on memserver34 (/sys/class/infiniband is empty)',
      ),
    ).toBe(true);
    const auto = await verify(
      { 16: host({ rdma: true, works: allWork }), 34: host({ rdma: false, works: allWork }) },
      'auto',
    );
    expect(auto.cells.some((c) => c.method === 'rping')).toBe(false);
  });

  it('an unreachable host: the cells it is part of are not run, charged to it alone; the other host is ok', async () => {
    const { cells, results } = await verify(
      {
        16: host({ rdma: false, works: allWork }),
        34: {
          connectError: new ConnectError('connection refused by a34:22 (is sshd running?)', true),
          respond: () => ok(''),
        },
      },
      'off',
    );
    const because = 'host 34 unreachable at connect: connection refused by a34:22 (is sshd running?)';
    expect(cells.length).toBeGreaterThan(0);
    for (const c of cells)
      expect(c).toMatchObject({
        ok: null,
        state: 'not-run',
        detail: `not run: ${because}`,
        causes: [{ kind: 'unreachable', host: 34, text: because }],
      });
    expect(results.map((r) => [r.host.id, r.status])).toEqual([
      [16, 'ok'],
      [34, 'unreachable'],
    ]);
  });

  it("an unreachable host's rping cells are not run too, as its ping cells are: the matrix keeps its size (rping where an end is known to lack it is left out)", async () => {
    const down: FakeHost = {
      connectError: new ConnectError('connection refused by a34:22 (is sshd running?)', true),
      respond: () => ok(''),
    };
    const { cells } = await verify({ 16: host({ rdma: true, works: allWork }), 34: down }, 'auto');
    expect(cells.map((c) => [c.method, c.state])).toEqual([
      ...Array(8).fill(['ping', 'not-run']),
      ...Array(8).fill(['rping', 'not-run']),
    ]);
    // 16 cannot rping (no RDMA device): whatever 34 has, no rping cell between them could run.
    const without = await verify({ 16: host({ rdma: false, works: allWork }), 34: down }, 'auto');
    expect(without.cells.filter((c) => c.method === 'rping')).toEqual([]);
  });
});
