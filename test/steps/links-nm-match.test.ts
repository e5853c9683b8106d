/**
 * Which NetworkManager profiles apply to a NIC, as NetworkManager decides it: hardware addresses
 * compared as nm_utils_hwaddr_matches does, match.interface-name as nm_wildcard_match_check does.
 */
import { describe, expect, it } from 'vitest';
import type { NmLink } from '../../src/steps/links/facts.js';
import { hwaddrMatches, interfaceNameMatches, profileApplies } from '../../src/steps/links/nm-match.js';

const profile = (p: Partial<NmLink>): NmLink => ({
  uuid: 'u',
  name: 'p',
  type: '802-3-ethernet',
  iface: '',
  method: 'auto',
  addresses: [],
  mtu: 'auto',
  transportMode: '',
  pkey: '',
  parent: '',
  mac: '',
  match: [],
  volatile: false,
  ...p,
});
const ib0 = { iface: 'ib0', hwaddr: 'a2:3d:f3:63:bb:9e', ipoib: false };

describe('hardware addresses', () => {
  it('equal in any case; an IPoIB address by its port GUID (the last 8 of 20 bytes)', () => {
    expect(hwaddrMatches('A2:3D:F3:63:BB:9E', 'a2:3d:f3:63:bb:9e')).toBe(true);
    expect(hwaddrMatches('a2:3d:f3:63:bb:9f', 'a2:3d:f3:63:bb:9e')).toBe(false);
    const guid = '00:02:c9:03:00:10:01:01';
    expect(
      hwaddrMatches(`80:00:00:48:fe:80:00:00:00:00:00:00:${guid}`, `00:00:01:07:fe:80:00:00:00:00:00:00:${guid}`),
    ).toBe(true);
    expect(hwaddrMatches(`80:00:00:48:fe:80:00:00:00:00:00:00:${guid}`, 'a2:3d:f3:63:bb:9e')).toBe(false);
  });
});

describe('match.interface-name', () => {
  it('shell patterns, any optional one; mandatory ones (&, a bare !) all', () => {
    expect(interfaceNameMatches(['ib[0]'], 'ib0')).toBe(true);
    expect(interfaceNameMatches(['ib[0]'], 'ib1')).toBe(false);
    expect(interfaceNameMatches(['eth*', 'ib?'], 'ib1')).toBe(true);
    expect(interfaceNameMatches(['ib*', '!ib1'], 'ib1')).toBe(false);
    expect(interfaceNameMatches(['ib*', '!ib1'], 'ib0')).toBe(true);
    expect(interfaceNameMatches(['|!ib1'], 'ib0')).toBe(true);
    expect(interfaceNameMatches(['&ib*', '&!ib0'], 'ib0')).toBe(false);
    expect(interfaceNameMatches(['!ib1'], 'ib0')).toBe(true);
    expect(interfaceNameMatches(['ib[!0]'], 'ib0')).toBe(false);
    expect(interfaceNameMatches(['\\!x'], '!x')).toBe(true);
    expect(interfaceNameMatches(['ib.0'], 'ibx0')).toBe(false);
  });
});

describe('a profile applies to the NIC when each of its bindings holds', () => {
  it('by name, MAC address or pattern; not one bound to nothing, nor one whose other binding fails', () => {
    expect(profileApplies(profile({ iface: 'ib0' }), ib0)).toBe(true);
    expect(profileApplies(profile({ mac: 'a2:3d:f3:63:bb:9e' }), ib0)).toBe(true);
    expect(profileApplies(profile({ match: ['ib*'] }), ib0)).toBe(true);
    expect(profileApplies(profile({}), ib0)).toBe(false);
    expect(profileApplies(profile({ iface: 'ib1', mac: 'a2:3d:f3:63:bb:9e' }), ib0)).toBe(false);
    expect(profileApplies(profile({ mac: 'a2:3d:f3:63:bb:9e', match: ['eth*'] }), ib0)).toBe(false);
    expect(profileApplies(profile({ mac: 'a2:3d:f3:63:bb:9e' }), { ...ib0, hwaddr: undefined })).toBe(false);
  });

  it('by MAC or pattern only for a device of its type', () => {
    expect(profileApplies(profile({ type: 'infiniband', match: ['ib*'] }), ib0)).toBe(false);
    expect(profileApplies(profile({ type: 'infiniband', match: ['ib*'] }), { ...ib0, ipoib: true })).toBe(true);
  });
});
