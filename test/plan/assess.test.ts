/** What the plan says it will change, read from a real probe transcript with one edit. */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadInventory } from '../../src/inventory/load.js';
import { plannedChanges } from '../../src/plan/assess.js';
import { readProbe } from '../../src/plan/change-output.js';
import { planDeploy } from '../../src/plan/host-plan.js';
import { loadPlaybook } from '../../src/playbook/playbook.js';
import { addIpLines } from '../helpers/probe-edit.js';

const fixture = (name: string) => readFileSync(new URL(`../fixtures/probe/${name}`, import.meta.url), 'utf8');
const playbook = loadPlaybook(
  readFileSync(new URL('../../playbooks/dual-ib-routing.yaml', import.meta.url), 'utf8'),
  'dual-ib-routing.yaml',
);
const fleet = loadInventory(
  'fabric: { subnet: 172.16.0.0/16 }\nhosts:\n  34: { name: memserver34, address: 198.18.99.34 }\n',
  'test.yaml',
);
const host = fleet.hosts[0]!;

function plan(probe: string): string[] {
  return plannedChanges(planDeploy({ ...host, manager: 'netplan' }, fleet, playbook, readProbe(probe)).assessment).map(
    (c) => c.text,
  );
}

describe('the plan line for a NIC table', () => {
  const want = '172.16.0.0/16 src 172.16.34.1';

  it('an empty table: the route is added, nothing else said', () => {
    expect(plan(fixture('netplan-boot.txt'))).toContain(`ib0: table 941 ← ${want}`);
  });

  it('a table holding a foreign route says the routing script flushes it', () => {
    const foreign = addIpLines(fixture('netplan-boot.txt'), '10.9.0.0/16 via 198.18.99.1 dev mgmt0 table 941');
    expect(plan(foreign)).toContain(
      `ib0: table 941 ← ${want} (flushes the table first, removing the route found there: 10.9.0.0/16 via 198.18.99.1 dev mgmt0)`,
    );
  });
});
