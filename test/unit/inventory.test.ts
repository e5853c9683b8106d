import { describe, expect, it } from 'vitest';
import { ConfigError, formatProblem, type InventoryProblem } from '../../src/errors.js';
import { deriveNicAddress, deriveRulePriority, deriveTable } from '../../src/inventory/derive.js';
import { parseCidr } from '../../src/inventory/ipv4.js';
import { loadInventory } from '../../src/inventory/load.js';
import type { Fleet } from '../../src/inventory/model.js';
import { hostOf, loadFixtureFleet } from '../fixtures/fixtures.js';

/** Inline inventories are named like a real file, so positions read as the user would see them. */
const FILE = 'lab/fleet.yaml';
const yaml = (...lines: string[]) => `${lines.join('\n')}\n`;
const FABRIC = ['fabric:', '  subnet: 172.16.0.0/16'];

function problemsOf(text: string): readonly InventoryProblem[] {
  try {
    loadInventory(text, FILE);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  throw new Error('the inventory was accepted');
}

const nicsOf = (fleet: Fleet, id: number) =>
  hostOf(fleet, id).nics.map((n) => ({
    iface: n.iface,
    address: `${n.address}/${n.prefixLength}`,
    table: n.table,
    priority: n.priority,
  }));

describe('deriving each NIC from the lab convention (NIC n of host h is 172.16.h.n, table and priority tableBase + n)', () => {
  const fleet = loadFixtureFleet('seeds.yaml');

  it('cpuserver16: ibs5f0 is 172.16.16.1 in table 941, ibs5f1 is 172.16.16.2 in table 942', () => {
    expect(nicsOf(fleet, 16)).toEqual([
      { iface: 'ibs5f0', address: '172.16.16.1/16', table: 941, priority: 941 },
      { iface: 'ibs5f1', address: '172.16.16.2/16', table: 942, priority: 942 },
    ]);
  });

  it('memserver34: ib0 is 172.16.34.1 in table 941, ib1 is 172.16.34.2 in table 942 (interfaces from defaults)', () => {
    expect(nicsOf(fleet, 34)).toEqual([
      { iface: 'ib0', address: '172.16.34.1/16', table: 941, priority: 941 },
      { iface: 'ib1', address: '172.16.34.2/16', table: 942, priority: 942 },
    ]);
  });

  it("keeps the seeds' names, management addresses, roles, managers and pair", () => {
    expect(fleet.hosts.map((h) => [h.id, h.name, h.target, h.role, h.manager])).toEqual([
      [16, 'cpuserver16', '10.208.130.16', 'cpu', 'networkmanager'],
      [34, 'memserver34', '10.208.130.34', 'mem', 'netplan'],
    ]);
    expect(fleet.pairs).toEqual([{ owner: 'alice', cpu: 16, mem: 34 }]);
    expect(fleet.fabric).toMatchObject({ subnetText: '172.16.0.0/16', nics: 2, tableBase: 940 });
  });

  it.each([
    { subnet: '172.16.0.0/16', host: 16, nic: 1, address: '172.16.16.1' },
    { subnet: '172.16.0.0/16', host: 34, nic: 2, address: '172.16.34.2' },
    { subnet: '172.16.0.0/16', host: 254, nic: 4, address: '172.16.254.4' },
    { subnet: '10.0.0.0/8', host: 34, nic: 1, address: '10.0.34.1' },
    { subnet: '192.168.0.0/16', host: 1, nic: 2, address: '192.168.1.2' },
  ])('$subnet: NIC $nic of host $host is $address', ({ subnet, host, nic, address }) => {
    expect(deriveNicAddress(parseCidr(subnet)!.cidr, host, nic)).toBe(address);
  });

  it('tableBase 32763 with 2 NICs puts the last rule at 32765, just ahead of main: accepted', () => {
    const fleet = loadInventory(yaml(...FABRIC, '  tableBase: 32763', 'hosts:', '  5: { name: a }'), FILE);
    expect(nicsOf(fleet, 5).map((n) => n.priority)).toEqual([32764, 32765]);
  });

  it.each([
    { tableBase: 940, nic: 1, table: 941 },
    { tableBase: 940, nic: 2, table: 942 },
    { tableBase: 100, nic: 4, table: 104 },
  ])('tableBase $tableBase: NIC $nic uses table $table at rule priority $table', ({ tableBase, nic, table }) => {
    expect(deriveTable(tableBase, nic)).toBe(table);
    expect(deriveRulePriority(tableBase, nic)).toBe(table);
  });

  it('orders hosts by number whatever order the file lists them in', () => {
    const fleet = loadInventory(
      yaml(...FABRIC, 'hosts:', '  34: { name: b }', '  2: { name: c }', '  16: { name: a }'),
      FILE,
    );
    expect(fleet.hosts.map((h) => h.id)).toEqual([2, 16, 34]);
  });

  it('whole numbers written with leading zeros are decimal, as host numbers are (YAML 1.2 has no implicit octal): tableBase 0940 is 940', () => {
    const fleet = loadInventory(
      yaml(...FABRIC, '  nics: 02', '  tableBase: 0940', 'defaults:', '  port: 022', 'hosts:', '  16: { name: a }'),
      FILE,
    );
    expect(fleet.fabric).toMatchObject({ nics: 2, tableBase: 940 });
    expect(hostOf(fleet, 16).port).toBe(22);
  });

  it('fabric.nics and tableBase default to 2 and 940; interfaces default to ib0, ib1, …', () => {
    const fleet = loadInventory(yaml(...FABRIC, 'hosts:', '  5: { name: a }'), FILE);
    expect(fleet.fabric).toMatchObject({ nics: 2, tableBase: 940, rdma: true });
    expect(nicsOf(fleet, 5).map((n) => n.iface)).toEqual(['ib0', 'ib1']);
  });

  it('fabric.rdma: false marks plain Ethernet NICs (status then skips the RDMA checks)', () => {
    const fleet = loadInventory(yaml(...FABRIC, '  rdma: false', 'hosts:', '  5: { name: a }'), FILE);
    expect(fleet.fabric.rdma).toBe(false);
  });

  it('four NICs per host get .1 to .4 and tables tableBase+1 to tableBase+4', () => {
    const fleet = loadInventory(
      yaml('fabric:', '  subnet: 10.20.0.0/16', '  nics: 4', '  tableBase: 100', 'hosts:', '  9: { name: a }'),
      FILE,
    );
    expect(nicsOf(fleet, 9)).toEqual([
      { iface: 'ib0', address: '10.20.9.1/16', table: 101, priority: 101 },
      { iface: 'ib1', address: '10.20.9.2/16', table: 102, priority: 102 },
      { iface: 'ib2', address: '10.20.9.3/16', table: 103, priority: 103 },
      { iface: 'ib3', address: '10.20.9.4/16', table: 104, priority: 104 },
    ]);
  });

  it('sixteen NICs per host get .1 to .16, tables and priorities tableBase+1 to tableBase+16', () => {
    const fleet = loadInventory(yaml(...FABRIC, '  nics: 16', 'hosts:', '  9: { name: a }'), FILE);
    const nics = nicsOf(fleet, 9);
    expect(nics).toHaveLength(16);
    expect(nics[15]).toEqual({ iface: 'ib15', address: '172.16.9.16/16', table: 956, priority: 956 });
  });

  it("a host's own nics overrides defaults' and the fabric's: 8-NIC GPU nodes beside 2-NIC CPU servers", () => {
    const gpu = '[ibp12s0, ibp18s0, ibp75s0, ibp84s0, ibp141s0, ibp151s0, ibp186s0, ibp200s0]';
    const fleet = loadInventory(
      yaml(
        ...FABRIC,
        'defaults:',
        '  nics: 8',
        `  interfaces: ${gpu}`,
        'hosts:',
        '  16: { name: gpu16 }',
        '  17: { name: gpu17, nics: 4, interfaces: [a, b, c, d] }',
        '  34: { name: cpu34, nics: 2, interfaces: [ib0, ib1] }',
      ),
      FILE,
    );
    expect(fleet.fabric.nics).toBe(2);
    expect(nicsOf(fleet, 16).map((n) => `${n.iface} ${n.address} ${n.table}`)).toEqual([
      'ibp12s0 172.16.16.1/16 941',
      'ibp18s0 172.16.16.2/16 942',
      'ibp75s0 172.16.16.3/16 943',
      'ibp84s0 172.16.16.4/16 944',
      'ibp141s0 172.16.16.5/16 945',
      'ibp151s0 172.16.16.6/16 946',
      'ibp186s0 172.16.16.7/16 947',
      'ibp200s0 172.16.16.8/16 948',
    ]);
    expect(nicsOf(fleet, 17)).toHaveLength(4);
    expect(nicsOf(fleet, 34).map((n) => n.table)).toEqual([941, 942]);
  });

  it('a host with its own nics and no interface names anywhere gets ib0, ib1, … of its own count', () => {
    const fleet = loadInventory(yaml(...FABRIC, 'hosts:', '  16: { name: a, nics: 8 }', '  34: { name: b }'), FILE);
    expect(nicsOf(fleet, 16).map((n) => n.iface)).toEqual(['ib0', 'ib1', 'ib2', 'ib3', 'ib4', 'ib5', 'ib6', 'ib7']);
    expect(nicsOf(fleet, 34).map((n) => n.iface)).toEqual(['ib0', 'ib1']);
  });

  it.each(['ib0.8001', 'ib_fab-2', 'ibp65s0f0np0abc', 'IB0', '..x', 'a'])(
    'accepts the odd but valid interface name %s',
    (name) => {
      const fleet = loadInventory(yaml(...FABRIC, 'hosts:', `  5: { name: a, interfaces: ["${name}", other] }`), FILE);
      expect(hostOf(fleet, 5).nics[0]!.iface).toBe(name);
    },
  );

  it.each(['10.208.130.16', 'cpuserver16.lab.example.org', 'gpu_node7', 'fe80::1', '2001:db8::16', 'n'])(
    'accepts the management address %s (a host name, an ssh_config alias or an IP address)',
    (address) => {
      const fleet = loadInventory(yaml(...FABRIC, 'hosts:', `  5: { name: a, address: "${address}" }`), FILE);
      expect(hostOf(fleet, 5).address).toBe(address);
    },
  );
});

describe('defaults', () => {
  const fleet = loadInventory(
    yaml(
      ...FABRIC,
      'defaults:',
      '  user: ibadmin',
      '  port: 2222',
      '  sudo: true',
      '  role: mem',
      '  manager: ifupdown',
      '  interfaces: [ibp1s0, ibp2s0]',
      '  identityFile: keys/lab',
      'hosts:',
      '  16: { name: cpuserver16, role: cpu, user: root, sudo: false, port: 22, manager: networkmanager, interfaces: [ibs5f0, ibs5f1], identityFile: /keys/cpu }',
      '  34: { address: 10.208.130.34 }',
    ),
    '/srv/lab/fleet.yaml',
  );

  it('apply to every host field the host does not set itself', () => {
    expect(hostOf(fleet, 34)).toMatchObject({
      user: 'ibadmin',
      port: 2222,
      sudo: true,
      role: 'mem',
      manager: 'ifupdown',
      identityFile: '/srv/lab/keys/lab',
    });
    expect(hostOf(fleet, 34).nics.map((n) => n.iface)).toEqual(['ibp1s0', 'ibp2s0']);
  });

  it("yield to the host's own values", () => {
    expect(hostOf(fleet, 16)).toMatchObject({
      user: 'root',
      port: 22,
      sudo: false,
      role: 'cpu',
      manager: 'networkmanager',
      identityFile: '/keys/cpu',
    });
    expect(hostOf(fleet, 16).nics.map((n) => n.iface)).toEqual(['ibs5f0', 'ibs5f1']);
  });

  it('a host without name is called host<N> and reached at its address; without address, SSH targets its name', () => {
    expect(hostOf(fleet, 34)).toMatchObject({ name: 'host34', target: '10.208.130.34', address: '10.208.130.34' });
    const named = loadInventory(yaml(...FABRIC, 'hosts:', '  16: { name: cpuserver16 }'), FILE);
    expect(hostOf(named, 16)).toMatchObject({ name: 'cpuserver16', target: 'cpuserver16', address: undefined });
  });

  it('manager defaults to auto; user, port and sudo stay unset so ~/.ssh/config and the resolved user decide', () => {
    const bare = loadInventory(yaml(...FABRIC, 'hosts:', '  16: { name: cpuserver16 }'), FILE);
    expect(hostOf(bare, 16)).toMatchObject({
      manager: 'auto',
      user: undefined,
      port: undefined,
      sudo: undefined,
      role: undefined,
    });
  });

  it('sudo: true under defaults holds for every host unless a host says sudo: false', () => {
    expect(hostOf(fleet, 34).sudo).toBe(true);
    expect(hostOf(fleet, 16).sudo).toBe(false);
  });

  it("resolves relative identity files and ssh paths against the inventory's folder, leaves ~ to SSH", () => {
    const withSsh = loadInventory(
      yaml(
        ...FABRIC,
        'hosts:',
        '  16: { name: a, identityFile: ~/.ssh/id_lab }',
        'ssh:',
        '  knownHosts: known_hosts',
        '  config: /etc/ssh/ssh_config',
      ),
      '/srv/lab/fleet.yaml',
    );
    expect(hostOf(withSsh, 16).identityFile).toBe('~/.ssh/id_lab');
    expect(withSsh.ssh).toEqual({
      knownHosts: '/srv/lab/known_hosts',
      identityFile: undefined,
      config: '/etc/ssh/ssh_config',
    });
  });
});

interface BadCase {
  /** What is wrong, as a specification. */
  readonly name: string;
  readonly text: string;
  /** line:col of the (first) problem. */
  readonly at: string;
  /** Words the message must contain: the offending value and what is allowed. */
  readonly says: readonly string[];
  /** Number of problems when more than one is expected. */
  readonly count?: number;
}

const host16 = (fields: string) => yaml(...FABRIC, 'hosts:', `  16: { name: a${fields} }`);
const withPairs = (pair: string) =>
  yaml(...FABRIC, 'hosts:', '  16: { name: a }', '  34: { name: b }', 'pairs:', `  - ${pair}`);
const IFACE_RULE = ['not a valid Linux interface name', '1-15 characters of A-Z a-z 0-9 _ . -'];

const BAD: readonly BadCase[] = [
  // Host numbers are the third octet: 1..254, each once.
  {
    name: 'host number 0',
    text: yaml(...FABRIC, 'hosts:', '  0: { name: a }'),
    at: '4:3',
    says: ['host number "0"', 'outside 1..254'],
  },
  {
    name: 'host number 255',
    text: yaml(...FABRIC, 'hosts:', '  255: { name: a }'),
    at: '4:3',
    says: ['"255"', 'outside 1..254'],
  },
  {
    name: 'host number 300',
    text: yaml(...FABRIC, 'hosts:', '  16: { name: a }', '  300: { name: b }'),
    at: '5:3',
    says: ['"300"', 'outside 1..254', 'third octet'],
  },
  {
    name: 'host number abc',
    text: yaml(...FABRIC, 'hosts:', '  abc: { name: a }'),
    at: '4:3',
    says: ['"abc"', 'outside 1..254'],
  },
  {
    name: 'host number -1',
    text: yaml(...FABRIC, 'hosts:', '  -1: { name: a }'),
    at: '4:3',
    says: ['"-1"', 'outside 1..254'],
  },
  {
    name: 'host 16 listed twice',
    text: yaml(...FABRIC, 'hosts:', '  16: { name: a }', '  16: { name: b }'),
    at: '5:3',
    says: ['hosts', 'key 16 is repeated', 'first at line 4'],
  },
  {
    name: 'host 16 written again as 016',
    text: yaml(...FABRIC, 'hosts:', '  16: { name: a }', '  016: { name: b }'),
    at: '5:3',
    says: ['hosts', 'key 016 is repeated', 'first at line 4 as 16'],
  },
  {
    name: 'host number 1e1 (YAML: the float 10)',
    text: yaml(...FABRIC, 'hosts:', '  1e1: { name: a }'),
    at: '4:3',
    says: [
      'host number 1e1 is not written in decimal (YAML reads it as 10)',
      'plain decimal digits 1..254; write 10 if that is the host you mean',
    ],
  },
  {
    name: 'host number 0x10 (YAML: hexadecimal 16)',
    text: yaml(...FABRIC, 'hosts:', '  0x10: { name: a }'),
    at: '4:3',
    says: ['host number 0x10 is not written in decimal (YAML reads it as 16)', 'write 16 if'],
  },
  {
    name: 'host number 0o22 (YAML: octal 18)',
    text: yaml(...FABRIC, 'hosts:', '  0o22: { name: a }'),
    at: '4:3',
    says: ['host number 0o22 is not written in decimal (YAML reads it as 18)'],
  },
  {
    name: 'host number +17',
    text: yaml(...FABRIC, 'hosts:', '  +17: { name: a }'),
    at: '4:3',
    says: ['host number +17 is not written in decimal (YAML reads it as 17)'],
  },
  {
    name: 'host number 0x1000 (4096: not a host even if meant)',
    text: yaml(...FABRIC, 'hosts:', '  0x1000: { name: a }'),
    at: '4:3',
    says: ['host number 0x1000 is not written in decimal (YAML reads it as 4096)', 'plain decimal digits 1..254)'],
  },
  {
    name: 'a null host key ~ after a blank line',
    text: yaml(...FABRIC, 'hosts:', '  16: { name: a }', '', '  ~: { name: b }'),
    at: '6:3',
    says: ['host key ~ is null, not a host number 1..254'],
  },
  {
    name: 'a pair naming host 0x10',
    text: withPairs('{ owner: alice, cpu: 0x10, mem: 34 }'),
    at: '7:26',
    says: ['pair of alice: cpu host 0x10 is not written in decimal (YAML reads it as 16)'],
  },
  // Every whole number follows the host numbers' rule: tableBase 1e3 is not table base 1000.
  {
    name: 'tableBase 1e3 (YAML: the float 1000)',
    text: yaml(...FABRIC, '  tableBase: 1e3', 'hosts:', '  16: { name: a }'),
    at: '3:14',
    says: [
      'fabric.tableBase = 1e3 is not written in decimal (YAML reads it as 1000)',
      'whole numbers are plain decimal digits; write 1000 if that is what you mean',
    ],
  },
  {
    name: 'tableBase 0x10 (YAML: hexadecimal 16)',
    text: yaml(...FABRIC, '  tableBase: 0x10', 'hosts:', '  16: { name: a }'),
    at: '3:14',
    says: ['fabric.tableBase = 0x10 is not written in decimal (YAML reads it as 16)'],
  },
  {
    name: 'tableBase 940.0',
    text: yaml(...FABRIC, '  tableBase: 940.0', 'hosts:', '  16: { name: a }'),
    at: '3:14',
    says: ['fabric.tableBase = 940.0 is not written in decimal (YAML reads it as 940)'],
  },
  {
    name: 'nics 0o2 (YAML: octal 2)',
    text: yaml(...FABRIC, '  nics: 0o2', 'hosts:', '  16: { name: a }'),
    at: '3:9',
    says: ['fabric.nics = 0o2 is not written in decimal (YAML reads it as 2)'],
  },
  {
    name: 'a host port 0x16 (YAML: 22)',
    text: host16(', port: 0x16'),
    at: '4:24',
    says: ['hosts.16.port = 0x16 is not written in decimal (YAML reads it as 22)', 'write 22 if'],
  },
  {
    name: 'a default port +22',
    text: yaml(...FABRIC, 'defaults:', '  port: +22', 'hosts:', '  16: { name: a }'),
    at: '4:9',
    says: ['defaults.port = +22 is not written in decimal (YAML reads it as 22)'],
  },
  {
    name: 'a negative tableBase: the range says what is wrong, not the spelling',
    text: yaml(...FABRIC, '  tableBase: -5', 'hosts:', '  16: { name: a }'),
    at: '3:14',
    says: ['fabric.tableBase = -5: tableBase must be at least 1'],
  },
  {
    name: 'host 16 written again as "016"',
    text: yaml(...FABRIC, 'hosts:', '  16: { name: a }', '  "016": { name: b }'),
    at: '5:3',
    says: ['host number "016" is repeated', 'host 16', 'each host number appears once'],
  },

  // Interface names: what the kernel accepts and no shell has to quote.
  {
    name: 'an interface name of 16 characters',
    text: host16(', interfaces: [abcdefghijklmnop, ib1]'),
    at: '4:31',
    says: ['hosts.16.interfaces[0] = "abcdefghijklmnop"', ...IFACE_RULE],
  },
  {
    name: 'an interface name with a space (not two names: 0 has no letter)',
    text: host16(', interfaces: ["ib 0", ib1]'),
    at: '4:31',
    says: ['"ib 0"', ...IFACE_RULE],
  },
  {
    name: 'an interface name with ;',
    text: host16(', interfaces: [ib0, "ib1;reboot"]'),
    at: '4:36',
    says: ['hosts.16.interfaces[1] = "ib1;reboot"', ...IFACE_RULE],
  },
  {
    name: 'an interface name with $(x)',
    text: host16(', interfaces: ["$(x)", ib1]'),
    at: '4:31',
    says: ['"$(x)"', ...IFACE_RULE],
  },
  {
    name: 'the interface name ..',
    text: host16(', interfaces: ["..", ib1]'),
    at: '4:31',
    says: ['".."', 'not "." or ".."'],
  },
  {
    name: 'the interface name .',
    text: host16(', interfaces: [".", ib1]'),
    at: '4:31',
    says: ['"."', 'not "." or ".."'],
  },
  {
    name: 'an interface name that ip(8) would read as an option',
    text: host16(', interfaces: ["-x", ib1]'),
    at: '4:31',
    says: ['"-x"', 'not starting with -'],
  },
  {
    name: "ifupdown's --all event as an interface name",
    text: host16(', interfaces: [ib0, "--all"]'),
    at: '4:36',
    says: ['"--all"', 'not starting with -'],
  },
  { name: 'an empty interface name', text: host16(', interfaces: ["", ib1]'), at: '4:31', says: ['""', ...IFACE_RULE] },
  // `[ib0 ib1]` is YAML for one item "ib0 ib1": the fix is the comma, not the naming rule.
  {
    name: 'two interface names without a comma',
    text: host16(', interfaces: [ib0 ib1]'),
    at: '4:31',
    says: ['hosts.16.interfaces[0] = "ib0 ib1": one name with spaces in it: a missing comma? write [ib0, ib1]'],
  },
  {
    name: 'three interface names without commas, under defaults',
    text: yaml(...FABRIC, 'defaults:', '  interfaces: [ibs5f0  ibs5f1 ib2]', 'hosts:', '  16: { name: a }'),
    at: '4:16',
    says: ['a missing comma? write [ibs5f0, ibs5f1, ib2]'],
  },
  {
    name: 'a bad interface name under defaults',
    text: yaml(...FABRIC, 'defaults:', '  interfaces: [ib0, "ib/1"]', 'hosts:', '  16: { name: a }'),
    at: '4:21',
    says: ['defaults.interfaces[1] = "ib/1"', ...IFACE_RULE],
  },
  {
    name: 'one interface listed for two NICs',
    text: host16(', interfaces: [ib0]'),
    at: '4:30',
    says: ['host 16 lists 1 interface(s)', 'fabric.nics is 2', 'one interface per NIC'],
  },
  {
    name: 'three interfaces listed for two NICs',
    text: host16(', interfaces: [ib0, ib1, ib2]'),
    at: '4:30',
    says: ['3 interface(s)', 'fabric.nics is 2'],
  },
  {
    name: 'default interfaces that do not match fabric.nics',
    text: yaml(
      'fabric:',
      '  subnet: 172.16.0.0/16',
      '  nics: 3',
      'defaults:',
      '  interfaces: [ib0, ib1]',
      'hosts:',
      '  16: { name: a }',
    ),
    at: '5:15',
    says: ['host 16 lists 2 interface(s)', 'fabric.nics is 3'],
  },
  {
    name: 'the same interface for both NICs',
    text: host16(', interfaces: [ib0, ib0]'),
    at: '4:30',
    says: ['interface ib0 twice', 'each NIC has its own interface'],
  },

  // Unknown keys, at every level, name what is allowed there.
  {
    name: 'an unknown top-level key',
    text: yaml(...FABRIC, 'hosts:', '  16: { name: a }', 'extra: 1'),
    at: '5:1',
    says: ['unknown key "extra"', 'allowed here: fabric, defaults, hosts, pairs, ssh'],
  },
  {
    name: 'fabric.rdma that is not a boolean',
    text: yaml(...FABRIC, '  rdma: maybe', 'hosts:', '  16: { name: a }'),
    at: '3:9',
    says: ['fabric.rdma', 'rdma is true', 'false (plain Ethernet'],
  },
  {
    name: 'an unknown fabric key',
    text: yaml(...FABRIC, '  mtu: 2044', 'hosts:', '  16: { name: a }'),
    at: '3:3',
    says: ['fabric.mtu: unknown key "mtu"', 'allowed here: subnet, nics, rdma, tableBase'],
  },
  {
    name: 'an unknown host key (a typo)',
    text: host16(', nmae: b'),
    at: '4:18',
    says: [
      'hosts.16.nmae: unknown key "nmae"; did you mean "name"?',
      'allowed here: role, user, port, sudo, interfaces, nics, manager, identityFile, name, address',
    ],
  },
  {
    name: 'an unknown defaults key',
    text: yaml(...FABRIC, 'defaults:', '  usr: root', 'hosts:', '  16: { name: a }'),
    at: '4:3',
    says: [
      'defaults.usr: unknown key "usr"; did you mean "user"?',
      'allowed here: role, user, port, sudo, interfaces, nics, manager, identityFile',
    ],
  },
  {
    name: 'a misspelt manager key',
    text: host16(', manger: netplan'),
    at: '4:18',
    says: ['hosts.16.manger: unknown key "manger"; did you mean "manager"? (allowed here: role,'],
  },
  {
    name: 'a misspelt pair key',
    text: withPairs('{ owner: alice, cpu: 16, mem: 34, onwer: bob }'),
    at: '7:39',
    says: ['pairs[0].onwer: unknown key "onwer"; did you mean "owner"?'],
  },
  {
    name: 'an unknown key close to none: no guess',
    text: host16(', storage: x'),
    at: '4:18',
    says: ['hosts.16.storage: unknown key "storage" (allowed here:'],
  },
  {
    name: 'an unknown pair key',
    text: withPairs('{ owner: alice, cpu: 16, mem: 34, gpu: 1 }'),
    at: '7:39',
    says: ['pairs[0].gpu: unknown key "gpu"', 'allowed here: owner, cpu, mem'],
  },
  {
    name: 'an unknown ssh key',
    text: yaml(...FABRIC, 'hosts:', '  16: { name: a }', 'ssh:', '  knownhosts: k'),
    at: '6:3',
    says: ['ssh.knownhosts', 'allowed here: knownHosts, identityFile, config'],
  },

  // Managers.
  {
    name: 'an unknown manager on a host',
    text: host16(', manager: systemd'),
    at: '4:27',
    says: ['hosts.16.manager = "systemd"', 'unknown manager', 'auto, networkmanager, ifupdown, netplan'],
  },
  {
    name: 'an unknown manager under defaults',
    text: yaml(...FABRIC, 'defaults:', '  manager: nm', 'hosts:', '  16: { name: a }'),
    at: '4:12',
    says: ['defaults.manager = "nm"', 'unknown manager', 'auto, networkmanager, ifupdown, netplan'],
  },

  // Pairs.
  {
    name: 'a pair naming an unknown host',
    text: withPairs('{ owner: alice, cpu: 16, mem: 35 }'),
    at: '7:35',
    says: ['pair of alice', 'mem host 35 is not in hosts', 'known hosts: 16, 34'],
  },
  {
    name: 'a pair whose cpu and mem are one host',
    text: withPairs('{ owner: alice, cpu: 16, mem: 16 }'),
    at: '7:35',
    says: ['cpu and mem are both host 16', 'two different machines'],
  },
  {
    name: 'a pair without owner',
    text: withPairs('{ cpu: 16, mem: 34 }'),
    at: '7:5',
    says: ['pairs[0].owner is required'],
  },

  // The fabric subnet must carry <net>.<host>.<nic>.
  {
    name: 'a malformed subnet',
    text: host16('').replace('172.16.0.0/16', '172.16.0/16'),
    at: '2:11',
    says: ['fabric.subnet = "172.16.0/16"', 'not an IPv4 network', 'address/prefix'],
  },
  {
    name: 'a subnet with an octet above 255',
    text: host16('').replace('172.16.0.0/16', '172.256.0.0/16'),
    at: '2:11',
    says: ['"172.256.0.0/16"', 'not an IPv4 network'],
  },
  {
    name: 'a subnet with host bits set',
    text: host16('').replace('172.16.0.0/16', '172.16.1.0/16'),
    at: '2:11',
    says: ['172.16.1.0/16 has host bits set', 'did you mean 172.16.0.0/16?'],
  },
  {
    name: 'a /25 subnet',
    text: host16('').replace('172.16.0.0/16', '172.16.0.0/25'),
    at: '2:11',
    says: ['172.16.0.0/25 cannot carry the convention', '/24 or shorter'],
  },
  {
    name: 'a host whose addresses fall outside a /17',
    text: yaml('fabric:', '  subnet: 172.16.0.0/17', 'hosts:', '  16: { name: a }', '  200: { name: b }'),
    at: '5:3',
    says: ['host 200', '172.16.200.1', 'outside fabric subnet 172.16.0.0/17', 'widen fabric.subnet'],
  },
  {
    name: 'tableBase 252 with one NIC (table 253, default)',
    text: yaml('fabric:', '  subnet: 172.16.0.0/16', '  nics: 1', '  tableBase: 252', 'hosts:', '  16: { name: a }'),
    at: '4:14',
    says: ['fabric.tableBase = 252 puts NIC 1 in reserved table 253', 'belong to the kernel'],
  },
  {
    name: 'tableBase 253 with one NIC (table 254, main)',
    text: yaml('fabric:', '  subnet: 172.16.0.0/16', '  nics: 1', '  tableBase: 253', 'hosts:', '  16: { name: a }'),
    at: '4:14',
    says: ['reserved table 254', '254 (main)'],
  },
  {
    name: 'tableBase 254 with one NIC (table 255, local)',
    text: yaml('fabric:', '  subnet: 172.16.0.0/16', '  nics: 1', '  tableBase: 254', 'hosts:', '  16: { name: a }'),
    at: '4:14',
    says: ['reserved table 255', '255 (local)'],
  },
  {
    name: 'tableBase 251 putting NIC 2 in table 253',
    text: yaml(...FABRIC, '  tableBase: 251', 'hosts:', '  16: { name: a }'),
    at: '3:14',
    says: ['puts NIC 2 in reserved table 253'],
  },
  // A NIC's rule must come before `32766: from all lookup main`, or main answers first.
  {
    name: 'tableBase 40000: rules at 40001, 40002, behind main',
    text: yaml(...FABRIC, '  tableBase: 40000', 'hosts:', '  16: { name: a }'),
    at: '3:14',
    says: [
      "fabric.tableBase = 40000 puts the rules of NICs 1..2 at priority 40001..40002, at or after the main table's rule (32766)",
      'strictly between the local rule (0) and main (32766): tableBase at most 32763 with 2 NICs',
    ],
  },
  {
    name: "tableBase 32764: NIC 2's rule at 32766, the main rule's own priority",
    text: yaml(...FABRIC, '  tableBase: 32764', 'hosts:', '  16: { name: a }'),
    at: '3:14',
    says: ["puts NIC 2's rule at priority 32766"],
  },
  {
    name: 'seventeen NICs per host',
    text: yaml(...FABRIC, '  nics: 17', 'hosts:', '  16: { name: a }'),
    at: '3:9',
    says: ['fabric.nics = 17', 'nics is 1..16'],
  },
  {
    name: 'seventeen NICs on one host',
    text: host16(', nics: 17'),
    at: '4:24',
    says: ['hosts.16.nics = 17', 'nics is 1..16'],
  },
  {
    name: 'no NIC at all under defaults',
    text: yaml(...FABRIC, 'defaults:', '  nics: 0', 'hosts:', '  16: { name: a }'),
    at: '4:9',
    says: ['defaults.nics = 0', 'nics is 1..16'],
  },
  {
    name: "a host's nics in hexadecimal",
    text: host16(', nics: 0x8'),
    at: '4:24',
    says: ['hosts.16.nics = 0x8 is not written in decimal (YAML reads it as 8)'],
  },
  // A host's own NIC count must agree with its interface names, wherever each is set.
  {
    name: 'a host with 8 NICs and 2 interfaces of its own',
    text: host16(', nics: 8, interfaces: [ib0, ib1]'),
    at: '4:39',
    says: ['host 16 lists 2 interface(s) but its nics is 8', 'one interface per NIC'],
  },
  {
    name: 'a host with 8 NICs inheriting 2 interfaces from defaults',
    text: yaml(...FABRIC, 'defaults:', '  interfaces: [ib0, ib1]', 'hosts:', '  16: { name: a, nics: 8 }'),
    at: '6:24',
    says: [
      'host 16 has nics: 8 but inherits 2 interface(s) from defaults.interfaces',
      'give host 16 its own interfaces',
    ],
  },
  {
    name: 'defaults.nics 8 and a host listing 2 interfaces',
    text: yaml(...FABRIC, 'defaults:', '  nics: 8', 'hosts:', '  16: { name: a, interfaces: [ib0, ib1] }'),
    at: '6:30',
    says: ['host 16 lists 2 interface(s) but defaults.nics is 8'],
  },
  // Every NIC's table stays clear of the kernel's, also on the hosts with more NICs than the fabric's count.
  {
    name: 'tableBase 245 and a host with 8 NICs (NIC 8 in table 253)',
    text: yaml(
      ...FABRIC,
      '  tableBase: 245',
      'hosts:',
      '  16: { name: a, nics: 8, interfaces: [a0, a1, a2, a3, a4, a5, a6, a7] }',
      '  34: { name: b }',
    ),
    at: '3:14',
    says: ['fabric.tableBase = 245 puts NIC 8 in reserved table 253 (host 16 has 8 NICs or more)'],
  },
  {
    name: 'tableBase 32755 and hosts with 16 NICs: rules behind main',
    text: yaml(
      ...FABRIC,
      '  tableBase: 32755',
      'defaults:',
      '  nics: 16',
      'hosts:',
      '  16: { name: a }',
      '  17: { name: b }',
      '  34: { name: c, nics: 2 }',
    ),
    at: '3:14',
    says: [
      'puts the rules of NICs 11..16 at priority 32766..32771',
      'main would answer first (hosts 16-17 have 16 NICs or more)',
      'tableBase at most 32749 with 16 NICs',
    ],
  },
  { name: 'no fabric section', text: yaml('hosts:', '  16: { name: a }'), at: '1:1', says: ['fabric is required'] },
  {
    name: 'fabric given as a bare subnet',
    text: yaml('fabric: 172.16.0.0/16', 'hosts:', '  16: { name: a }'),
    at: '1:9',
    says: ['fabric = "172.16.0.0/16"', 'expected object'],
  },
  {
    name: 'no hosts section',
    text: yaml(...FABRIC),
    at: '1:1',
    says: ['hosts is required', 'map of host number → host'],
  },
  {
    name: 'hosts given as a list',
    text: yaml(...FABRIC, 'hosts:', '  - 16'),
    at: '4:3',
    says: ['hosts is a map of host number → host'],
  },
  {
    name: 'interfaces given as one word',
    text: host16(', interfaces: ib0'),
    at: '4:30',
    says: ['hosts.16.interfaces = "ib0"', 'a list of interface names, NIC 1 first'],
  },
  {
    name: 'a key repeated in a flow map',
    text: host16(', name: b'),
    at: '4:18',
    says: ['hosts.16: key name is repeated', 'first at line 4'],
  },

  // Management addresses and names.
  {
    name: "a management address equal to another host's fabric address",
    text: yaml(...FABRIC, 'hosts:', '  16: { name: a, address: 172.16.34.2 }', '  34: { name: b }'),
    at: '4:27',
    says: ['management address 172.16.34.2', 'fabric address of host 34 NIC 2 (ib1)', 'not an IPoIB address'],
  },
  {
    name: "a management address equal to the host's own fabric address",
    text: host16(', address: 172.16.16.1'),
    at: '4:27',
    says: ['management address 172.16.16.1', 'host 16 NIC 1 (ib0)'],
  },
  {
    name: 'two hosts with one name',
    text: yaml(...FABRIC, 'hosts:', '  16: { name: twin }', '  34: { name: twin }'),
    at: '5:15',
    says: ["host 34: name twin is also host 16's", 'unique'],
  },
  {
    name: 'two hosts with one management address',
    text: yaml(...FABRIC, 'hosts:', '  16: { name: a, address: 10.0.0.1 }', '  34: { name: b, address: 10.0.0.1 }'),
    at: '5:27',
    says: ["host 34: address 10.0.0.1 is also host 16's"],
  },
  {
    name: 'a host with neither name nor address',
    text: yaml(...FABRIC, 'hosts:', '  16: { role: cpu }'),
    at: '4:3',
    says: ['host 16 has neither name nor address', 'address:', 'name:'],
  },
  {
    name: 'a host with no fields at all',
    text: yaml(...FABRIC, 'hosts:', '  16:'),
    at: '4:3',
    says: ['host 16 has neither name nor address'],
  },
  {
    name: 'a host that is a number, not a map',
    text: yaml(...FABRIC, 'hosts:', '  16: 5'),
    at: '4:7',
    says: ['hosts.16 = 5', 'expected object'],
  },
  { name: 'a port of 0', text: host16(', port: 0'), at: '4:24', says: ['hosts.16.port = 0', '1..65535'] },
  // A management address reaches ssh and an exported Ansible inventory: a host name or an IP address, nothing a shell, ssh or Jinja reads.
  ...['x;id', 'a b', '-oProxyCommand=touch PWNED', "h{{ lookup('pipe','id') }}", '', 'host.'].map((address) => ({
    name: `the management address ${JSON.stringify(address)}`,
    text: host16(`, address: ${JSON.stringify(address)}`),
    at: '4:27',
    says: [
      `hosts.16.address = ${JSON.stringify(address)}`,
      'a host name (letters, digits, dots, dashes, underscores',
      'or an IP address',
    ],
  })),
  {
    name: 'sudo given as a word',
    text: host16(', sudo: yes'),
    at: '4:24',
    says: ['hosts.16.sudo = "yes"', 'true or false'],
  },

  // Not YAML, or not an inventory.
  {
    name: 'bad indentation',
    text: yaml(...FABRIC, ' hosts:', '  16: { name: a }'),
    at: '3:1',
    says: ['invalid YAML', 'same column'],
  },
  {
    name: 'a mis-indented host field',
    text: yaml(...FABRIC, 'hosts:', '  16:', '    name: a', '   address: b'),
    at: '6:1',
    says: ['invalid YAML'],
  },
  {
    name: 'an unclosed bracket',
    text: host16(', interfaces: [ib0, ib1'),
    at: '4:40',
    says: ['invalid YAML', 'end with a ]'],
    count: 2,
  },
  {
    name: 'a key repeated inside a host',
    text: yaml(...FABRIC, 'hosts:', '  16:', '    name: a', '    name: b'),
    at: '6:5',
    says: ['hosts.16: key name is repeated', 'first at line 5'],
  },
  { name: 'an empty file', text: '', at: '1:1', says: ['an inventory is a YAML map', 'inventory/fleet.yaml'] },
  { name: 'a file of comments only', text: '# nothing yet\n', at: '1:1', says: ['an inventory is a YAML map'] },
  { name: 'a list instead of a map', text: yaml('- 16', '- 34'), at: '1:1', says: ['an inventory is a YAML map'] },
];

describe('a bad inventory is refused with file:line:col, the offending value and what is allowed', () => {
  it.each(BAD.map((c) => [`${c.name} → line:col ${c.at}`, c] as const))('%s', (_, { text, at, says, count = 1 }) => {
    const problems = problemsOf(text);
    expect(problems).toHaveLength(count);
    const first = problems[0]!;
    expect(`${first.position.file}:${first.position.line}:${first.position.column}`).toBe(`${FILE}:${at}`);
    const shown = formatProblem(first);
    expect(shown.startsWith(`${FILE}:${at}: `)).toBe(true);
    for (const words of says) expect(shown).toContain(words);
  });

  it('reports every field problem at once, in file order', () => {
    const problems = problemsOf(
      yaml(...FABRIC, 'hosts:', '  16: { name: b, manager: systemd, interfaces: ["$(x)", ib1] }'),
    );
    expect(problems.map((p) => `${p.position.line}:${p.position.column} ${p.message}`)).toEqual([
      expect.stringMatching(/^4:27 .*unknown manager/),
      expect.stringMatching(/^4:49 .*not a valid Linux interface name/),
    ]);
  });

  it('reports every cross-field problem (host numbers, pairs) at once, in file order', () => {
    const problems = problemsOf(
      yaml(
        ...FABRIC,
        'hosts:',
        '  0: { name: a }',
        '  16: { name: b }',
        'pairs:',
        '  - { owner: bob, cpu: 16, mem: 99 }',
      ),
    );
    expect(problems.map((p) => `${p.position.line}:${p.position.column}`)).toEqual(['4:3', '7:33']);
  });

  it('a pair naming a missing host lists only the numbers the hosts really have, not a null or empty key read as 0', () => {
    for (const key of ['~', 'null', '""']) {
      const problems = problemsOf(
        yaml(
          ...FABRIC,
          'hosts:',
          '  16: { name: a }',
          `  ${key}: { name: b }`,
          'pairs:',
          '  - { owner: bob, cpu: 16, mem: 34 }',
        ),
      );
      const pair = problems.map((p) => formatProblem(p)).find((m) => m.includes('mem host 34 is not in hosts'));
      expect(pair, key).toContain('(known hosts: 16)');
    }
  });

  it('a host name --hosts would read as a selection (a number, a range, all) is refused where it stands: it could never select its host', () => {
    const names = (...names: string[]) =>
      yaml(...FABRIC, 'hosts:', ...names.map((name, i) => `  ${16 + i}: { name: '${name}' }`));
    expect(problemsOf(names('34', '16-20', 'all', 'node34', 'all2')).map((p) => formatProblem(p))).toEqual(
      ['34', '16-20', 'all'].map(
        (name, i) =>
          `${FILE}:${4 + i}:15: hosts.${16 + i}.name = "${name}": a host name --hosts can select by name: not a number, a range (16-20) or all`,
      ),
    );
  });

  it('the error message is every problem on its own line, each starting with file:line:col', () => {
    try {
      loadInventory(yaml(...FABRIC, 'hosts:', '  0: { name: a }', '  300: { name: b }'), FILE);
      expect.unreachable();
    } catch (error) {
      expect((error as Error).message.split('\n')).toEqual([
        `${FILE}:4:3: host number "0" is outside 1..254 (it is the third octet of the host's fabric addresses)`,
        `${FILE}:5:3: host number "300" is outside 1..254 (it is the third octet of the host's fabric addresses)`,
      ]);
    }
  });
});

describe('each problem once, at its cause; independent problems all in one pass', () => {
  const lines = (text: string) => problemsOf(text).map((p) => `${p.position.line}:${p.position.column}: ${p.message}`);

  it('a host with the same interface twice: that problem alone, not also "its pair names a host that is not in hosts"', () => {
    const text = yaml(
      ...FABRIC,
      'hosts:',
      '  16: { name: a, interfaces: [ib0, ib0] }',
      '  34: { name: b }',
      'pairs:',
      '  - { owner: alice, cpu: 16, mem: 34 }',
    );
    expect(lines(text)).toEqual(['4:30: host 16 lists interface ib0 twice']);
  });

  it('a host the schema refuses (a bad interface name) is still a host its pair may name', () => {
    const text = yaml(
      ...FABRIC,
      'hosts:',
      '  16: { name: a, interfaces: ["ib 0", ib1] }',
      '  34: { name: b }',
      'pairs:',
      '  - { owner: alice, cpu: 16, mem: 34 }',
    );
    expect(lines(text)).toEqual([
      '4:31: hosts.16.interfaces[0] = "ib 0": not a valid Linux interface name (1-15 characters of A-Z a-z 0-9 _ . -, not starting with -, not "." or "..")',
    ]);
  });

  it('an unknown key does not hide a cross-reference error: both are reported', () => {
    const text = yaml(
      ...FABRIC,
      'hosts:',
      '  16: { name: a, nmae: x }',
      '  34: { name: b }',
      'pairs:',
      '  - { owner: alice, cpu: 16, mem: 35 }',
    );
    expect(lines(text)).toEqual([
      '4:18: hosts.16.nmae: unknown key "nmae"; did you mean "name"?',
      '7:35: pair of alice: mem host 35 is not in hosts',
    ]);
  });

  it('an unknown top-level key, a repeated management address and an unknown pair host: all three', () => {
    const text = yaml(
      ...FABRIC,
      'hosts:',
      '  16: { name: a, address: 10.0.0.1 }',
      '  34: { name: b, address: 10.0.0.1 }',
      'pairs:',
      '  - { owner: alice, cpu: 16, mem: 40 }',
      'extra: 1',
    );
    expect(lines(text)).toEqual([
      "5:27: host 34: address 10.0.0.1 is also host 16's",
      '7:35: pair of alice: mem host 40 is not in hosts',
      '8:1: extra: unknown key "extra"',
    ]);
  });

  it('a broken fabric stops there: every host depends on it, so nothing else would be worth reading', () => {
    const text = yaml(
      'fabric:',
      '  subnet: 172.16.0.0/16',
      '  nics: nine',
      'hosts:',
      '  16: { name: a, nmae: x }',
      'pairs:',
      '  - { owner: alice, cpu: 16, mem: 35 }',
    );
    expect(lines(text)).toEqual([
      '3:9: fabric.nics = "nine": nics is a whole number 1..16',
      '5:18: hosts.16.nmae: unknown key "nmae"; did you mean "name"?',
    ]);
  });
});
