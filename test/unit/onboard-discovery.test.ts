/**
 * Onboard's decisions from what the read-only probe printed (pure): which interface is which NIC,
 * when a machine does not follow the convention, which manager, and the entry to write.
 */
import { missingPrerequisite } from '../../src/plan/host-plan.js';
import { loadFixturePlaybook } from '../fixtures/fixtures.js';
import { describe, expect, it } from 'vitest';
import { loadInventory } from '../../src/inventory/load.js';
import type { Host, Manager } from '../../src/inventory/model.js';
import { readProbe as parseProbe } from '../../src/plan/change-output.js';
import {
  chooseName,
  conventionOf,
  discoverHost,
  onboardEntry,
  onboardName,
  type HostDiscovery,
  type OnboardRole,
} from '../../src/plan/onboard.js';
import { fixture } from '../helpers/fake-transport.js';

const shipped = loadFixturePlaybook();
const routesOnly = loadFixturePlaybook('routes-only.yaml');
const boot = fixture('netplan-boot.txt');
const fleet = loadInventory(
  'fabric: { subnet: 172.16.0.0/16 }\nhosts:\n  16: { name: cpuserver16, address: 10.0.0.16 }\n  34: { name: memserver34, address: 10.0.0.34 }\n  35: { name: memserver35, address: 10.0.0.35, manager: ifupdown }\n',
  't.yaml',
);
const host = (id: number): Host => fleet.hosts.find((h) => h.id === id)!;

/** The boot probe of a netplan host, edited: another host number, other interface names, ... */
function probe(edit: (text: string) => string = (t) => t): string {
  return edit(boot);
}

const renamed = (text: string) =>
  text
    .replaceAll('172.16.34.', '172.16.16.')
    .replace(/\bib0\b/g, 'ibs5f0')
    .replace(/\bib1\b/g, 'ibs5f1');

function discover(
  id: number,
  text: string,
  options: { role?: OnboardRole; flag?: Manager; persist?: boolean } = {},
): HostDiscovery {
  return discoverHost({
    fabric: fleet.fabric,
    host: host(id),
    role: options.role ?? 'mem',
    facts: parseProbe(text),
    managerFlag: options.flag,
    prerequisite: (m, f) => missingPrerequisite(options.persist === false ? routesOnly : shipped, m, f),
  });
}

