/**
 * Ready for the jobs, the pure parts: the probe's GID and P_Key lines read as hostile text, the
 * fleet compared (GID index per NIC, SM LID, subnet prefix), a RoCE port with link-local GIDs only,
 * a partition missing from a port's P_Key table, and `ibfleet env`'s settings, folding and shell
 * text — which `sh` sources here as a job would.
 */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { parseProbe } from '../../src/facts/host-facts.js';
import { nicFabric } from '../../src/facts/nic-fabric.js';
import { parseRdmaSection } from '../../src/facts/rdma-facts.js';
import { loadInventory } from '../../src/inventory/load.js';
import { pkeyTable, roceGidTable } from '../../src/lab/rdma-emulation.js';
import { foldEnv, hostEnv, isRefusal, renderEnvShell, type HostEnv } from '../../src/plan/job-env.js';
import { fabricConsistency } from '../../src/steps/fabric-health/consistency.js';
import { linkLocalOnly } from '../../src/steps/fabric-health/problems.js';
import { partitionProblems } from '../../src/steps/links/partition.js';
import type { NicFabric } from '../../src/vocabulary.js';

const fleet = loadInventory(
  'fabric: { subnet: 172.16.0.0/16 }\nhosts:\n  34: { name: mem34, address: a34 }\n  40: { name: node40, address: a40 }\n  41: { name: node41, address: a41 }\n',
  't.yaml',
);
const host = (id: number) => fleet.hosts.find((h) => h.id === id)!;

function nic(n: number, over: Partial<NicFabric> = {}): NicFabric {
  return {
    nic: n,
    iface: `ib${n - 1}`,
    device: `mlx5_${n - 1}`,
    port: 1,
    state: 'ACTIVE',
    physState: 'LinkUp',
    rate: '100 Gb/sec (4X EDR)',
    linkLayer: 'Ethernet',
    lid: 0,
    smLid: 0,
    mode: null,
    mtu: 1500,
    up: true,
    roceV2Gid: 3,
    ...over,
  };
}
const ib = (n: number, over: Partial<NicFabric> = {}) =>
  nic(n, { linkLayer: 'InfiniBand', roceV2Gid: null, lid: n, smLid: 1, subnetPrefix: 'fe80:0000:0000:0000', ...over });

describe("the probe's GID and P_Key lines, hostile text", () => {
  it('keeps well-formed entries, drops the rest, and normalises P_Keys', () => {
    const rdma = parseRdmaSection([
      'gid mlx5_1 1 3 0000:0000:0000:0000:0000:FFFF:ac10:2202 RoCE v2',
      'gid mlx5_1 1 4 $(reboot) RoCE v2',
      'gid mlx5_1 1 x 0000:0000:0000:0000:0000:ffff:ac10:2202 RoCE v2',
      'gid mlx5_1 1 5 fe80:0000:0000:0000:0002:c903:0022:1101 RoCE v9; rm -rf /',
      'pkey mlx5_0 1 0 0xFFFF',
      'pkey mlx5_0 1 1 0x2',
      'pkey mlx5_0 1 2 0x12345',
    ]);
    expect(rdma.gids).toEqual([
      { device: 'mlx5_1', port: 1, index: 3, gid: '0000:0000:0000:0000:0000:ffff:ac10:2202', type: 'RoCE v2' },
      { device: 'mlx5_1', port: 1, index: 5, gid: 'fe80:0000:0000:0000:0002:c903:0022:1101', type: '' },
    ]);
    expect(rdma.pkeys.map((p) => p.pkey)).toEqual(['0xffff', '0x0002']);
  });

  it("gives an InfiniBand port's subnet prefix and P_Keys, and a RoCE port's GIDs", () => {
    const facts = parseProbe(
      [
        '@@ibfleet probe 3',
        '@@ibfleet ip',
        '2: ib0: <BROADCAST,UP,LOWER_UP> mtu 2044 qdisc noop state UP',
        '3: ib1: <BROADCAST,UP,LOWER_UP> mtu 1500 qdisc noop state UP',
        '@@ibfleet rdma',
        'devices mlx5_0 mlx5_1',
        'nic ib0|datagram|0|0x0|mlx5_0',
        'nic ib1||0|0x0|mlx5_1',
        'port mlx5_0 1 4: ACTIVE|5: LinkUp|100 Gb/sec (4X EDR)|InfiniBand|0x3|0x1',
        'port mlx5_1 1 4: ACTIVE|5: LinkUp|100 Gb/sec (4X EDR)|Ethernet|0x0|0x0',
        'gid mlx5_0 0 0 fe80:0000:0000:0000:0002:c903:0022:0101',
        'gid mlx5_0 1 0 fec0:0000:0000:0001:0002:c903:0022:0101',
        'pkey mlx5_0 1 0 0xffff',
        'pkey mlx5_0 1 1 0x8002',
        'gid mlx5_1 1 1 fe80:0000:0000:0000:0002:c903:0022:1101 RoCE v2',
        'gid mlx5_1 1 3 0000:0000:0000:0000:0000:ffff:ac10:2202 RoCE v2',
        '@@ibfleet end',
      ].join('\n'),
    );
    const [ib0, ib1] = host(34).nics.map((n) => nicFabric(n, facts));
    expect([ib0!.subnetPrefix, ib0!.pkeys, ib0!.gids]).toEqual([
      'fec0:0000:0000:0001',
      ['0xffff', '0x8002'],
      undefined,
    ]);
    expect([ib1!.roceV2Gid, ib1!.gids!.map((g) => g.index), ib1!.subnetPrefix]).toEqual([3, [1, 3], undefined]);
  });
});

