import { describe, expect, it } from 'vitest';
import { loadInventory } from '../../src/inventory/load.js';
import { parseProbe } from '../../src/facts/host-facts.js';
import { nicFabric } from '../../src/facts/nic-fabric.js';
import { parseRdmaSection, rdmaPortOf } from '../../src/facts/rdma-facts.js';
import { ipv4MappedGid } from '../../src/facts/rdma-probe.js';
import { fleetFabricWarnings } from '../../src/steps/fabric-health/fleet.js';
import { fabricProblems } from '../../src/steps/fabric-health/problems.js';
import { formatHostFabric, formatNicFabric } from '../../src/ui/text/fabric.js';
import type { HostResult, NicFabric } from '../../src/vocabulary.js';

const fleet = loadInventory(
  'fabric: { subnet: 172.16.0.0/16 }\nhosts:\n  16: { name: cpu16, address: a16 }\n  34: { name: mem34, address: a34 }\n',
  't.yaml',
);
const host34 = fleet.hosts.find((h) => h.id === 34)!;

const ACTIVE_IB = (lid: string, sm = '0x1') => `4: ACTIVE|5: LinkUp|100 Gb/sec (4X EDR)|InfiniBand|${lid}|${sm}`;

/** A probe's output: links with their flags, and the rdma section. */
function probe(rdma: readonly string[], links: { ib0?: string; ib1?: string } = {}): string {
  const link = (n: number, name: string, flags: string, mtu: number) =>
    `${n}: ${name}: <${flags}> mtu ${mtu} qdisc noop state UP`;
  return [
    '@@ibfleet probe 3',
    '@@ibfleet ip',
    link(1, 'lo', 'LOOPBACK,UP,LOWER_UP', 65536),
    link(2, 'ib0', links.ib0 ?? 'BROADCAST,MULTICAST,UP,LOWER_UP', 2044),
    link(3, 'ib1', links.ib1 ?? 'BROADCAST,MULTICAST,UP,LOWER_UP', 2044),
    '@@ibfleet rdma',
    ...rdma,
    '@@ibfleet end',
  ].join('\n');
}

const healthy = [
  'devices mlx5_0 mlx5_1',
  'nic ib0|datagram|0|0x0|mlx5_0',
  'nic ib1|datagram|0|0x0|mlx5_1',
  `port mlx5_0 1 ${ACTIVE_IB('0x3')}`,
  `port mlx5_1 1 ${ACTIVE_IB('0x4')}`,
];

function problemsOf(rdma: readonly string[], links: { ib0?: string; ib1?: string } = {}): string[] {
  const facts = parseProbe(probe(rdma, links));
  return fabricProblems(
    host34,
    host34.nics.map((n) => nicFabric(n, facts)),
    facts,
  );
}

describe('which RDMA port is behind an interface (ibdev2netdev)', () => {
  it.each([
    { what: 'ConnectX-4 and later: one device per port', lines: healthy, want: ['mlx5_0/1', 'mlx5_1/1'] },
    {
      what: 'dual-port ConnectX-3: both NICs on one device, told apart by dev_port',
      lines: [
        'devices mlx4_0',
        'nic ib0||0|0x0|mlx4_0',
        'nic ib1||1|0x0|mlx4_0',
        `port mlx4_0 1 ${ACTIVE_IB('0x3')}`,
        `port mlx4_0 2 ${ACTIVE_IB('0x4')}`,
      ],
      want: ['mlx4_0/1', 'mlx4_0/2'],
    },
    {
      what: 'dual-port card on an older kernel: dev_id carries the port',
      lines: [
        'devices mlx4_0',
        'nic ib0||0|0x0|mlx4_0',
        'nic ib1||0|0x1|mlx4_0',
        `port mlx4_0 1 ${ACTIVE_IB('0x3')}`,
        `port mlx4_0 2 ${ACTIVE_IB('0x4')}`,
      ],
      want: ['mlx4_0/1', 'mlx4_0/2'],
    },
    {
      what: 'RoCE: the port names its netdev in gid_attrs/ndevs',
      lines: ['devices mlx4_0', 'ndev mlx4_0 1 ib1', 'ndev mlx4_0 2 ib0', 'nic ib0||0|0x0|', 'nic ib1||0|0x0|'],
      want: ['mlx4_0/2', 'mlx4_0/1'],
    },
    {
      what: 'no RDMA device at all',
      lines: ['devices', 'nic ib0||0|0x0|', 'nic ib1||0|0x0|'],
      want: [undefined, undefined],
    },
  ])('$what', ({ lines, want }) => {
    const rdma = parseRdmaSection(lines);
    expect(
      ['ib0', 'ib1'].map((i) => rdmaPortOf(i, rdma)).map((r) => (r ? `${r.device}/${r.port}` : undefined)),
    ).toEqual(want);
  });
});

