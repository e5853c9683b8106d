/**
 * Ready for the jobs, end to end on RoCE lab hosts (lab up --link-layer ethernet) whose GID tables
 * follow their NICs' addresses as the kernel's do: `ibfleet env` gives the settings NCCL, UCX and
 * Open MPI need, one block while every host agrees; a GID table reordered on one host (as after a
 * port flap) is named by status and verify, and env gives that host its own block with the reason;
 * a port left with link-local GIDs only fails the host, and env refuses it, printing nothing to
 * eval; the port brought down and up registers its GIDs again and all is well.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { labExec, labGid, labPort, labReboot } from '../../src/lab/index.js';
import { waitUntil } from '../../src/lab/processes.js';
import { portDir } from '../../src/lab/rdma-emulation.js';
import { sysfsLayer } from '../../src/lab/rdma.js';
import { requireLab } from '../../src/lab/state.js';
import type { NicFabric } from '../../src/vocabulary.js';
import { CLI, ibfleet, json, statuses, type JsonRun } from '../helpers/cli.js';
import { IS_ROOT, noteIfNotRoot, testLab, useLab } from '../lab/helpers.js';

const LAB = testLab('e2e-jobs');
const HOSTS = [34, 40, 41];

type StatusRun = Omit<JsonRun, 'hosts'> & {
  log?: string | null;
  warnings?: string[];
  problems?: string[];
  hosts: (JsonRun['hosts'][number] & { fabric?: NicFabric[] })[];
};

interface EnvDoc {
  ok: boolean;
  fleetWide: Record<string, string> | null;
  blocks: { hosts: number[]; settings: Record<string, string>; notes: string[] }[];
  reasons: string[];
  refused: { host: number; cause: string }[];
}

noteIfNotRoot('test/e2e/jobs.test.ts (RoCE GID tables, ibfleet env)');

describe.skipIf(!IS_ROOT)('ready for the jobs: RoCE GIDs across the fleet, and ibfleet env (needs root)', () => {
  const lab = useLab({
    name: LAB.name,
    mgmtSubnet: LAB.mgmtSubnet,
    hosts: HOSTS,
    linkLayers: { all: 'ethernet' },
  });
  const work = mkdtempSync(join(tmpdir(), 'ibfleet-jobs-'));
  afterAll(() => rmSync(work, { recursive: true, force: true }));
  const run = (...args: string[]) => ibfleet(['-i', lab().inventoryPath, ...args]);
  const status = async () => json<StatusRun>(await run('status', '--json'));
  /** What a job on host `id` gets from sourcing `text` there: its NCCL/UCX/OMPI variables. */
  const sourcedOn = async (id: number, text: string) => {
    const file = join(work, `env-${id}.sh`);
    writeFileSync(file, text);
    const result = await labExec(lab(), id, ['sh', '-c', `. ${file} && env | grep -E '^(NCCL|UCX|OMPI)_' | sort`]);
    return result.stdout.trim().split('\n');
  };

  it('deploy, then every RoCE port shows its RoCE v2 GID at 3 and status is ok', async () => {
    expect((await run('deploy', '--hosts', 'all')).code).toBe(0);
    const doc = await status();
    expect(doc.ok).toBe(true);
    for (const h of doc.hosts)
      expect(h.fabric!.map((n) => [n.linkLayer, n.roceV2Gid])).toEqual([
        ['Ethernet', 3],
        ['Ethernet', 3],
      ]);
    // The kernel's order: link-local v1 and v2, then the address's v1 and v2.
    expect(doc.hosts[0]!.fabric![1]!.gids!.map((g) => [g.index, g.gid.slice(0, 9), g.type])).toEqual([
      [0, 'fe80:0000', 'IB/RoCE v1'],
      [1, 'fe80:0000', 'RoCE v2'],
      [2, '0000:0000', 'IB/RoCE v1'],
      [3, '0000:0000', 'RoCE v2'],
    ]);
  });

  it('env --hosts all --for nccl: one block with NCCL_IB_GID_INDEX=3, exact names, that a job sources as written', async () => {
    const result = await run('env', '--hosts', 'all', '--for', 'nccl');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('# hosts 34,40-41: one block, every host alike');
    expect(result.stdout.split('\n').filter((l) => l.startsWith('export'))).toEqual([
      "export NCCL_IB_HCA='=mlx5_0:1,mlx5_1:1'",
      "export NCCL_SOCKET_IFNAME='=ib0'",
      "export NCCL_IB_GID_INDEX='3'",
    ]);
    expect(await sourcedOn(40, result.stdout)).toEqual([
      'NCCL_IB_GID_INDEX=3',
      'NCCL_IB_HCA==mlx5_0:1,mlx5_1:1',
      'NCCL_SOCKET_IFNAME==ib0',
    ]);
    const doc = json<EnvDoc>(await run('env', '--hosts', 'all', '--format', 'json'));
    expect(doc.fleetWide).toEqual({
      NCCL_IB_HCA: '=mlx5_0:1,mlx5_1:1',
      NCCL_SOCKET_IFNAME: '=ib0',
      NCCL_IB_GID_INDEX: '3',
      UCX_NET_DEVICES: 'mlx5_0:1,mlx5_1:1',
      UCX_IB_GID_INDEX: '3',
      OMPI_MCA_btl_tcp_if_include: 'ib0,ib1',
      OMPI_MCA_oob_tcp_if_include: 'ib0',
    });
  });

  it("lab gid 34 ib1 reorder: status and verify name host 34 NIC 2's index; env gives 34 its own block with the reason; down and up re-registers", async () => {
    await labGid(LAB.name, 34, 'ib1', 'reorder');
    const plain = await run('status');
    expect(plain.code).toBe(0);
    expect(plain.stdout).toMatch(
      /^warning NIC 2: RoCE v2 GID index differs: host 34 NIC 2 \(ib1 → mlx5_1\/1\) has index 5 where 40-41 have 3: /m,
    );
    const doc = await status();
    expect(doc.warnings).toEqual([
      expect.stringMatching(/^NIC 2: RoCE v2 GID index differs: host 34 NIC 2 .* has index 5/),
    ]);
    // The same words in the run log.
    expect(readFileSync(doc.log!, 'utf8')).toContain(`warning ${doc.warnings![0]}`);
    const verified = json<StatusRun>(await run('verify', '--no-rping', '--json'));
    expect(verified.warnings).toEqual(doc.warnings);

    const env = await run('env', '--hosts', 'all', '--for', 'nccl');
    expect(env.code).toBe(0);
    expect(env.stdout).toContain('#   NCCL_IB_GID_INDEX differs: 34 has none, 40-41 have 3');
    expect(env.stdout).toContain(
      "#   34: the RoCE v2 GIDs of memserver34's NICs sit at different indexes (NIC 1 ib0: 3, NIC 2 ib1: 5)",
    );
    expect(await sourcedOn(34, env.stdout)).toEqual([
      'NCCL_IB_ADDR_FAMILY=AF_INET',
      'NCCL_IB_ADDR_RANGE=172.16.0.0/16',
      'NCCL_IB_HCA==mlx5_0:1,mlx5_1:1',
      'NCCL_IB_ROCE_VERSION_NUM=2',
      'NCCL_SOCKET_IFNAME==ib0',
    ]);
    expect(await sourcedOn(41, env.stdout)).toContain('NCCL_IB_GID_INDEX=3');

    // A port flap: the GIDs register again, in the kernel's order, once the manager has the address back.
    await labPort(LAB.name, 34, 'ib1', { state: 'down' });
    await labPort(LAB.name, 34, 'ib1', { state: 'active' });
    const after = await status();
    expect(after.warnings ?? []).toEqual([]);
    expect(after.hosts.find((h) => h.id === 34)!.fabric!.map((n) => n.roceV2Gid)).toEqual([3, 3]);
    expect((await run('env', '--hosts', 'all', '--for', 'nccl')).stdout).toContain('one block, every host alike');
  });

  it('a port flap that re-registers the GIDs in another order (lab port 40 ib0 down, then active --gids reorder): status sees it at once and names host 40 NIC 1; env gives 40 its own block; a reboot makes the table anew, all is well', async () => {
    await labPort(LAB.name, 40, 'ib0', { state: 'down' });
    await labPort(LAB.name, 40, 'ib0', { state: 'active', gids: 'reorder' });
    const doc = await status();
    expect(doc.hosts.find((h) => h.id === 40)!.fabric!.map((n) => n.roceV2Gid)).toEqual([5, 3]);
    expect(doc.warnings).toEqual([
      expect.stringMatching(
        /^NIC 1: RoCE v2 GID index differs: host 40 NIC 1 \(ib0 → mlx5_0\/1\) has index 5 where 34,41 have 3/,
      ),
    ]);
    const env = json<EnvDoc>(await run('env', '--hosts', 'all', '--for', 'ucx', '--format', 'json'));
    expect(env.blocks.map((b) => b.hosts)).toEqual([[34, 41], [40]]);
    expect(env.reasons).toContain('UCX_IB_GID_INDEX differs: 34,41 have 3, 40 has none');

    // A reboot makes the table anew, as the kernel does: the link-local pair, then the addresses as they come.
    await labReboot(LAB.name, [40]);
    // The lab's GID table follows the addresses the boot brings within a moment (tableOnce, below).
    let rebooted = await status();
    await waitUntil(async () => ((rebooted = await status()).warnings ?? []).length === 0, 10_000, 200);
    expect(rebooted.warnings ?? []).toEqual([]);
    expect(rebooted.hosts.find((h) => h.id === 40)!.fabric!.map((n) => n.roceV2Gid)).toEqual([3, 3]);
  });

  it("the GID table follows the NIC's addresses as the kernel's does: an address added gets a v1 and a v2 entry in the free slots, removed they are emptied; the convention address taken away fails the host, and its manager giving it back brings its GIDs back at 2 and 3", async () => {
    type Entry = readonly [number, string, string];
    /** Host 41 NIC 2's GID table: index, the GID's last two groups, type. */
    const table41 = async (): Promise<Entry[]> =>
      (await status()).hosts.find((h) => h.id === 41)!.fabric![1]!.gids!.map((g) => [g.index, g.gid.slice(30), g.type]);
    /** The table once it is `want` (the kernel's follows an address at once; the lab's within a moment), else as it is. */
    const tableOnce = async (want: readonly Entry[]) => {
      await waitUntil(async () => JSON.stringify(await table41()) === JSON.stringify(want), 10_000, 200);
      return table41();
    };
    const linkLocal = (await table41()).slice(0, 2);
    const own: Entry[] = [...linkLocal, [2, 'ac10:2902', 'IB/RoCE v1'], [3, 'ac10:2902', 'RoCE v2']];
    expect(await table41()).toEqual(own);

    await labExec(lab(), 41, ['ip', 'address', 'add', '10.41.0.1/24', 'dev', 'ib1']);
    const added: Entry[] = [...own, [4, '0a29:0001', 'IB/RoCE v1'], [5, '0a29:0001', 'RoCE v2']];
    expect(await tableOnce(added)).toEqual(added);
    await labExec(lab(), 41, ['ip', 'address', 'del', '10.41.0.1/24', 'dev', 'ib1']);
    expect(await tableOnce(own)).toEqual(own);

    // The convention address removed by hand: the link-local pair is left, and the host fails.
    await labExec(lab(), 41, ['ip', 'address', 'del', '172.16.41.2/16', 'dev', 'ib1']);
    expect(await tableOnce(linkLocal)).toEqual(linkLocal);
    expect((await status()).hosts.find((h) => h.id === 41)!.reasons).toContainEqual(
      expect.stringMatching(/^ib1 → mlx5_1\/1 is RoCE but its only GIDs are link-local/),
    );
    // Its manager gives it back (and the hooks its routes): the GIDs come back at 2 and 3.
    expect((await labExec(lab(), 41, ['networkctl', 'reconfigure', 'ib1'])).code).toBe(0);
    expect(await tableOnce(own)).toEqual(own);
    expect(statuses(await status())).toEqual({ 34: 'ok', 40: 'ok', 41: 'ok' });
  });

  it('a port with link-local GIDs only fails its host in status and verify; env refuses it and prints nothing to eval', async () => {
    await labGid(LAB.name, 40, 'ib0', 'linklocal-only');
    try {
      const doc = await status();
      expect(statuses(doc)).toEqual({ 34: 'ok', 40: 'drift', 41: 'ok' });
      expect(doc.hosts.find((h) => h.id === 40)!.reasons).toEqual([
        expect.stringMatching(
          /^ib0 → mlx5_0\/1 is RoCE but its only GIDs are link-local or IPv6 \(fe80:[0-9a-f:]+ at 0,1\): NCCL and UCX would pick one/,
        ),
      ]);
      const verified = json<StatusRun>(await run('verify', '--no-rping', '--hosts', '40,41', '--json'));
      expect(verified.ok).toBe(false);
      expect(verified.problems).toEqual([expect.stringMatching(/^host 40: ib0 → mlx5_0\/1 is RoCE but its only GIDs/)]);

      const env = await run('env', '--hosts', 'all');
      expect(env.code).toBe(1);
      expect(env.stdout).toBe('');
      expect(env.stderr).toMatch(/^ibfleet env: host 40 refused: ib0 → mlx5_0\/1 is RoCE but its only GIDs/m);
      const doc2 = json<EnvDoc>(await run('env', '--hosts', 'all', '--format', 'json'));
      expect([doc2.ok, doc2.refused.map((r) => r.host), doc2.blocks.map((b) => b.hosts)]).toEqual([
        false,
        [40],
        [[34, 41]],
      ]);
    } finally {
      await labPort(LAB.name, 40, 'ib0', { state: 'down' });
      await labPort(LAB.name, 40, 'ib0', { state: 'active' });
    }
    expect(statuses(await status())).toEqual({ 34: 'ok', 40: 'ok', 41: 'ok' });
  });

  it("default_roce_mode as the playbook asks (links roceMode v1): status names each port that differs, deploy sets it in the RDMA CM's configfs, a port reset to v2 is named again", async () => {
    const playbook = join(work, 'roce-v1.yaml');
    writeFileSync(
      playbook,
      readFileSync(join(CLI, '../../playbooks/dual-ib-routing.yaml'), 'utf8').replace(
        /^ {2}- links$/m,
        '  - links:\n      roceMode: v1',
      ),
    );
    const roce = async () =>
      Object.fromEntries(
        json<StatusRun>(await run('status', '--json', '--playbook', playbook)).hosts.map((h) => [
          h.id,
          h.reasons.filter((r) => r.includes('RoCE mode')),
        ]),
      );
    expect((await roce())[34]).toEqual([
      'ib0: mlx5_0/1 default RoCE mode is RoCE v2, want IB/RoCE v1',
      'ib1: mlx5_1/1 default RoCE mode is RoCE v2, want IB/RoCE v1',
    ]);
    expect((await run('deploy', '--hosts', 'all', '--playbook', playbook)).code).toBe(0);
    expect(await roce()).toEqual({ 34: [], 40: [], 41: [] });
    const file = '/sys/kernel/config/rdma_cm/mlx5_1/ports/1/default_roce_mode';
    expect((await labExec(lab(), 40, ['cat', file])).stdout).toBe('IB/RoCE v1\n');
    await labExec(lab(), 40, ['sh', '-c', `echo 'RoCE v2' >${file}`]);
    expect((await roce())[40]).toEqual(['ib1: mlx5_1/1 default RoCE mode is RoCE v2, want IB/RoCE v1']);
  });

  it("onboard --cpu 40 --mem 41: the cheat sheet shows the pair's job settings beside the rping commands", async () => {
    const inventory = join(work, 'students.yaml');
    writeFileSync(
      inventory,
      readFileSync(lab().inventoryPath, 'utf8')
        .replace('knownHosts: known_hosts', `knownHosts: ${lab().knownHostsPath}`)
        .replace('identityFile: id_ed25519', `identityFile: ${lab().identityPath}`)
        // The pair arrives as new machines: onboard writes them.
        .replace(/^ {2}4[01]: .*\n/gm, ''),
    );
    const args = ['-i', inventory, 'onboard', '--cpu', '40', '--mem', '41', '--owner', 'bob'];
    const at = ['--cpu-address', LAB.address(40), '--mem-address', LAB.address(41)];
    const doc = json<{ cheatSheet: { env: { fleet: { blocks: { hosts: number[]; settings: object }[] } } } }>(
      await ibfleet([...args, ...at, '--json']),
    );
    expect(doc.cheatSheet.env.fleet.blocks).toEqual([
      {
        hosts: [40, 41],
        names: ['node40', 'node41'],
        notes: [],
        settings: expect.arrayContaining([
          { name: 'NCCL_IB_GID_INDEX', value: '3', library: 'nccl' },
          { name: 'UCX_NET_DEVICES', value: 'mlx5_0:1,mlx5_1:1', library: 'ucx' },
        ]),
      },
    ]);
    // Again, in plain text: the pair is in the inventory now, the sheet printed the same.
    const text = (await ibfleet(args)).stdout;
    const rpingAt = text.indexOf('  to node41 ib1 (172.16.41.2):');
    const jobsAt = text.indexOf(
      'for jobs: NCCL, UCX and Open MPI settings (ibfleet env --hosts pair:bob prints them to source)',
    );
    expect(rpingAt).toBeGreaterThan(0);
    expect(jobsAt).toBeGreaterThan(rpingAt);
    expect(text.slice(jobsAt)).toContain("  on both:\n    export NCCL_IB_HCA='=mlx5_0:1,mlx5_1:1'\n");
    expect(text.slice(jobsAt)).toContain("    export NCCL_IB_GID_INDEX='3'\n");
  });
  it("a hostile GID table (a 2 MB entry, escape sequences in a type and the rate) neither stops status and env nor reaches the terminal raw; the NIC's RoCE v2 GID is still read", async () => {
    const plan = await requireLab(LAB.name);
    const port = join(
      sysfsLayer(plan, 40),
      portDir(
        plan.hosts.find((h) => h.id === 40)!,
        'ib1',
      )!,
    );
    // Rewritten in place (the overlay shows a lower file's new content only so), as a hostile host's would read.
    const put = (file: string, text: string) => writeFileSync(join(port, file), text, { flag: 'w' });
    put('gids/6', 'a'.repeat(2 * 1024 * 1024));
    put('gids/7', '0000:0000:0000:0000:0000:ffff:0a00:0001\n');
    put('gid_attrs/types/7', 'RoCE v2\x1b]0;pwned\x07\x1b[31m\n');
    put('rate', '\x1b[2J\x1b[31m56 Gb/sec (4X FDR)\n');
    try {
      const plain = await run('status', '--hosts', '40');
      expect(plain.code).toBe(0);
      expect(plain.stdout + plain.stderr).not.toContain('\x1b');
      expect(plain.stdout).toMatch(/ib1 → mlx5_1\/1 ACTIVE LinkUp 56 Gb\/sec Ethernet RoCE v2 GID 3/);
      // A real sysfs file is 4 KiB at most, and the probe reads a longer value as none (host/sent/probe.sh): once is enough.
      put('gids/6', '0000:0000:0000:0000:0000:0000:0000:0000\n');
      const doc = json<StatusRun>(await run('status', '--hosts', '40', '--json'));
      const ib1 = doc.hosts[0]!.fabric![1]!;
      expect([ib1.roceV2Gid, ib1.gids!.map((g) => [g.index, g.type])]).toEqual([
        3,
        [
          [0, 'IB/RoCE v1'],
          [1, 'RoCE v2'],
          [2, 'IB/RoCE v1'],
          [3, 'RoCE v2'],
          [7, ''],
        ],
      ]);
      const env = await run('env', '--hosts', '40,41', '--for', 'nccl');
      expect(env.code).toBe(0);
      expect(env.stdout + env.stderr).not.toContain('\x1b');
      expect(env.stdout).toContain("export NCCL_IB_GID_INDEX='3'");
    } finally {
      put('gids/6', '0000:0000:0000:0000:0000:0000:0000:0000\n');
      put('gids/7', '0000:0000:0000:0000:0000:0000:0000:0000\n');
      put('gid_attrs/types/7', '\n');
      put('rate', '56 Gb/sec (4X FDR)\n');
    }
  });
});
