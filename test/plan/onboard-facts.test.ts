/**
 * Onboard plans the deploy from discovery's probe, which ran under the machine's provisional entry:
 * `ip route get`, asked from each NIC's address, is refiled under the names discovery found.
 */
import { describe, expect, it } from 'vitest';
import { loadInventory } from '../../src/inventory/load.js';
import { readProbe as parseProbe } from '../../src/plan/change-output.js';
import { factsUnderFoundNames } from '../../src/plan/onboard.js';
import { fixture } from '../helpers/fake-transport.js';

const fleetWith = (ifaces: string) =>
  loadInventory(
    `fabric: { subnet: 172.16.0.0/16 }\nhosts:\n  34: { name: memserver34, address: a, interfaces: [${ifaces}] }\n`,
    't.yaml',
  );

describe('factsUnderFoundNames', () => {
  // Probed as ib0/ib1 (the provisional names); the routes say which device answered.
  const probed = parseProbe(fixture('netplan-boot.txt'));
  const probedAs = fleetWith('ib0, ib1').hosts[0]!;

  it("files each NIC's route lookup under the name found for that NIC; everything else is the probe's", () => {
    const found = fleetWith('ibp1s0, ibp2s0').hosts[0]!;
    const facts = factsUnderFoundNames(probed, probedAs, found);
    expect([...facts.routeGet.keys()]).toEqual(['ibp1s0', 'ibp2s0']);
    expect(facts.routeGet.get('ibp1s0')).toEqual(probed.routeGet.get('ib0'));
    expect(facts.routeGet.get('ibp2s0')).toEqual(probed.routeGet.get('ib1'));
    expect(facts.extra).toBe(probed.extra);
    expect(facts.addresses).toBe(probed.addresses);
  });

  it('names that trade places follow their NIC, not their name', () => {
    const swapped = fleetWith('ib1, ib0').hosts[0]!;
    const facts = factsUnderFoundNames(probed, probedAs, swapped);
    expect(facts.routeGet.get('ib1')).toEqual(probed.routeGet.get('ib0'));
    expect(facts.routeGet.get('ib0')).toEqual(probed.routeGet.get('ib1'));
  });
});