describe('the fleet compared', () => {
  it.each([
    {
      what: 'every host at 3: nothing to say',
      hosts: [34, 40, 41].map((h) => ({ host: h, fabric: [nic(1), nic(2)] })),
      warnings: [],
      problems: [],
    },
    {
      what: "one host's NIC 2 at 5: a warning naming it and its index",
      hosts: [
        { host: 34, fabric: [nic(1), nic(2, { roceV2Gid: 5 })] },
        { host: 40, fabric: [nic(1), nic(2)] },
        { host: 41, fabric: [nic(1), nic(2)] },
      ],
      warnings: [
        /^NIC 2: RoCE v2 GID index differs: host 34 NIC 2 \(ib1 → mlx5_1\/1\) has index 5 where 40-41 have 3: /,
      ],
      problems: [],
    },
    {
      what: 'a port under another SM LID: a problem naming host and NIC',
      hosts: [
        { host: 34, fabric: [ib(1), ib(2, { smLid: 2 })] },
        { host: 40, fabric: [ib(1), ib(2)] },
      ],
      warnings: [],
      problems: [
        /^SM LID differs: host 34 NIC 2 \(ib1 → mlx5_1\/1\) sees SM LID 2 while the fabric's other ports see 1: /,
      ],
    },
    {
      what: 'another subnet prefix: a problem',
      hosts: [
        { host: 34, fabric: [ib(1, { subnetPrefix: 'fec0:0000:0000:0001' }), ib(2)] },
        { host: 40, fabric: [ib(1), ib(2)] },
      ],
      warnings: [],
      problems: [/^subnet prefix differs: host 34 NIC 1 \(ib0 → mlx5_0\/1\) has fec0:0000:0000:0001 while/],
    },
    {
      what: 'a port without SM is its own host’s problem, not another subnet',
      hosts: [
        { host: 34, fabric: [ib(1), ib(2, { smLid: 0 })] },
        { host: 40, fabric: [ib(1), ib(2)] },
      ],
      warnings: [],
      problems: [],
    },
  ])('$what', ({ hosts, warnings, problems }) => {
    const found = fabricConsistency(hosts);
    expect(found.warnings).toEqual(warnings.map((w) => expect.stringMatching(w)));
    expect(found.problems).toEqual(problems.map((p) => expect.stringMatching(p)));
    expect(found.outliers.length > 0).toBe(problems.length > 0);
  });

  it('a RoCE port with link-local GIDs only is named, one with its IPv4 GID is not', () => {
    const ll = [
      { index: 0, gid: 'fe80:0000:0000:0000:0002:c903:0028:0101', type: 'IB/RoCE v1' },
      { index: 1, gid: 'fe80:0000:0000:0000:0002:c903:0028:0101', type: 'RoCE v2' },
    ];
    expect(linkLocalOnly(nic(1, { roceV2Gid: null, gids: ll }), '172.16.40.1')).toMatch(
      /^ib0 → mlx5_0\/1 is RoCE but its only GIDs are link-local or IPv6 \(fe80:0000:0000:0000:0002:c903:0028:0101 at 0,1\)/,
    );
    const v4 = { index: 3, gid: '0000:0000:0000:0000:0000:ffff:ac10:2801', type: 'RoCE v2' };
    expect(linkLocalOnly(nic(1, { gids: [...ll, v4] }), '172.16.40.1')).toBeUndefined();
    expect(linkLocalOnly(ib(1), '172.16.40.1')).toBeUndefined();
  });
});