describe('fabric health of one host: each problem says what to do next', () => {
  it('every port ACTIVE/LinkUp with a subnet manager: nothing to say', () => {
    expect(problemsOf(healthy)).toEqual([]);
  });

  it.each([
    {
      what: 'a port DOWN, no link partner (Polling)',
      state: '1: DOWN|2: Polling|10 Gb/sec (4X SDR)|InfiniBand|0xffff|0x0',
      says: ['ib1 → mlx5_1/1 is DOWN (Polling)', 'cable', 'switch port'],
    },
    {
      what: 'a disabled port',
      state: '1: DOWN|3: Disabled|10 Gb/sec (4X SDR)|InfiniBand|0xffff|0x0',
      says: ['is DOWN (Disabled)', 'enable it'],
    },
    {
      what: 'a port in INIT: link up, no subnet manager',
      state: '2: INIT|5: LinkUp|100 Gb/sec (4X EDR)|InfiniBand|0x0|0x0',
      says: ['ib1 → mlx5_1/1 is INIT', 'no subnet manager (SM LID 0)', 'opensm'],
    },
    {
      what: 'an ACTIVE port whose SM is gone',
      state: ACTIVE_IB('0x4', '0x0'),
      says: ['ib1 → mlx5_1/1 has no subnet manager (SM LID 0)', 'start one'],
    },
  ])('$what', ({ state, says }) => {
    const problems = problemsOf([...healthy.slice(0, 4), `port mlx5_1 1 ${state}`]);
    expect(problems).toHaveLength(1);
    for (const words of says) expect(problems[0]).toContain(words);
  });

  it('a port ACTIVE while its interface is down', () => {
    expect(problemsOf(healthy, { ib1: 'BROADCAST,MULTICAST' })).toEqual([
      'ib1 → mlx5_1/1 is ACTIVE but ib1 is down: bring it up (ip link set ib1 up, or through its network manager)',
    ]);
  });

  it('a host without any /sys/class/infiniband entry: install rdma-core and load the driver', () => {
    const problems = problemsOf(['devices', 'nic ib0||||', 'nic ib1||||']);
    expect(problems).toHaveLength(2);
    expect(problems[0]).toMatch(
      /^ib0: no RDMA device \(\/sys\/class\/infiniband is empty\): install rdma-core.*modprobe mlx5_ib/,
    );
  });

  it('devices that are not behind the NIC are named', () => {
    expect(
      problemsOf([
        'devices mlx5_0 mlx5_1',
        'nic ib0|datagram|0|0x0|mlx5_0',
        'nic ib1|||0x0|',
        `port mlx5_0 1 ${ACTIVE_IB('0x3')}`,
      ]),
    ).toEqual([
      'ib1: no RDMA device behind it (the host has mlx5_0, mlx5_1): is ib1 the IPoIB or RoCE interface of an HCA? ibdev2netdev or rdma link shows which',
    ]);
  });

  it('RoCE: a RoCE v2 GID must carry the NIC address', () => {
    const roce = (port: number, iface: string) => [
      `ndev mlx4_0 ${port} ${iface}`,
      `port mlx4_0 ${port} 4: ACTIVE|5: LinkUp|40 Gb/sec (4X QDR)|Ethernet|0x0|0x0`,
    ];
    const lines = [
      'devices mlx4_0',
      ...roce(1, 'ib0'),
      ...roce(2, 'ib1'),
      'nic ib0||0||',
      'nic ib1||1||',
      `gid mlx4_0 1 3 ${ipv4MappedGid('172.16.34.1')} RoCE v2`,
      `gid mlx4_0 2 2 ${ipv4MappedGid('172.16.34.2')} IB/RoCE v1`,
    ];
    const problems = problemsOf(lines);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain('ib1 → mlx4_0/2 is RoCE but no RoCE v2 GID carries 172.16.34.2');
    const facts = parseProbe(probe(lines));
    expect(formatNicFabric(nicFabric(host34.nics[0]!, facts))).toBe(
      'ib0 → mlx4_0/1 ACTIVE LinkUp 40 Gb/sec Ethernet RoCE v2 GID 3, MTU 2044',
    );
  });

  it('the compact line: ib1 → mlx5_1/1 ACTIVE LinkUp 100 Gb/sec InfiniBand, datagram MTU 2044', () => {
    const facts = parseProbe(probe(healthy));
    expect(formatNicFabric(nicFabric(host34.nics[1]!, facts))).toBe(
      'ib1 → mlx5_1/1 ACTIVE LinkUp 100 Gb/sec InfiniBand, datagram MTU 2044',
    );
  });
});