describe('discoverHost: the NICs', () => {
  it('finds the interface of each NIC by its convention address, with the OS and the detected manager', () => {
    const d = discover(34, probe());
    expect(d).toMatchObject({
      id: 34,
      os: 'Ubuntu 18.04.6 LTS',
      manager: 'netplan',
      managerSource: 'detected',
      problems: [],
      nics: [
        { nic: 1, iface: 'ib0', address: '172.16.34.1', prefixLength: 16 },
        { nic: 2, iface: 'ib1', address: '172.16.34.2', prefixLength: 16 },
      ],
    });
    expect(d.evidence).toContain('/etc/netplan/99-netcfg.yaml configures ib0 (renderer: networkd)');
  });

  it('gets the real names (ibs5f0/ibs5f1) although the inventory does not know them yet, and detects the manager for those names', () => {
    const d = discover(16, probe(renamed), { role: 'cpu' });
    expect(d.problems).toEqual([]);
    expect(d.nics.map((n) => n.iface)).toEqual(['ibs5f0', 'ibs5f1']);
    expect(d.manager).toBe('netplan');
  });

  const refusals: { name: string; id?: number; edit: (t: string) => string; problems: (string | RegExp)[] }[] = [
    {
      name: 'NIC 2 has no address',
      edit: (t) => t.replace(/^4: ib1 +inet 172\.16\.34\.2.*\n/m, ''),
      problems: [
        'no interface carries 172.16.34.2 (NIC 2 of host 34)',
        'its fabric addresses: ib0 172.16.34.1/16; the convention is NIC n of host 34 = 172.16.34.n/16',
      ],
    },
    {
      name: 'NIC 2 has an address off the convention',
      edit: (t) => t.replace('inet 172.16.34.2/16', 'inet 172.16.34.9/16'),
      problems: [
        'no interface carries 172.16.34.2 (NIC 2 of host 34)',
        'its fabric addresses: ib0 172.16.34.1/16, ib1 172.16.34.9/16; the convention is NIC n of host 34 = 172.16.34.n/16',
      ],
    },
    {
      name: "a prefix that is not the fabric's",
      edit: (t) => t.replace('inet 172.16.34.2/16', 'inet 172.16.34.2/24'),
      problems: [
        /^ib1 carries 172\.16\.34\.2\/24, but the fabric is 172\.16\.0\.0\/16: the convention gives 172\.16\.34\.2\/16$/,
        /^its fabric addresses: ib0 172\.16\.34\.1\/16, ib1 172\.16\.34\.2\/24;/,
      ],
    },
    {
      name: 'the machine is another host number (the address given belongs to host 34)',
      id: 35,
      edit: (t) => t,
      problems: [
        "it carries none of host 35's addresses (172.16.35.1, 172.16.35.2) but those of host 34 (ib0 172.16.34.1/16, ib1 172.16.34.2/16): is this machine host 34? check the host number and the address given for it",
      ],
    },
    {
      name: 'both NIC addresses on one interface',
      edit: (t) =>
        t.replace('4: ib1    inet 172.16.34.2/16 scope global ib1', '4: ib0    inet 172.16.34.2/16 scope global ib0'),
      problems: [
        /^ib0 carries both 172\.16\.34\.1 \(NIC 1\) and 172\.16\.34\.2 \(NIC 2\); each NIC needs its own interface$/,
        /^its fabric addresses: ib0 172\.16\.34\.1\/16, ib0 172\.16\.34\.2\/16;/,
      ],
    },
    {
      name: 'no fabric address at all',
      edit: (t) => t.replace(/^\d: ib[01] +inet .*\n/gm, ''),
      problems: [
        /no interface carries 172\.16\.34\.1/,
        /no interface carries 172\.16\.34\.2/,
        /it has no address in 172\.16\.0\.0\/16 at all \(are the IB NICs up and addressed\? is the IB driver, e\.g\. MLNX_OFED, installed\?\)/,
      ],
    },
  ];
  for (const r of refusals) {
    it(`refuses when ${r.name}`, () => {
      const d = discover(r.id ?? 34, probe(r.edit));
      expect(d.problems).toHaveLength(r.problems.length);
      r.problems.forEach((p, i) =>
        typeof p === 'string' ? expect(d.problems[i]).toBe(p) : expect(d.problems[i]).toMatch(p),
      );
      expect(d.manager).toBeUndefined();
    });
  }
});

describe('discoverHost: the network manager', () => {
  /** Nothing configures the NICs and nothing is seen running. */
  const unmanaged = (t: string) =>
    t
      .replace(/@@ibfleet netplan\n[\s\S]*?(?=@@ibfleet )/, '@@ibfleet netplan\n')
      .replace('dir /run/systemd/netif\n', '');

  it('refuses a machine whose manager cannot be told apart, naming the flag to pass', () => {
    const d = discover(34, probe(unmanaged));
    expect(d.problems).toEqual([
      'cannot tell which network manager brings up ib0/ib1 on host 34: nothing configures ib0/ib1 (no netplan entry, NetworkManager connection or ifupdown stanza) and no manager is seen running; say which with --mem-manager networkmanager|netplan|ifupdown (or manager: in the inventory)',
    ]);
  });

  it('takes the flag when given', () => {
    expect(discover(34, probe(unmanaged), { flag: 'ifupdown' })).toMatchObject({
      manager: 'ifupdown',
      managerSource: 'flag',
      problems: [],
    });
  });

  it('takes the inventory’s manager when it names one', () => {
    const d = discover(35, probe(unmanaged).replaceAll('172.16.34.', '172.16.35.'));
    expect(d).toMatchObject({ manager: 'ifupdown', managerSource: 'inventory', problems: [] });
  });

  it('refuses when the manager has no way to run the hook (netplan without networkd-dispatcher)', () => {
    const d = discover(
      34,
      probe((t) => t.replace(/^dir \/etc\/networkd-dispatcher.*\n/gm, '')),
    );
    expect(d.problems).toEqual([
      expect.stringMatching(
        /^netplan: networkd-dispatcher is not installed, so a routable\.d hook would never run; install it/,
      ),
    ]);
  });

  it('a playbook without a hook does not need one', () => {
    expect(
      discover(
        34,
        probe((t) => t.replace(/^dir \/etc\/networkd-dispatcher.*\n/gm, '')),
        { persist: false },
      ).problems,
    ).toEqual([]);
  });
});

