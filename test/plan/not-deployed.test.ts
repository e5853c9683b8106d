/**
 * Whether status calls a host "not deployed": none of ibfleet's files is on it. That is what lets
 * every display fold such hosts into one line with the deploy command (src/ui/text/status-fold.ts);
 * a host with any of them is drift as before, reason by reason. From real probe transcripts.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { readProbe as parseProbe } from '../../src/plan/change-output.js';
import { assessStatus } from '../../src/plan/host-plan.js';
import { hostOf, loadFixtureFleet, loadFixturePlaybook } from '../fixtures/fixtures.js';

const fixture = (name: string) => readFileSync(new URL(`../fixtures/probe/${name}`, import.meta.url), 'utf8');
const seeds = loadFixtureFleet('seeds.yaml');
const playbook = loadFixturePlaybook();
const netplan = hostOf(seeds, 34);
const nm = hostOf(seeds, 16);

describe('status: a host none of ibfleet\'s files is on is "not deployed"', () => {
  it.each([
    ["a netplan host as it boots with the seeds' configuration", netplan, 'netplan-boot.txt'],
    ['a NetworkManager host as it boots', nm, 'nm-boot.txt'],
  ])('%s: drift, not deployed, every reason still there for --json', (_, host, name) => {
    const found = assessStatus(host, seeds, playbook, parseProbe(fixture(name)));
    expect(found).toMatchObject({ status: 'drift', notDeployed: true });
    expect(found.reasons.length).toBeGreaterThan(5);
  });

  it('a deployed host with one of its files removed is drift about that file, not "not deployed"', () => {
    const probe = fixture('netplan-hook-deployed.txt');
    const deployed = assessStatus(netplan, seeds, playbook, parseProbe(probe));
    expect(deployed.notDeployed).toBeUndefined();
    const lost = probe.replace(/^.* \/etc\/ibfleet\/ibfleet-routes\n/gm, '');
    expect(lost).not.toBe(probe);
    const found = assessStatus(netplan, seeds, playbook, parseProbe(lost));
    expect(found.status).toBe('drift');
    expect(found.notDeployed).toBeUndefined();
    expect(found.reasons).toContain('/etc/ibfleet/ibfleet-routes is missing');
  });
});
