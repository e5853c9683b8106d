import { describe, expect, it } from 'vitest';
import { loadInventory } from '../../src/inventory/load.js';
import { cellCauses, explainFailure } from '../../src/plan/cell-causes.js';
import { parseProbe, type HostFacts } from '../../src/facts/host-facts.js';
import { parseRdmaSection } from '../../src/facts/rdma-facts.js';
import type { CellEnd, CellMethod, CellSpec } from '../../src/vocabulary.js';

const fleet = loadInventory(
  'fabric: { subnet: 172.16.0.0/16 }\nhosts:\n  16: { name: cpu16, address: a16 }\n  34: { name: mem34, address: a34 }\n',
  't.yaml',
);
const ethernet = loadInventory(
  'fabric: { subnet: 172.16.0.0/16, rdma: false }\nhosts:\n  16: { name: cpu16, address: a16 }\n  34: { name: mem34, address: a34 }\n',
  't.yaml',
);

function end(host: number, nic: number): CellEnd {
  const h = fleet.hosts.find((x) => x.id === host)!;
  const n = h.nics.find((x) => x.index === nic)!;
  return { host, name: h.name, nic, iface: n.iface, ip: n.address };
}

const cell = (method: CellMethod = 'ping'): CellSpec => ({ from: end(16, 2), to: end(34, 2), method });

interface Shape {
  /** Link flags per interface (default: up with carrier). */
  readonly flags?: Readonly<Record<string, string>>;
  /** Port state of NIC 2's device (`mlx5_1`), as sysfs prints state|phys_state. */
  readonly port2?: string;
  readonly smLid?: string;
  /** No RDMA device at all. */
  readonly noDevice?: boolean;
  /** Without the per-NIC rules and tables. */
  readonly undeployed?: boolean;
  /** As the machine arrived: its NICs without their addresses (and, as every host here, no file of ibfleet's). */
  readonly fresh?: boolean;
  /** What `ip route get` from NIC 2's address says. */
  readonly routeGet2?: { dev: string | undefined; text: string };
}

/** One host's facts as the probe would read them: both NICs, their rules, tables and RDMA ports. */
function facts(id: number, shape: Shape = {}): HostFacts {
  const host = fleet.hosts.find((h) => h.id === id)!;
  const [a, b] = host.nics;
  const flags = (iface: string) => shape.flags?.[iface] ?? 'BROADCAST,MULTICAST,UP,LOWER_UP';
  const rdma = shape.noDevice
    ? parseRdmaSection(['devices', `nic ${a!.iface}|datagram|0|0x0|`, `nic ${b!.iface}|datagram|0|0x0|`])
    : parseRdmaSection([
        'devices mlx5_0 mlx5_1',
        `nic ${a!.iface}|datagram|0|0x0|mlx5_0`,
        `nic ${b!.iface}|datagram|0|0x0|mlx5_1`,
        'port mlx5_0 1 4: ACTIVE|5: LinkUp|56 Gb/sec (4X FDR)|InfiniBand|0x3|0x1',
        `port mlx5_1 1 ${shape.port2 ?? '4: ACTIVE|5: LinkUp'}|56 Gb/sec (4X FDR)|InfiniBand|0x4|${shape.smLid ?? '0x1'}`,
      ]);
  const route = (n: typeof a) => ({
    dst: '172.16.0.0/16',
    dev: n!.iface,
    src: n!.address,
    proto: undefined,
    scope: 'link',
    text: `172.16.0.0/16 dev ${n!.iface} scope link src ${n!.address}`,
  });
  return {
    ...parseProbe('@@ibfleet probe 3\n@@ibfleet end\n'),
    addresses: shape.fresh ? [] : host.nics.map((n) => ({ iface: n.iface, address: n.address, prefixLength: 16 })),
    links: new Map(
      host.nics.map((n) => [
        n.iface,
        {
          up: flags(n.iface).split(',').includes('UP'),
          lowerUp: flags(n.iface).split(',').includes('LOWER_UP'),
          mtu: 2044,
        },
      ]),
    ),
    rules: shape.undeployed
      ? []
      : host.nics.map((n) => ({
          priority: n.priority,
          from: n.address,
          table: String(n.table),
          text: `from ${n.address} lookup ${n.table}`,
        })),
    routes: shape.undeployed ? new Map() : new Map(host.nics.map((n) => [String(n.table), [route(n)]])),
    routeGet: new Map([
      [a!.iface, { dev: a!.iface, table: String(a!.table), text: `dev ${a!.iface}` }],
      [b!.iface, { table: undefined, ...(shape.routeGet2 ?? { dev: b!.iface, text: `dev ${b!.iface}` }) }],
    ]),
    rdma,
    complete: true,
  };
}

const causesOf = (spec: CellSpec, from: Shape, to: Shape, inventory = fleet) => {
  const all = new Map([
    [16, facts(16, from)],
    [34, facts(34, to)],
  ]);
  return cellCauses(inventory, spec, (id) => all.get(id)).map((c) => c.text);
};
const kindsOf = (spec: CellSpec, from: Shape, to: Shape) => {
  const all = new Map([
    [16, facts(16, from)],
    [34, facts(34, to)],
  ]);
  return cellCauses(fleet, spec, (id) => all.get(id)).map((c) => `${c.kind} ${c.host}/${c.iface}`);
};