describe('onboardEntry: what onboard asks the inventory to hold for a host', () => {
  const d: HostDiscovery = {
    id: 50,
    role: 'cpu',
    os: 'Ubuntu 20.04.6 LTS',
    hostname: 'gpu-node-7',
    nics: [
      { nic: 1, iface: 'ibs5f0', address: '172.16.50.1', prefixLength: 16 },
      { nic: 2, iface: 'ibs5f1', address: '172.16.50.2', prefixLength: 16 },
    ],
    manager: 'networkmanager',
    managerSource: 'detected',
    evidence: [],
    problems: [],
  };
  const base = {
    id: 50,
    role: 'cpu' as const,
    owner: 'alice',
    name: 'cpuserver50',
    address: '10.0.0.50',
    user: undefined,
    managerFlag: undefined,
  };

  it('the name given, the role, the real interface names, and a comment saying what was found; a detected manager is not written', () => {
    expect(onboardEntry({ ...base, discovery: d })).toEqual({
      id: 50,
      name: 'cpuserver50',
      address: '10.0.0.50',
      role: 'cpu',
      interfaces: ['ibs5f0', 'ibs5f1'],
      user: undefined,
      manager: undefined,
      comment: "alice's cpu server: Ubuntu 20.04.6 LTS, networkmanager (detected)",
    });
  });

  it('--user and a manager flag are passed on', () => {
    expect(onboardEntry({ ...base, user: 'labadmin', managerFlag: 'ifupdown', discovery: d })).toMatchObject({
      user: 'labadmin',
      manager: 'ifupdown',
    });
  });

  it('before discovery: interfaces unknown (not compared, not written) and no comment', () => {
    expect(onboardEntry({ ...base, discovery: undefined })).toMatchObject({
      interfaces: undefined,
      comment: undefined,
    });
  });
});

describe('conventions', () => {
  it.each([
    ['172.16.34.2', { host: 34, nic: 2 }],
    ['172.16.16.1', { host: 16, nic: 1 }],
    ['172.17.16.1', undefined],
    ['10.0.0.1', undefined],
  ])('conventionOf(%s)', (address, expected) => expect(conventionOf(fleet.fabric, address)).toEqual(expected));

  it('names follow the seeds when nothing better is known: cpuserver16, memserver34', () => {
    expect([onboardName('cpu', 16), onboardName('mem', 34)]).toEqual(['cpuserver16', 'memserver34']);
  });

  it.each([
    ["the machine's own hostname", { flag: undefined, inventory: undefined, hostname: 'gpu-node-7' }, 'gpu-node-7'],
    ['--cpu-name over everything', { flag: 'alice-cpu', inventory: 'old16', hostname: 'gpu-node-7' }, 'alice-cpu'],
    [
      "the inventory's entry over the hostname",
      { flag: undefined, inventory: 'old16', hostname: 'gpu-node-7' },
      'old16',
    ],
    [
      "the lab name when the hostname is another host's",
      { flag: undefined, inventory: undefined, hostname: 'memserver34' },
      'cpuserver16',
    ],
    [
      'the lab name without a usable hostname',
      { flag: undefined, inventory: undefined, hostname: undefined },
      'cpuserver16',
    ],
  ])('chooseName: %s', (_name, given, expected) => {
    expect(chooseName({ ...given, taken: new Set(['memserver34']), role: 'cpu', id: 16 })).toBe(expected);
  });

  it('a hostname the inventory would refuse (a space, a slash) is not used', () => {
    const facts = { ...parseProbe(fixture('netplan-boot.txt')), hostname: 'bad name/x' };
    expect(
      discoverHost({ fabric: fleet.fabric, host: host(34), role: 'mem', facts, prerequisite: () => undefined })
        .hostname,
    ).toBeUndefined();
  });
});