describe('fleet warnings name the odd ones', () => {
  const nic = (iface: string, over: Partial<NicFabric> = {}): NicFabric => ({
    nic: iface === 'ib0' ? 1 : 2,
    iface,
    device: 'mlx5_0',
    port: 1,
    state: 'ACTIVE',
    physState: 'LinkUp',
    rate: '100 Gb/sec (4X EDR)',
    linkLayer: 'InfiniBand',
    lid: 3,
    smLid: 1,
    mode: 'datagram',
    mtu: 2044,
    up: true,
    roceV2Gid: null,
    ...over,
  });
  const result = (id: number, fabric: NicFabric[]): HostResult => ({
    host: { id, name: `h${id}`, target: `h${id}` },
    status: 'ok',
    durationMs: 1,
    reasons: [],
    fabric,
  });

  it('a port below the rate most ports run at is a degraded link', () => {
    const warnings = fleetFabricWarnings([
      result(1, [nic('ib0'), nic('ib1')]),
      result(2, [nic('ib0'), nic('ib1', { rate: '56 Gb/sec (4X FDR)' })]),
      result(3, [nic('ib0'), nic('ib1')]),
    ]);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(
      /^2\/ib1 → mlx5_0\/1 runs at 56 Gb\/sec, below the 100 Gb\/sec most of the fleet's ports run at: a degraded link/,
    );
  });

  it('datagram on one host and connected on another: mode and MTU warnings naming the odd ones', () => {
    const warnings = fleetFabricWarnings([
      result(1, [nic('ib0'), nic('ib1')]),
      result(2, [nic('ib0'), nic('ib1', { mode: 'connected', mtu: 65520 })]),
      result(3, [nic('ib0'), nic('ib1')]),
    ]);
    expect(warnings).toEqual([
      expect.stringMatching(/^IPoIB mode differs: 2\/ib1 connected while the rest run datagram/),
      expect.stringMatching(/^MTU differs: 2\/ib1 MTU 65520 while the rest use 2044/),
    ]);
  });

  it('everything alike: no warning', () => {
    expect(fleetFabricWarnings([result(1, [nic('ib0'), nic('ib1')]), result(2, [nic('ib0'), nic('ib1')])])).toEqual([]);
  });
});

describe("a multi-rail host's fabric on one line", () => {
  const port = (iface: string, device: string, over: Partial<NicFabric> = {}): NicFabric => ({
    nic: 1,
    iface,
    device,
    port: 1,
    state: 'ACTIVE',
    physState: 'LinkUp',
    rate: '400 Gb/sec (4X NDR)',
    linkLayer: 'InfiniBand',
    lid: 3,
    smLid: 1,
    mode: 'datagram',
    mtu: 4092,
    up: true,
    roceV2Gid: null,
    ...over,
  });

  it('NICs that read alike share their attributes; the odd port stands apart; two NICs read as before', () => {
    const eight = [
      'ibp12s0:mlx5_0',
      'ibp75s0:mlx5_2',
      'ibp141s0:mlx5_4',
      'ibp186s0:mlx5_6',
      'ibp18s0:mlx5_1',
      'ibp84s0:mlx5_3',
      'ibp151s0:mlx5_5',
      'ibp200s0:mlx5_7',
    ].map((s) => s.split(':') as [string, string]);
    const nics = eight.map(([iface, device]) =>
      port(iface, device, iface === 'ibp18s0' ? { state: 'DOWN', physState: 'Disabled' } : {}),
    );
    expect(formatHostFabric(nics)).toBe(
      'ibp12s0 → mlx5_0/1, ibp75s0 → mlx5_2/1, ibp141s0 → mlx5_4/1, ibp186s0 → mlx5_6/1, ibp84s0 → mlx5_3/1, ibp151s0 → mlx5_5/1, ibp200s0 → mlx5_7/1: ACTIVE LinkUp 400 Gb/sec InfiniBand, datagram MTU 4092 · ibp18s0 → mlx5_1/1 DOWN Disabled 400 Gb/sec InfiniBand, datagram MTU 4092',
    );
    expect(formatHostFabric(nics.slice(0, 2))).toBe(
      'ibp12s0 → mlx5_0/1 ACTIVE LinkUp 400 Gb/sec InfiniBand, datagram MTU 4092 · ibp75s0 → mlx5_2/1 ACTIVE LinkUp 400 Gb/sec InfiniBand, datagram MTU 4092',
    );
  });
});
