import { describe, expect, it } from 'vitest';
import { conflictingRoutes, fabricTables, planLab } from '../../src/lab/plan.js';
import { SEEDS_INVENTORY, seedsFleet } from './fleet.js';

const fleet = seedsFleet();

describe('planning a lab', () => {
  it('takes the inventory\'s hosts by default, with their names, roles, interfaces and managers', () => {
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
    const plan = planLab({ fleet, name: 'big', hosts: [1, 34, 40], mgmtSubnet: '198.18.7.0/24', managers: new Map([[40, 'ifupdown']]), interfaces: new Map([[1, ['eth2', 'eth3']]]) });
    expect(plan.hosts.map((h) => [h.id, h.name, h.manager, h.managerFrom, h.address, h.nics.map((n) => n.iface).join(',')])).toEqual([
      [1, 'node1', 'netplan', 'default', '198.18.7.1', 'eth2,eth3'],
      [34, 'memserver34', 'netplan', 'inventory', '198.18.7.34', 'ib0,ib1'],
      [40, 'node40', 'ifupdown', 'option', '198.18.7.40', 'ib0,ib1'],
    ]);
    // alice's pair needs 16, which is not in this lab.
    expect(plan.pairs).toEqual([]);
  });

  it('follows the seeds\' emulation when the inventory leaves managers to detection', () => {
    const auto = seedsFleet(SEEDS_INVENTORY.replace(', manager: networkmanager', '').replace(', manager: netplan', ''));
    expect(planLab({ fleet: auto, hosts: [16, 34, 35] }).hosts.map((h) => `${h.id}:${h.manager}:${h.managerFrom}`)).toEqual(['16:networkmanager:default', '34:netplan:default', '35:netplan:default']);
  });

  it('lets --manager override the inventory', () => {
    expect(planLab({ fleet, managers: new Map([[34, 'ifupdown']]) }).hosts[1]!.manager).toBe('ifupdown');
  });

  it('fits host 254 into a /24 management subnet', () => {
    expect(planLab({ fleet, hosts: [254] }).hosts[0]!.address).toBe('198.18.0.254');
  });

  it.each([
    [{ managers: new Map([[40, 'ifupdown' as const]]) }, /--manager names host 40, which is not in the lab \(--hosts 16,34\)/],
    [{ interfaces: new Map([[34, ['ib0']]]) }, /host 34: 1 interface\(s\) given \(ib0\) but the fabric has 2 NICs per host/],
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