describe("why a failed cell failed, from the hosts' own state", () => {
  it('nothing found: no cause, and the detail stays as it was', () => {
    expect(causesOf(cell(), {}, {})).toEqual([]);
    expect(explainFailure('0/3 replies', [])).toBe('0/3 replies');
  });

  it.each([
    {
      what: 'a port DOWN at the destination',
      to: { port2: '1: DOWN|3: Disabled' },
      want: [
        '34/ib1: port mlx5_1/1 is DOWN (Disabled): the port is disabled: enable it (ibportstate … enable, or on the switch)',
      ],
    },
    {
      what: 'a port in INIT',
      to: { port2: '2: INIT|5: LinkUp', smLid: '0x0' },
      want: [
        "34/ib1: port mlx5_1/1 is INIT: the link is up but no subnet manager has configured the port: start one (systemctl start opensm on a host of this fabric) or enable the switch's SM",
      ],
    },
    {
      what: 'an ACTIVE port without subnet manager',
      to: { smLid: '0x0' },
      want: [
        "34/ib1: port mlx5_1/1 has no subnet manager: start one (systemctl start opensm on a host of this fabric) or enable the switch's SM",
      ],
    },
    {
      what: 'the interface down (the down port it takes along is the same story)',
      to: { flags: { ib1: 'BROADCAST,MULTICAST' } },
      want: ['34/ib1 is down: bring it up (ip link set ib1 up, or through its network manager)'],
    },
    {
      what: 'the interface down on a host as it arrives: the deploy is the fix, not bringing it up by hand',
      to: { flags: { ib1: 'BROADCAST,MULTICAST' }, fresh: true, undeployed: true },
      want: [
        '34/ib1 is down, without its address: not deployed yet (ibfleet deploy -i t.yaml --hosts 34 configures it)',
      ],
    },
  ])('$what', ({ to, want }) => {
    expect(causesOf(cell(), {}, to)).toEqual(want);
  });

  it('the per-NIC routing missing at the source, traffic leaving through another NIC, no route at all', () => {
    expect(causesOf(cell(), { undeployed: true }, {})).toEqual([
      '16/ib1: no rule from 172.16.16.2, table 942 empty (per-NIC routing not deployed: ibfleet deploy -i t.yaml --hosts 16)',
    ]);
    expect(causesOf(cell(), { routeGet2: { dev: 'ib0', text: '172.16.34.2 from 172.16.16.2 dev ib0' } }, {})).toEqual([
      '16/ib1: traffic from 172.16.16.2 leaves through ib0',
    ]);
    expect(
      causesOf(cell(), { routeGet2: { dev: undefined, text: 'RTNETLINK answers: Network is unreachable' } }, {}),
    ).toEqual(['16/ib1: no route from 172.16.16.2 (RTNETLINK answers: Network is unreachable)']);
    // Where traffic from the destination's address would leave is no cause of the cell.
    expect(causesOf(cell(), {}, { routeGet2: { dev: 'ib0', text: 'dev ib0' } })).toEqual([]);
  });

  it('no RDMA device explains an rping cell, never a ping cell', () => {
    expect(causesOf(cell('rping'), {}, { noDevice: true })).toEqual(['34/ib1 has no RDMA device']);
    expect(causesOf(cell('ping'), {}, { noDevice: true })).toEqual([]);
  });

  it('without carrier: the port says why where RDMA is checked; with fabric.rdma: false the carrier does', () => {
    const noCarrier = { port2: '1: DOWN|2: Polling', flags: { ib1: 'BROADCAST,MULTICAST,UP' } };
    expect(causesOf(cell(), {}, noCarrier)).toEqual([
      '34/ib1: port mlx5_1/1 is DOWN (Polling): the port is looking for a link partner: check the cable and that the switch port is enabled',
    ]);
    expect(causesOf(cell(), {}, noCarrier, ethernet)).toEqual([
      '34/ib1 has no carrier: check the cable and the switch port',
    ]);
  });

  it('both ends, the source first; at most three in the detail', () => {
    const causes = causesOf(cell(), { port2: '1: DOWN|3: Disabled' }, { undeployed: true });
    expect(causes).toEqual([
      '16/ib1: port mlx5_1/1 is DOWN (Disabled): the port is disabled: enable it (ibportstate … enable, or on the switch)',
      '34/ib1: no rule from 172.16.34.2, table 942 empty (per-NIC routing not deployed: ibfleet deploy -i t.yaml --hosts 34)',
    ]);
    expect(
      explainFailure(
        '0/3 replies',
        ['a', 'b', 'c', 'd'].map((text) => ({ text })),
      ),
    ).toBe('0/3 replies — likely: a; b; c');
  });

  it('each cause carries its kind and end, which displays fold failing cells by', () => {
    expect(kindsOf(cell(), { port2: '1: DOWN|3: Disabled' }, { undeployed: true })).toEqual([
      'port-not-active 16/ib1',
      'routing-missing 34/ib1',
    ]);
    expect(kindsOf(cell(), { routeGet2: { dev: 'ib0', text: 'dev ib0' } }, { smLid: '0x0' })).toEqual([
      'other-nic 16/ib1',
      'no-subnet-manager 34/ib1',
    ]);
    expect(kindsOf(cell('rping'), { flags: { ib1: 'BROADCAST,MULTICAST' } }, { noDevice: true })).toEqual([
      'link-down 16/ib1',
      'no-rdma 34/ib1',
    ]);
  });
});
