import { describe, expect, it } from 'vitest';
import { UsageError } from '../../src/errors.js';
import {
  backingPath,
  checkLabName,
  hostPaths,
  isLabNamespace,
  labOfNamespace,
  rootLinkName,
} from '../../src/lab/names.js';
import { labNotUpMessage } from '../../src/lab/state.js';
import {
  parseInterfaceAssignments,
  parseLabHosts,
  parseManagerAssignments,
  parseMgmtSubnet,
  parseNicCounts,
} from '../../src/lab/options.js';

describe('lab names', () => {
  it.each([
    ['default', 'ibfl-default'],
    ['t2', 'ibfl-t2'],
    ['abcdefghij', 'ibfl-abcdefghij'],
  ])('the root-namespace link of lab %s is %s', (name, link) => {
    expect(rootLinkName(name)).toBe(link);
  });

  it('shortens long lab names to 15 characters and keeps them distinct', () => {
    const a = rootLinkName('e2e-deploy-tests');
    const b = rootLinkName('e2e-deploy-testz');
    expect(a.length).toBeLessThanOrEqual(15);
    expect(b.length).toBeLessThanOrEqual(15);
    expect(a).not.toBe(b);
    expect(a).toMatch(/^ibfl-e2e-d[0-9a-f]{5}$/);
  });

  it.each([
    ['a', 'ibfl-a-sw', true],
    ['a', 'ibfl-a-h34', true],
    ['a', 'ibfl-a-b-sw', false],
    ['a', 'ibfl-a-h34x', false],
    ['a-h1', 'ibfl-a-h1-sw', true],
    ['a', 'ibfl-a-h1-sw', false],
    ['a', 'other-a-sw', false],
  ])('lab %s owns namespace %s: %s', (lab, ns, owned) => {
    expect(isLabNamespace(lab, ns)).toBe(owned);
  });

  it.each([
    ['ibfl-default-sw', 'default'],
    ['ibfl-a-h1-h4', 'a-h1'],
    ['ibfl-a-h1', 'a'],
    ['ibfl-x', undefined],
    ['scr-h34', undefined],
  ])('namespace %s belongs to lab %s', (ns, lab) => {
    expect(labOfNamespace(ns)).toBe(lab);
  });

  it.each(['', 'Default', '-x', 'a b', 'a/b', 'x'.repeat(33)])('refuses lab name %j', (name) => {
    expect(() => checkLabName(name)).toThrow(UsageError);
  });

  it("maps a host's /etc, /run and /root to its corner of the state directory", () => {
    const p = hostPaths('t', 34);
    expect(backingPath(p, '/etc/netplan/99-netcfg.yaml')).toBe(
      '/run/ibfleet-lab/t/hosts/34/upper/etc/netplan/99-netcfg.yaml',
    );
    expect(backingPath(p, '/run/sshd')).toBe('/run/ibfleet-lab/t/hosts/34/run/sshd');
    expect(backingPath(p, '/root/.ssh/authorized_keys')).toBe('/run/ibfleet-lab/t/hosts/34/root/.ssh/authorized_keys');
    expect(() => backingPath(p, '/usr/bin/x')).toThrow(/outside/);
    expect(p.netNs).toBe('/run/netns/ibfl-t-h34');
  });
});