describe("a partition's P_Key in the port's table", () => {
  const facts = (pkeys: string[]) =>
    parseProbe(
      [
        '@@ibfleet probe 3',
        '@@ibfleet rdma',
        'nic ib0|datagram|0|0x0|mlx5_0',
        'nic ib1|datagram|0|0x0|mlx5_1',
        'port mlx5_0 1 4: ACTIVE|5: LinkUp|100 Gb/sec (4X EDR)|InfiniBand|0x3|0x1',
        'port mlx5_1 1 4: ACTIVE|5: LinkUp|100 Gb/sec (4X EDR)|InfiniBand|0x4|0x1',
        ...pkeys.map((p, i) => `pkey mlx5_1 1 ${i} ${p}`),
        'pkey mlx5_0 1 0 0xffff',
        'pkey mlx5_0 1 1 0x8002',
        '@@ibfleet end',
      ].join('\n'),
    );
  it.each([
    { table: ['0xffff', '0x8002'], want: [] },
    { table: ['0xffff', '0x0002'], want: [] },
    { table: ['0xffff'], want: [/^ib1 → mlx5_1\/1: P_Key 0x8002 is not in the port's P_Key table \(0xffff\)/] },
  ])('table $table', ({ table, want }) => {
    const found = partitionProblems({ host: host(34), fleet, facts: facts(table) }, { pkey: '0x8002' });
    expect(found).toEqual(want.map((w) => expect.stringMatching(w)));
  });
});

describe('ibfleet env', () => {
  const state = (id: number, fabric: NicFabric[], problems: string[] = []) => ({ host: host(id), fabric, problems });
  const envOf = (id: number, fabric: NicFabric[]) =>
    hostEnv(state(id, fabric), fleet, ['nccl', 'ucx', 'mpi']) as HostEnv;

  it('RoCE: exact names ordered by NIC, the GID index; InfiniBand: no GID index', () => {
    expect(envOf(40, [nic(2), nic(1)]).settings.map((s) => `${s.name}=${s.value}`)).toEqual([
      'NCCL_IB_HCA==mlx5_0:1,mlx5_1:1',
      'NCCL_SOCKET_IFNAME==ib0',
      'NCCL_IB_GID_INDEX=3',
      'UCX_NET_DEVICES=mlx5_0:1,mlx5_1:1',
      'UCX_IB_GID_INDEX=3',
      'OMPI_MCA_btl_tcp_if_include=ib0,ib1',
      'OMPI_MCA_oob_tcp_if_include=ib0',
    ]);
    expect(envOf(40, [ib(1), ib(2)]).settings.map((s) => s.name)).not.toContain('NCCL_IB_GID_INDEX');
  });

  it("a host whose NICs' GIDs sit at different indexes: NCCL picks by address, UCX by itself, and says why", () => {
    const e = envOf(34, [nic(1), nic(2, { roceV2Gid: 5 })]);
    expect(e.settings.filter((s) => s.library === 'nccl').map((s) => s.name)).toEqual([
      'NCCL_IB_HCA',
      'NCCL_SOCKET_IFNAME',
      'NCCL_IB_ADDR_FAMILY',
      'NCCL_IB_ADDR_RANGE',
      'NCCL_IB_ROCE_VERSION_NUM',
    ]);
    expect(e.notes[0]).toMatch(/NIC 1 ib0: 3, NIC 2 ib1: 5/);
  });

  it.each([
    { what: 'a fabric problem', s: state(34, [nic(1), nic(2)], ['ib1 → mlx5_1/1 is DOWN']), cause: /is DOWN/ },
    { what: 'no RDMA device', s: state(34, [nic(1), nic(2, { device: null, port: null })]), cause: /ib1: no RDMA/ },
    {
      what: 'a device name no setting takes',
      s: state(34, [nic(1), nic(2, { device: "mlx5_1';reboot;'" })]),
      cause: /NIC 2: the host names its device or interface in characters no job setting takes/,
    },
    {
      what: 'no RoCE v2 GID',
      s: state(34, [nic(1), nic(2, { roceV2Gid: null })]),
      cause: /ib1 is RoCE but no RoCE v2 GID/,
    },
  ])('refuses a host: $what', ({ s, cause }) => {
    const e = hostEnv(s, fleet, ['nccl']);
    expect(isRefusal(e) && cause.test(e.cause)).toBe(true);
  });

  const sourced = (text: string, hostName: string) => {
    const out = spawnSync('sh', ['-c', `${text}\nenv`], { env: { PATH: process.env.PATH, IBFLEET_HOST: hostName } });
    expect(out.status).toBe(0);
    return out.stdout
      .toString()
      .split('\n')
      .filter((l) => /^(NCCL|UCX|OMPI)_/.test(l))
      .sort();
  };

  it('one block when every host agrees; sh sources it as written', () => {
    const folded = foldEnv([40, 41].map((id) => envOf(id, [nic(1), nic(2)])));
    expect(folded.blocks.map((b) => b.hosts)).toEqual([[40, 41]]);
    const text = renderEnvShell(folded, 'ibfleet env --hosts 40,41');
    expect(text).toContain('# hosts 40-41: one block, every host alike');
    expect(sourced(text, 'anything')).toContain('NCCL_IB_HCA==mlx5_0:1,mlx5_1:1');
  });

  it('per-host blocks with the reason; each host gets its own; a hostile command line stays a comment', () => {
    const folded = foldEnv([envOf(34, [nic(1), nic(2, { roceV2Gid: 5 })]), envOf(40, [nic(1), nic(2)])]);
    expect(folded.reasons).toEqual(
      expect.arrayContaining([
        'NCCL_IB_GID_INDEX differs: 34 has none, 40 has 3',
        'UCX_IB_GID_INDEX differs: 34 has none, 40 has 3',
      ]),
    );
    const text = renderEnvShell(folded, 'ibfleet env --hosts "$(touch /tmp/x)"\nreboot');
    expect(sourced(text, 'node40')).toContain('NCCL_IB_GID_INDEX=3');
    expect(sourced(text, 'mem34')).toContain('NCCL_IB_ADDR_FAMILY=AF_INET');
    expect(sourced(text, 'mem34')).not.toContain('NCCL_IB_GID_INDEX=3');
    expect(sourced(text, 'stranger')).toEqual([]);
    expect(text.split('\n').filter((l) => l.includes('reboot'))).toEqual([expect.stringMatching(/^# /)]);
  });
});

describe("the lab's tables", () => {
  it.each([
    { order: 'kernel', v2: 3, entries: 4 },
    { order: 'reorder', v2: 5, entries: 6 },
    { order: 'linklocal-only', v2: undefined, entries: 2 },
  ] as const)('$order: the address’s v2 GID at $v2', ({ order, v2, entries }) => {
    const table = roceGidTable('0002:c903:0022:1101', ['172.16.34.2'], order);
    expect(table.filter((e) => e.type !== '')).toHaveLength(entries);
    const at = table.findIndex((e) => e.gid === '0000:0000:0000:0000:0000:ffff:ac10:2202' && e.type === 'RoCE v2');
    expect(at === -1 ? undefined : at).toBe(v2);
    expect(table[0]!.gid.startsWith('fe80:')).toBe(true);
  });
  it('P_Key table: the default partition first, then those given, the rest empty', () => {
    expect(pkeyTable(['0x8002']).slice(0, 3)).toEqual(['0xffff', '0x8002', '0x0000']);
  });
});
