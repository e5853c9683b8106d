/**
 * The fabric itself, end to end against lab hosts whose RDMA devices and ports the lab emulates in
 * their own sysfs: status reads every fabric NIC's port as ibdev2netdev maps it and says what to do
 * when one cannot carry RDMA; `lab port` changes a port at run time (DOWN, INIT, Polling, no subnet
 * manager, a degraded rate, the IPoIB mode); verify runs rping end to end over SSH and names the
 * cause of a failed cell; and no rping is ever left running on a host.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { labExec, labPkey, labPort, labSm } from '../../src/lab/index.js';
import { hostProcesses, waitUntil } from '../../src/lab/processes.js';
import type { NicFabric } from '../../src/vocabulary.js';
import { CLI, ibfleet, json, statuses, type JsonRun } from '../helpers/cli.js';
import { IS_ROOT, noteIfNotRoot, testLab, useLab } from '../lab/helpers.js';

const LAB = testLab('e2e-fabric');
const HOSTS = [16, 34, 40, 42];
const MACHINE_HAS_INFINIBAND = existsSync('/sys/class/infiniband');

type StatusRun = Omit<JsonRun, 'hosts'> & {
  warnings?: string[];
  problems?: string[];
  hosts: (JsonRun['hosts'][number] & { fabric?: NicFabric[]; warnings?: string[] })[];
};

noteIfNotRoot('test/e2e/fabric.test.ts (RDMA ports, lab port, rping end to end)');

describe.skipIf(!IS_ROOT)('the fabric: RDMA ports in status, lab port, rping end to end (needs root)', () => {
  const lab = useLab({
    name: LAB.name,
    mgmtSubnet: LAB.mgmtSubnet,
    hosts: HOSTS,
    managers: { 40: 'ifupdown' },
    noRdma: [42],
  });
  const work = mkdtempSync(join(tmpdir(), 'ibfleet-fabric-'));
  afterAll(() => rmSync(work, { recursive: true, force: true }));
  const run = (...args: string[]) => ibfleet(['-i', lab().inventoryPath, ...args]);
  const status = async () => json<StatusRun>(await run('status', '--json'));
  const rpings = async () =>
    (await Promise.all(HOSTS.map((id) => hostProcesses(LAB.name, id)))).flat().filter((p) => /rping/.test(p.command));
  const fabricOf = (doc: StatusRun, id: number) => doc.hosts.find((h) => h.id === id)!.fabric!;
  const reasonsOf = (doc: StatusRun, id: number) => doc.hosts.find((h) => h.id === id)!.reasons;
  /** Status until `host` is ok again: the manager restores what a port coming back took away. */
  const settled = (id: number) =>
    waitUntil(async () => (await status()).hosts.find((h) => h.id === id)!.status === 'ok', 45_000, 1000);

  afterEach(async () => {
    // No run leaves an rping behind on any host, whatever the test did.
    expect((await rpings()).map((p) => p.command)).toEqual([]);
  });

  it("status reads each NIC's RDMA device and port (both NICs of a dual-port card on one device), the machine's /sys untouched; a host without any /sys/class/infiniband entry says to install rdma-core", async () => {
    const doc = await status();
    expect(
      fabricOf(doc, 16).map((n) => [n.iface, n.device, n.port, n.state, n.physState, n.linkLayer, n.mode, n.mtu]),
    ).toEqual([
      ['ibs5f0', 'mlx4_0', 1, 'ACTIVE', 'LinkUp', 'InfiniBand', 'datagram', 2044],
      ['ibs5f1', 'mlx4_0', 2, 'ACTIVE', 'LinkUp', 'InfiniBand', 'datagram', 2044],
    ]);
    expect(fabricOf(doc, 34).map((n) => `${n.iface} ${n.device}/${n.port} ${n.rate} sm ${n.smLid}`)).toEqual([
      'ib0 mlx5_0/1 56 Gb/sec (4X FDR) sm 1',
      'ib1 mlx5_1/1 56 Gb/sec (4X FDR) sm 1',
    ]);
    expect(reasonsOf(doc, 42)).toContain(
      "ib0: no RDMA device (/sys/class/infiniband is empty): install rdma-core (or MLNX_OFED) and load the HCA's driver (modprobe mlx5_ib ib_ipoib), then check with ibv_devices",
    );
    expect(existsSync('/sys/class/infiniband')).toBe(MACHINE_HAS_INFINIBAND);
  });

  it("the rping matrix before deploy: NIC 1 ↔ NIC 1 passes, every cell through a NIC 2 fails with RDMA CM's event", async () => {
    const result = await run('verify', '--rping', '--hosts', '16,34,40', '--json');
    expect(result.code).toBe(1);
    const rping = json(result).matrix!.filter((c) => c.method === 'rping');
    expect(rping).toHaveLength(3 * 2 * 4);
    for (const c of rping)
      expect(c.ok, `${c.from.ip} → ${c.to.ip}: ${c.detail}`).toBe(c.from.nic === 1 && c.to.nic === 1);
    for (const c of rping.filter((x) => !x.ok))
      expect(c.detail).toMatch(/^(REJECTED|UNREACHABLE|ADDR_ERROR) \(error -?\d+\)/);
    expect(rping.find((c) => c.ok)!.detail).toBe('3/3 rdma pings');
  });

  it('after deploy every rping cell passes, and cells with the host without RDMA are skipped with the reason', async () => {
    const deployed = await run('deploy', '--hosts', 'all', '--json');
    expect(deployed.code, deployed.stdout).toBe(0);
    const result = await run('verify', '--rping', '--json');
    const cells = json(result).matrix!;
    expect(cells.filter((c) => c.ok === false)).toEqual([]);
    const rping = cells.filter((c) => c.method === 'rping');
    expect(rping.filter((c) => c.ok === true)).toHaveLength(3 * 2 * 4);
    expect(rping.filter((c) => c.ok === null).every((c) => /^skipped: no RDMA device on node42/.test(c.detail))).toBe(
      true,
    );
    expect(result.code).toBe(0);
  });

  it('a port taken DOWN: the host is not ok, saying which port and what to do; verify names it as the cause; back ACTIVE, the host is ok again', async () => {
    await labPort(LAB.name, 34, 'ib1', { state: 'down' });
    const plain = await run('status');
    expect(plain.code).toBe(1);
    expect(plain.stdout).toContain('ib1 → mlx5_1/1 is DOWN (Disabled): the port is disabled: enable it');
    expect(plain.stdout).toMatch(
      /^fabric 34: ib0 → mlx5_0\/1 ACTIVE LinkUp 56 Gb\/sec InfiniBand, datagram MTU 2044 · ib1 → mlx5_1\/1 DOWN Disabled 56 Gb\/sec InfiniBand, datagram MTU 2044$/m,
    );
    const verified = json(await run('verify', '--rping', '--hosts', '16,34', '--json'));
    const into = verified.matrix!.filter((c) => c.to.host === 34 && c.to.nic === 2);
    expect(
      into.every(
        (c) =>
          c.ok === false &&
          c.detail.includes('likely: 34/ib1: port mlx5_1/1 is DOWN (Disabled): the port is disabled: enable it'),
      ),
    ).toBe(true);
    // The cells are charged to the host whose port is down: 16, which pinged it, is ok.
    expect(verified.hosts.map((h) => [h.id, h.status])).toEqual([
      [16, 'ok'],
      [34, 'failed'],
    ]);
    expect(verified.hosts[1]!.error).toMatch(
      /cells through memserver34 failed: 34\/ib1: port mlx5_1\/1 is DOWN \(Disabled\): the port is disabled: enable it/,
    );
    await labPort(LAB.name, 34, 'ib1', { state: 'active' });
    expect(await settled(34)).toBe(true);
  });

  it.each([
    ['init', /ib0 → mlx5_0\/1 is INIT, no subnet manager \(SM LID 0\): .*opensm/, 'port mlx5_0/1 is INIT'],
    [
      'polling',
      /ib0 → mlx5_0\/1 is DOWN \(Polling\): the port is looking for a link partner/,
      'port mlx5_0/1 is DOWN (Polling)',
    ],
    ['no-sm', /ib0 → mlx5_0\/1 has no subnet manager \(SM LID 0\): start one/, undefined],
  ] as const)('a port in %s makes the host not ok with the next step; verify names it', async (state, says, cause) => {
    await labPort(LAB.name, 40, 'ib0', { state });
    try {
      const doc = await status();
      expect(statuses(doc)[40]).toBe('drift');
      expect(
        reasonsOf(doc, 40).some((r) => says.test(r)),
        reasonsOf(doc, 40).join('\n'),
      ).toBe(true);
      if (cause) {
        // Without an ACTIVE port the interface has no carrier: ping from and to it fails, saying why.
        const cells = json(await run('verify', '--no-rping', '--hosts', '34,40', '--json')).matrix!.filter(
          (c) => c.from.host === 40 && c.from.nic === 1,
        );
        expect(cells).toHaveLength(2);
        for (const c of cells)
          expect(c.ok === false && c.detail.includes(`likely: 40/ib0: ${cause}`), c.detail).toBe(true);
      }
      if (state === 'no-sm') {
        // RDMA CM asks the subnet administrator for a path: without an SM it cannot resolve the route.
        const cells = json(await run('verify', '--rping', '--hosts', '34,40', '--json')).matrix!.filter(
          (c) => c.method === 'rping' && c.from.host === 40 && c.from.nic === 1,
        );
        expect(cells.map((c) => c.detail.split(' — ')[0])).toEqual([
          'ROUTE_ERROR (error -110)',
          'ROUTE_ERROR (error -110)',
        ]);
      }
    } finally {
      await labPort(LAB.name, 40, 'ib0', { state: 'active' });
    }
    expect(await settled(40)).toBe(true);
  });

  it("a port under another subnet manager (lab sm 34 ib1 2) or subnet prefix fails status and verify, named by host and NIC; env refuses the host; ACTIVE under the fabric's SM again, all is well", async () => {
    await labSm(LAB.name, 34, 'ib1', 2);
    try {
      const plain = await run('status', '--hosts', '16,34,40');
      expect(plain.code).toBe(1);
      expect(plain.stdout).toMatch(
        /^problem SM LID differs: host 34 NIC 2 \(ib1 → mlx5_1\/1\) sees SM LID 2 while the fabric's other ports see 1: another subnet manager/m,
      );
      const doc = json<StatusRun>(await run('status', '--hosts', '16,34,40', '--json'));
      expect(doc.ok).toBe(false);
      expect(doc.problems).toEqual([expect.stringMatching(/^SM LID differs: host 34 NIC 2 /)]);
      const verified = json<StatusRun>(await run('verify', '--no-rping', '--hosts', '16,34', '--json'));
      expect(verified.problems).toEqual(doc.problems);
      const env = await run('env', '--hosts', '16,34', '--for', 'nccl');
      expect([env.code, env.stdout]).toEqual([1, '']);
      expect(env.stderr).toContain(
        "ibfleet env: host 34 refused: host 34 NIC 2 (ib1 → mlx5_1/1) sees SM LID 2, the fabric's other ports 1: another subnet",
      );

      await labSm(LAB.name, 34, 'ib1', 1, 'fec0:0000:0000:0001');
      const prefix = json<StatusRun>(await run('status', '--hosts', '16,34,40', '--json'));
      expect(prefix.problems).toEqual([
        expect.stringMatching(
          /^subnet prefix differs: host 34 NIC 2 \(ib1 → mlx5_1\/1\) has fec0:0000:0000:0001 while the fabric's other ports have fe80:0000:0000:0000/,
        ),
      ]);
    } finally {
      await labPort(LAB.name, 34, 'ib1', { state: 'active' });
    }
    const back = json<StatusRun>(await run('status', '--hosts', '16,34,40', '--json'));
    expect(back.problems).toBeUndefined();
    const env = await run('env', '--hosts', '16,34', '--for', 'nccl');
    expect(env.code).toBe(0);
    expect(env.stdout).toContain("export NCCL_IB_HCA='=mlx5_0:1,mlx5_1:1'");
    expect(env.stdout).not.toContain('GID_INDEX');
  });

  it('an InfiniBand NIC without its address (removed by hand): env refuses the host naming the NIC, as status does; its manager giving the address back, env gives the host its settings again', async () => {
    await labExec(lab(), 34, ['ip', 'address', 'del', '172.16.34.1/16', 'dev', 'ib0']);
    try {
      const says = /^ib0 carries no IPv4 address, but the convention gives NIC 1 of host 34 172\.16\.34\.1\/16/;
      expect(reasonsOf(await status(), 34)).toContainEqual(expect.stringMatching(says));
      const env = await run('env', '--hosts', '16,34', '--for', 'nccl');
      expect([env.code, env.stdout]).toEqual([1, '']);
      expect(env.stderr).toMatch(
        /^ibfleet env: host 34 refused: ib0 carries no IPv4 address, but the convention gives NIC 1/m,
      );
    } finally {
      await labExec(lab(), 34, ['networkctl', 'reconfigure', 'ib0']);
    }
    expect(await settled(34)).toBe(true);
    expect((await run('env', '--hosts', '16,34', '--for', 'nccl')).code).toBe(0);
  });

  it("a playbook's partition (links pkey 0x8002) missing from a port's P_Key table: status names the port and its table; once the SM adds it, the reason is gone", async () => {
    const playbook = join(work, 'pkey.yaml');
    writeFileSync(
      playbook,
      readFileSync(join(CLI, '../../playbooks/dual-ib-routing.yaml'), 'utf8').replace(
        /^ {2}- links$/m,
        "  - links:\n      pkey: '0x8002'",
      ),
    );
    const partition = async () =>
      reasonsOf(json<StatusRun>(await run('status', '--hosts', '34', '--json', '--playbook', playbook)), 34).filter(
        (r) => r.includes('P_Key'),
      );
    expect(await partition()).toEqual([
      expect.stringMatching(
        /^ib0 → mlx5_0\/1: P_Key 0x8002 is not in the port's P_Key table \(0xffff\): the subnet manager/,
      ),
      expect.stringMatching(/^ib1 → mlx5_1\/1: P_Key 0x8002 is not in the port's P_Key table \(0xffff\)/),
    ]);
    try {
      await labPkey(LAB.name, 34, 'ib0', ['0x8002']);
      await labPkey(LAB.name, 34, 'ib1', ['0x0002']);
      // Full member on ib0, limited on ib1: both are in the partition.
      expect(await partition()).toEqual([]);
    } finally {
      await labPkey(LAB.name, 34, 'ib0', []);
      await labPkey(LAB.name, 34, 'ib1', []);
    }
  });

  it('an IPoIB mode and MTU that differ, and a degraded link, are warnings naming the odd ones; the hosts stay ok', async () => {
    await labPort(LAB.name, 34, 'ib1', { mode: 'connected' });
    await labPort(LAB.name, 40, 'ib1', { rate: '14 Gb/sec (1X FDR)' });
    try {
      const doc = json<StatusRun>(await run('status', '--hosts', '16,34,40', '--json'));
      expect(doc.ok).toBe(true);
      expect(doc.warnings).toEqual([
        expect.stringMatching(
          /^40\/ib1 → mlx5_1\/1 runs at 14 Gb\/sec, below the 56 Gb\/sec most of the fleet's ports run at: a degraded link/,
        ),
        expect.stringMatching(/^IPoIB mode differs: 34\/ib1 connected while the rest run datagram/),
        expect.stringMatching(/^MTU differs: 34\/ib1 MTU 65520 while the rest use 2044/),
      ]);
      const plain = await run('status', '--hosts', '16,34,40');
      expect(plain.code).toBe(0);
      expect(plain.stdout).toContain('warning IPoIB mode differs: 34/ib1 connected');
    } finally {
      await labPort(LAB.name, 34, 'ib1', { mode: 'datagram' });
      await labPort(LAB.name, 40, 'ib1', { rate: '56 Gb/sec (4X FDR)' });
    }
  });

  it('fabric.rdma: false (plain Ethernet NICs) skips the RDMA checks: the host without any RDMA device is ok', async () => {
    const text = readFileSync(lab().inventoryPath, 'utf8')
      .replace('knownHosts: known_hosts', `knownHosts: ${lab().knownHostsPath}`)
      .replace('identityFile: id_ed25519', `identityFile: ${lab().identityPath}`)
      .replace(/^fabric:\n/m, 'fabric:\n  rdma: false\n');
    const path = join(work, 'ethernet.yaml');
    writeFileSync(path, text);
    const doc = json<StatusRun>(await ibfleet(['-i', path, 'status', '--json']));
    expect(statuses(doc)).toEqual({ 16: 'ok', 34: 'ok', 40: 'ok', 42: 'ok' });
    expect(doc.hosts.every((h) => h.fabric === undefined)).toBe(true);
  });

  it('Ctrl-C during verify --rping ends every server and client it started, on every host', async () => {
    const child = spawn(
      process.execPath,
      [CLI, '-i', lab().inventoryPath, 'verify', '--rping', '--hosts', '16,34,40'],
      { env: { ...process.env, NO_COLOR: '1' }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    expect(await waitUntil(async () => (await rpings()).length > 0, 30_000, 50)).toBe(true);
    child.kill('SIGINT');
    expect(await exited).toBe(130);
    expect(await waitUntil(async () => (await rpings()).length === 0, 3000, 100)).toBe(true);
  });
});