describe('lab options', () => {
  it.each([
    ['16,34', [16, 34]],
    ['34,16,16', [16, 34]],
    ['1-3,254', [1, 2, 3, 254]],
    [' 40-42 , 7', [7, 40, 41, 42]],
  ])('--hosts %s is %j', (text, ids) => {
    expect(parseLabHosts(text)).toEqual(ids);
  });

  it.each([
    ['', /empty/],
    ['0', /1\.\.254/],
    ['255', /1\.\.254/],
    ['5-3', /backwards; write 3-5/],
    ['@cpu', /"@cpu".*host numbers and ranges/],
    ['16,,34', /""/],
  ])('--hosts %j is refused (%s)', (text, message) => {
    expect(() => parseLabHosts(text)).toThrow(message);
  });

  it('assigns managers to host lists, later flags winning', () => {
    const m = parseManagerAssignments(['40-42=ifupdown', '41=networkmanager']);
    expect([...m]).toEqual([
      [40, 'ifupdown'],
      [41, 'networkmanager'],
      [42, 'ifupdown'],
    ]);
  });

  it.each([
    ['40', /HOSTS=VALUE/],
    ['40=systemd', /unknown manager "systemd" \(allowed: networkmanager, ifupdown, netplan\)/],
    ['x=netplan', /host numbers/],
  ])('--manager %s is refused', (value, message) => {
    expect(() => parseManagerAssignments([value])).toThrow(message);
  });

  it('parses interface names per host and refuses bad or taken ones', () => {
    expect([...parseInterfaceAssignments(['40=eth0,eth1'])]).toEqual([[40, ['eth0', 'eth1']]]);
    expect(() => parseInterfaceAssignments(['40=eth0,eth 1'])).toThrow(/not a valid Linux interface name/);
    expect(() => parseInterfaceAssignments(['40=mgmt0,ib1'])).toThrow(/taken by the lab/);
    expect(() => parseInterfaceAssignments(['40=ib0,ib0'])).toThrow(/listed twice/);
  });

  it('parses NIC counts for every host (--nics 8) and per host (--nics 16-17=8), later flags winning', () => {
    expect(parseNicCounts([])).toEqual({ hosts: new Map() });
    expect(parseNicCounts(['8'])).toEqual({ all: 8, hosts: new Map() });
    expect(parseNicCounts(['2', '16-17=8', '17=16'])).toEqual({
      all: 2,
      hosts: new Map([
        [16, 8],
        [17, 16],
      ]),
    });
  });

  it.each([
    ['0', /--nics 0: "0" is not a NIC count 1..16/],
    ['17', /not a NIC count 1..16/],
    ['16=eight', /--nics 16=eight: "eight" is not a NIC count/],
    ['16=', /HOSTS=VALUE/],
    ['x=8', /host numbers/],
  ])('--nics %s is refused', (value, message) => {
    expect(() => parseNicCounts([value])).toThrow(message);
  });

  it.each([
    ['198.18.0.0/24', true],
    ['10.99.0.0/16', true],
    ['198.18.0.1/24', /host bits set; did you mean 198.18.0.0\/24/],
    ['198.18.0.0/25', /between \/8 and \/24/],
    ['nope', /not an IPv4 network/],
  ])('--mgmt-subnet %s', (text, expected) => {
    if (expected === true) expect(parseMgmtSubnet(text).prefixLength).toBeLessThanOrEqual(24);
    else expect(() => parseMgmtSubnet(text)).toThrow(expected);
  });
});

describe('a lab that is not up: the message names the next step', () => {
  const lab = (name: string, status: 'up' | 'starting' = 'up') =>
    ({
      name,
      status,
      hosts: [16, 34, 40],
      mgmtSubnet: '198.18.7.0/24',
      rootLink: `ibfl-${name}`,
      inventory: '',
      knownHosts: '',
      identity: '',
      hostsWithoutSshd: [],
      hostSystems: [],
    }) as const;
  it.each([
    {
      case: 'no --name while exactly one other lab is up: its --name',
      name: 'default',
      labs: [lab('nc4')],
      says: 'without --name the lab is "default", which is not up; the lab up here is nc4 (hosts 16,34,40, 198.18.7.0/24): add --name nc4 (or start the default lab with: ibfleet lab up)',
    },
    {
      case: 'no --name while two labs are up (one more still starting): both names',
      name: 'default',
      labs: [lab('nc4'), lab('t2'), lab('crashed', 'starting')],
      says: 'labs up here: nc4 (hosts 16,34,40, 198.18.7.0/24), t2 (hosts 16,34,40, 198.18.7.0/24): add --name with one of nc4, t2 (or start',
    },
    {
      case: 'no --name and no lab up: lab up',
      name: 'default',
      labs: [],
      says: 'lab default is not up (no lab is up on this machine); start it with: ibfleet lab up',
    },
    {
      case: 'a --name of a lab not up: the ones that are, and how to start it',
      name: 'mine',
      labs: [lab('nc4')],
      says: 'lab mine is not up (labs up here: nc4 (hosts 16,34,40, 198.18.7.0/24)); start it with: ibfleet lab up --name mine',
    },
  ])('$case', ({ name, labs, says }) => {
    expect(labNotUpMessage(name, labs)).toContain(says);
  });
});
