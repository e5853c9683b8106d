import { describe, expect, it } from 'vitest';
import { loadInventory } from '../../src/inventory/load.js';
import { renderLabInventory } from '../../src/lab/lab-inventory.js';
import { conflictingRoutes, fabricTables, planLab } from '../../src/lab/plan.js';
import { rdmaLayout, renderSysfsTree } from '../../src/lab/rdma-emulation.js';
import { SEEDS_INVENTORY, seedsFleet } from './fleet.js';

const fleet = seedsFleet();

describe('planning a lab', () => {
  it("takes the inventory's hosts by default, with their names, roles, interfaces and managers", () => {
    const plan = planLab({ fleet });
    expect(plan.name).toBe('default');
    expect(plan.dir).toBe('/run/ibfleet-lab/default');
    expect(plan.rootLink).toBe('ibfl-default');
    expect(plan.mgmtSubnet).toBe('198.18.0.0/24');
    expect(plan.controllerAddress).toBe('198.19.255.254');
    expect(plan.hosts.map((h) => [h.id, h.name, h.role, h.manager, h.managerFrom, h.address, h.namespace])).toEqual([
      [16, 'cpuserver16', 'cpu', 'networkmanager', 'inventory', '198.18.0.16', 'ibfl-default-h16'],
      [34, 'memserver34', 'mem', 'netplan', 'inventory', '198.18.0.34', 'ibfl-default-h34'],
    ]);
    expect(plan.hosts[0]!.nics).toEqual([
      { index: 1, iface: 'ibs5f0', address: '172.16.16.1', prefixLength: 16, table: 941, port: 'f16n1' },
      { index: 2, iface: 'ibs5f1', address: '172.16.16.2', prefixLength: 16, table: 942, port: 'f16n2' },
    ]);
    expect(plan.pairs).toEqual([{ owner: 'alice', cpu: 16, mem: 34 }]);
    expect(fabricTables(plan)).toEqual([941, 942]);
  });

  it('adds hosts the inventory does not know as node<H>, netplan unless told otherwise', () => {
    const plan = planLab({
      fleet,
      name: 'big',
      hosts: [1, 34, 40],
      mgmtSubnet: '198.18.7.0/24',
      managers: new Map([[40, 'ifupdown']]),
      interfaces: new Map([[1, ['eth2', 'eth3']]]),
    });
    expect(
      plan.hosts.map((h) => [h.id, h.name, h.manager, h.managerFrom, h.address, h.nics.map((n) => n.iface).join(',')]),
    ).toEqual([
      [1, 'node1', 'netplan', 'default', '198.18.7.1', 'eth2,eth3'],
      [34, 'memserver34', 'netplan', 'inventory', '198.18.7.34', 'ib0,ib1'],
      [40, 'node40', 'ifupdown', 'option', '198.18.7.40', 'ib0,ib1'],
    ]);
    // alice's pair needs 16, which is not in this lab.
    expect(plan.pairs).toEqual([]);
  });

  it("follows the seeds' emulation when the inventory leaves managers to detection", () => {
    const auto = seedsFleet(SEEDS_INVENTORY.replace(', manager: networkmanager', '').replace(', manager: netplan', ''));
    expect(
      planLab({ fleet: auto, hosts: [16, 34, 35] }).hosts.map((h) => `${h.id}:${h.manager}:${h.managerFrom}`),
    ).toEqual(['16:networkmanager:default', '34:netplan:default', '35:netplan:default']);
  });

  it('lets --manager override the inventory', () => {
    expect(planLab({ fleet, managers: new Map([[34, 'ifupdown']]) }).hosts[1]!.manager).toBe('ifupdown');
  });

  it('fits host 254 into a /24 management subnet', () => {
    expect(planLab({ fleet, hosts: [254] }).hosts[0]!.address).toBe('198.18.0.254');
  });

  it('--nics 8 gives every host 8 NICs named after PCI slots, NIC n at .n in table 940 + n; the lab inventory says 8', () => {
    const plan = planLab({ fleet, hosts: [16, 34, 40], nics: { all: 8 } });
    expect(plan.fabric.nics).toBe(8);
    expect(plan.hosts.map((h) => h.nics.map((n) => n.iface).join(','))).toEqual(
      Array(3).fill('ibp12s0,ibp75s0,ibp141s0,ibp186s0,ibp18s0,ibp84s0,ibp151s0,ibp200s0'),
    );
    expect(plan.hosts[1]!.nics[7]).toEqual({
      index: 8,
      iface: 'ibp200s0',
      address: '172.16.34.8',
      prefixLength: 16,
      table: 948,
      port: 'f34n8',
    });
    expect(fabricTables(plan)).toEqual([941, 942, 943, 944, 945, 946, 947, 948]);
    const inventory = loadInventory(renderLabInventory(plan), '/run/ibfleet-lab/default/inventory.yaml');
    expect(inventory.fabric.nics).toBe(8);
    expect(inventory.hosts.map((h) => h.nics.length)).toEqual([8, 8, 8]);
  });

  it("--nics 16=8 beside the inventory's 2-NIC host: a mixed lab whose inventory gives the GPU node its own nics", () => {
    const plan = planLab({ fleet, nics: { hosts: new Map([[16, 8]]) } });
    expect(plan.fabric.nics).toBe(2);
    expect(plan.hosts.map((h) => `${h.id}:${h.nics.length}:${h.nics[0]!.iface}`)).toEqual(['16:8:ibp12s0', '34:2:ib0']);
    expect(fabricTables(plan)).toHaveLength(8);
    const text = renderLabInventory(plan);
    expect(text).toContain(
      '16: {name: cpuserver16, address: 198.18.0.16, role: cpu, nics: 8, interfaces: [ibp12s0, ibp75s0,',
    );
    expect(loadInventory(text, '/run/ibfleet-lab/default/inventory.yaml').hosts.map((h) => h.nics.length)).toEqual([
      8, 2,
    ]);
  });

  it("a GPU node's RDMA devices are numbered in PCI order, not in NIC order: one ConnectX-7 per NIC, port 1", () => {
    const host = planLab({ fleet, hosts: [40], nics: { all: 8 } }).hosts[0]!;
    expect(rdmaLayout(host).map((l) => `${l.iface}=${l.device}/${l.port}@${l.pci}`)).toEqual([
      'ibp12s0=mlx5_0/1@0000:0c:00.0',
      'ibp75s0=mlx5_2/1@0000:4b:00.0',
      'ibp141s0=mlx5_4/1@0000:8d:00.0',
      'ibp186s0=mlx5_6/1@0000:ba:00.0',
      'ibp18s0=mlx5_1/1@0000:12:00.0',
      'ibp84s0=mlx5_3/1@0000:54:00.0',
      'ibp151s0=mlx5_5/1@0000:97:00.0',
      'ibp200s0=mlx5_7/1@0000:c8:00.0',
    ]);
    const tree = renderSysfsTree(host);
    expect(tree.files).toContainEqual({
      path: 'devices/ibfleet-lab/0000:4b:00.0/infiniband/mlx5_2/hca_type',
      content: 'MT4129',
    });
    // Every port its own LID across the fabric, also with 16 NICs a host.
    const lids = [1, 2, 254].flatMap((id) =>
      renderSysfsTree(planLab({ fleet, hosts: [id], nics: { all: 16 } }).hosts[0]!)
        .files.filter((f) => f.path.endsWith('/lid'))
        .map((f) => f.content),
    );
    expect(new Set(lids).size).toBe(48);
  });

  it("the NetworkManager host keeps its dual-port ConnectX-3 with 2 NICs, and gets a GPU node's cards with 8", () => {
    expect(rdmaLayout(planLab({ fleet }).hosts[0]!).map((l) => `${l.device}/${l.port}`)).toEqual([
      'mlx4_0/1',
      'mlx4_0/2',
    ]);
    expect(new Set(rdmaLayout(planLab({ fleet, nics: { all: 8 } }).hosts[0]!).map((l) => l.device)).size).toBe(8);
  });

  it.each([
    [{ nics: { hosts: new Map([[40, 8]]) } }, /--nics names host 40, which is not in the lab \(--hosts 16,34\)/],
    [
      { nics: { all: 8 }, interfaces: new Map([[34, ['ib0', 'ib1']]]) },
      /host 34: 2 interface\(s\) given \(ib0,ib1\) but host 34 has 8 NICs \(--nics\)/,
    ],
    [
      { managers: new Map([[40, 'ifupdown' as const]]) },
      /--manager names host 40, which is not in the lab \(--hosts 16,34\)/,
    ],
    [
      { interfaces: new Map([[34, ['ib0']]]) },
      /host 34: 1 interface\(s\) given \(ib0\) but host 34 has 2 NICs in the inventory; give one name per NIC, or the count with --nics 34=1/,
    ],
    [{ mgmtSubnet: '172.16.0.0/24' }, /overlaps the fabric subnet 172.16.0.0\/16/],
    [{ mgmtSubnet: '198.19.0.0/16' }, /controller address 198.19.255.254 lies inside --mgmt-subnet 198.19.0.0\/16/],
    [{ hosts: [] as number[] }, /no lab hosts/],
    [{ name: 'Bad Name' }, /lab name "Bad Name" is not allowed/],
  ])('refuses %o', (input, message) => {
    expect(() => planLab({ fleet, ...input })).toThrow(message);
  });
});

describe('management routes that clash with a lab', () => {
  const routes = [
    { dst: 'default', dev: 'eth0' },
    { dst: '192.0.2.0/24', dev: 'eth0' },
    { dst: '198.18.0.0/24', dev: 'ibfl-other' },
    { dst: '198.16.0.0/13', dev: 'wg0' },
    { dst: '198.18.5.7', dev: 'tun0' },
  ];
  it.each([
    ['198.18.0.0/24', ['198.18.0.0/24 dev ibfl-other', '198.16.0.0/13 dev wg0']],
    ['198.18.5.0/24', ['198.16.0.0/13 dev wg0', '198.18.5.7 dev tun0']],
    ['10.77.0.0/24', []],
  ])('%s clashes with %j', (subnet, clashes) => {
    expect(conflictingRoutes(routes, subnet)).toEqual(clashes);
  });
});
