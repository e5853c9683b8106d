/**
 * The ownership record and what an earlier deploy owned: the record as a host may hand it back
 * (hostile lines and all), and what deploy, status, rollback and the restore decide from it when
 * the inventory's tableBase changed — read from real probe transcripts of hosts deployed with
 * tableBase 940 (test/fixtures/probe/*-deployed.txt), planned with an inventory that says 500.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadInventory } from '../../src/inventory/load.js';
import { factOf } from '../../src/facts/host-facts.js';
import { readProbe as parseProbe } from '../../src/plan/change-output.js';
import { assessStatus, planDeploy, type DeployPlan } from '../../src/plan/host-plan.js';
import { planRestore, stateDifferences } from '../../src/plan/restore.js';
import { assessRollback, rollbackLines } from '../../src/plan/rollback.js';
import { loadPlaybook } from '../../src/playbook/playbook.js';
import { renderApplyScript, renderRollbackScript } from '../../src/render/apply-script.js';
import { renderRestoreScript } from '../../src/render/restore-script.js';
import type { NativeSteps } from '../../src/steps/persist/native-apply.js';
import { formerRouting } from '../../src/steps/policy-routing/former.js';
import { OWNED_FACT, parseOwnedRecord, renderOwnedRecord } from '../../src/steps/policy-routing/owned-record.js';
import { hostOf, loadFixtureFleet, loadFixturePlaybook } from '../fixtures/fixtures.js';
import { withSection } from '../helpers/probe-edit.js';
import { expectShellcheckClean } from '../helpers/tools.js';

const fixture = (name: string) => readFileSync(new URL(`../fixtures/probe/${name}`, import.meta.url), 'utf8');
const seedsText = readFileSync(new URL('../fixtures/seeds.yaml', import.meta.url), 'utf8');
const seeds = loadFixtureFleet('seeds.yaml');
/** The seeds' fleet after an admin changed its tableBase to 500 (tables 501, 502). */
const moved = loadInventory(seedsText.replace('tableBase: 940', 'tableBase: 500'), 'seeds-500.yaml');
const hook = loadFixturePlaybook();
const native = loadPlaybook(
  readFileSync(new URL('../../playbooks/dual-ib-routing-native.yaml', import.meta.url), 'utf8'),
  'playbooks/dual-ib-routing-native.yaml',
);
const parseProbeText = fixture('netplan-hook-deployed.txt');
const deployed940 = parseProbe(parseProbeText);
const owned940 = factOf(deployed940, OWNED_FACT);
/** What a deploy tells the network manager: the persist step's part of the change. */
const nativeOf = (plan: DeployPlan) => plan.parts.get('persist')?.memo as NativeSteps | undefined;

describe('the ownership record', () => {
  const record = renderOwnedRecord(hostOf(seeds, 34), seeds, hook.name);

  it('reads back as exactly what the inventory gave the host', () => {
    expect(parseOwnedRecord(record)).toEqual({
      subnet: '172.16.0.0/16',
      tableBase: 940,
      nics: [
        { iface: 'ib0', table: 941, priority: 941, address: '172.16.34.1' },
        { iface: 'ib1', table: 942, priority: 942, address: '172.16.34.2' },
      ],
    });
  });

  it('is read whole by the probe: the facts carry it', () => {
    expect(owned940?.tableBase).toBe(940);
    expect(owned940?.nics.map((n) => n.table)).toEqual([941, 942]);
  });

  // Text from a host: only lines in ibfleet's own form count, and nothing the kernel owns is ever ibfleet's.
  it.each([
    ['the main table', 'nic ib0 table 254 priority 941 from 172.16.34.1'],
    ['the local table', 'nic ib0 table 255 priority 941 from 172.16.34.1'],
    ['table 0', 'nic ib0 table 0 priority 941 from 172.16.34.1'],
    ["main's rule priority", 'nic ib0 table 941 priority 32766 from 172.16.34.1'],
    ['the local rule priority', 'nic ib0 table 941 priority 0 from 172.16.34.1'],
    ['a huge table', 'nic ib0 table 4294967295 priority 941 from 172.16.34.1'],
    ['an address that is none', 'nic ib0 table 941 priority 941 from 172.16.34.999'],
    ['a shell word as address', 'nic ib0 table 941 priority 941 from $(reboot)'],
    ['an interface name no kernel takes', 'nic ib0;reboot table 941 priority 941 from 172.16.34.1'],
    ['words after the line', 'nic ib0 table 941 priority 941 from 172.16.34.1 table 254'],
    ['leading blanks', ' nic ib0 table 941 priority 941 from 172.16.34.1'],
  ])('a line naming %s is no entry', (_, line) => {
    expect(parseOwnedRecord(`tableBase 940\n${line}\n`)?.nics).toEqual([]);
  });

  it('a file that holds nothing of a record is none; an unknown interface (written for an invalid name) still counts', () => {
    expect(parseOwnedRecord('#!/bin/sh\nrm -rf /\n')).toBeUndefined();
    expect(parseOwnedRecord('nic - table 941 priority 941 from 172.16.34.1\n')?.nics).toEqual([
      { iface: '-', table: 941, priority: 941, address: '172.16.34.1' },
    ]);
  });
});

describe('what an earlier deploy owned and the inventory no longer gives the host', () => {
  it('another tableBase: its NICs and its tables', () => {
    const former = formerRouting(hostOf(moved, 34), owned940);
    expect(former.tableBase).toBe(940);
    expect(former.tables).toEqual([941, 942]);
    expect(former.nics.map((n) => `${n.address} ${n.table}`)).toEqual(['172.16.34.1 941', '172.16.34.2 942']);
  });

  it('the same inventory: nothing; no record (a host deployed before records): nothing', () => {
    expect(formerRouting(hostOf(seeds, 34), owned940)).toMatchObject({ nics: [], tables: [] });
    expect(formerRouting(hostOf(moved, 34), undefined)).toMatchObject({ nics: [], tables: [] });
  });

  it("another subnet with the same tableBase: the old rules, and no table to empty (today's routing script refills them)", () => {
    const other = loadInventory(
      seedsText.replace('subnet: 172.16.0.0/16', 'subnet: 172.17.0.0/16'),
      'seeds-172-17.yaml',
    );
    const former = formerRouting(hostOf(other, 34), owned940);
    expect(former.tables).toEqual([]);
    expect(former.nics.map((n) => n.address)).toEqual(['172.16.34.1', '172.16.34.2']);
  });
});

describe('deploy, status, rollback and the restore after the tableBase changed', () => {
  const host = hostOf(moved, 34);

  it('deploy plans the old tables away as their own kind of change, and its script flushes them and deletes their rules', () => {
    const plan = planDeploy(host, moved, hook, deployed940);
    expect(plan.changes.filter((c) => c.kind === 'old-table')).toEqual([
      { kind: 'old-table', action: 'remove', subject: 'table 941', text: 'old table 941 (tableBase was 940)' },
      { kind: 'old-table', action: 'remove', subject: 'table 942', text: 'old table 942 (tableBase was 940)' },
    ]);
    const script = renderApplyScript(host, moved, plan);
    expect(script).toContain("ip -4 route flush table 941 && echo 'ibfleet: flushed old table 941'");
    // del_rules: the routing program's loop, whose definition the script carries.
    expect(script).toContain(
      "del_rules -m 'ibfleet: removed old rule from 172.16.34.2 lookup 942' from 172.16.34.2 lookup 942",
    );
    expect(script).toContain('ip -4 rule del "$@"');
    // After the routing script: every manager has been told by then.
    expect(script.indexOf('flush table 941')).toBeGreaterThan(
      script.indexOf('/etc/ibfleet/ibfleet-routes || status=$?'),
    );
  });

  it('status with the new tableBase names the old tables as drift', () => {
    const status = assessStatus(host, moved, hook, deployed940);
    expect(status.status).toBe('drift');
    expect(status.reasons).toContain(
      'table 941 of an earlier deploy (tableBase was 940, /etc/ibfleet/owned) still holds 172.16.0.0/16 dev ib0 proto kernel scope link src 172.16.34.1',
    );
  });

  it("status with another tableBase than the last deploy's says the files were generated with it, not that they were edited", () => {
    // Captured when the routing script was rendered per host: its header says so.
    const headed = withSection(parseProbeText, 'head /etc/ibfleet/ibfleet-routes', [
      '|#!/bin/sh',
      '|# /etc/ibfleet/ibfleet-routes',
      '|# Generated by ibfleet 0.1.0 for host 34 (memserver34), playbook dual-ib-routing.',
    ]);
    const status = assessStatus(host, moved, hook, parseProbe(headed));
    expect(status.reasons).toContain(
      "/etc/ibfleet/ibfleet-routes is the per-host version ibfleet 0.1.0 generated for host 34 (memserver34); this ibfleet's is the same on every host, with the host's part in its data: deploy replaces it (not a hand edit)",
    );
    expect(status.reasons).toContain('/etc/ibfleet/routes.conf is missing');
    expect(status.reasons).toContain(
      "/etc/ibfleet/owned was generated with tableBase 940, not 500 (the last deploy's record /etc/ibfleet/owned lists tables 941, 942): the inventory's fabric changed since; deploy regenerates it (not a hand edit)",
    );
    expect(status.reasons.join('\n')).not.toContain('was modified');
    // The hook carries no table: it is the same either way.
    expect(status.reasons.join('\n')).not.toContain('50-ibfleet-routes');
  });

  it('rollback with the new tableBase removes the old tables and rules too', () => {
    const assessment = assessRollback(host, moved, deployed940);
    expect(assessment.findings.filter((f) => !f.ok).map((f) => f.id)).toEqual(
      expect.arrayContaining(['old table 941', 'old table 942']),
    );
    const script = renderRollbackScript(host, moved, rollbackLines(host, moved, deployed940), 'run-1');
    expect(script).toContain('ip -4 route flush table 941');
    expect(script).toContain(
      "del_rules -m 'ibfleet: removed old rule from 172.16.34.1 lookup 941' from 172.16.34.1 lookup 941",
    );
  });

  it('a restore puts the old tables and rules back as they were', () => {
    const script = renderRestoreScript(host, moved, planRestore(host, moved, deployed940, [], ''), 'r');
    expect(script).toContain('del_rules from 172.16.34.1 lookup 941');
    expect(script).toContain('ip -4 rule add from 172.16.34.1 lookup 941 priority 941 || status=1');
    expect(script).toContain(
      'ip -4 route flush table 501 2>/dev/null\nip -4 route flush table 502 2>/dev/null\nip -4 route flush table 941 2>/dev/null\nip -4 route append 172.16.0.0/16 dev ib0 proto kernel scope link src 172.16.34.1 table 941 || status=1',
    );
    // A change that emptied the old tables differs from before in them.
    const emptied = parseProbe(
      fixture('netplan-hook-deployed.txt').replace(/^172\.16\.0\.0\/16 dev ib[01] table 94[12] .*\n/gm, ''),
    );
    expect(stateDifferences(host, moved, deployed940, emptied)).toEqual(
      expect.arrayContaining([expect.stringMatching(/^table 941: \(empty\), before 172\.16\.0\.0\/16 dev ib0/)]),
    );
  });

  it("native on NetworkManager: a profile routing into the old table is ibfleet's to move, not a stop; its old rule goes", () => {
    const nmHost = hostOf(moved, 16);
    const plan = planDeploy(nmHost, moved, native, parseProbe(fixture('nm-native-deployed.txt')));
    expect(nativeOf(plan)?.nmEdits.map((e) => [e.iface, e.routeTable, e.removeRules, e.addRules])).toEqual([
      ['ibs5f0', 501, ['priority 941 from 172.16.16.1 table 941'], ['priority 501 from 172.16.16.1 table 501']],
      ['ibs5f1', 502, ['priority 942 from 172.16.16.2 table 942'], ['priority 502 from 172.16.16.2 table 502']],
    ]);
    // NetworkManager leaves the kernel route it made in the old table: the change flushes it after the reapply.
    const script = renderApplyScript(nmHost, moved, plan);
    expect(script.indexOf('ip -4 route flush table 941')).toBeGreaterThan(script.indexOf('nmcli device reapply'));
  });

  it('the hook playbook on a host NetworkManager holds native routing of another tableBase: the old properties come off the profiles', () => {
    const nmHost = hostOf(moved, 16);
    const plan = planDeploy(nmHost, moved, hook, parseProbe(fixture('nm-native-deployed.txt')));
    expect(nativeOf(plan)?.nmEdits.map((e) => [e.iface, e.routeTable, e.removeRules])).toEqual([
      ['ibs5f0', 0, ['priority 941 from 172.16.16.1 table 941']],
      ['ibs5f1', 0, ['priority 942 from 172.16.16.2 table 942']],
    ]);
  });
});

const work = mkdtempSync(join(tmpdir(), 'ibfleet-owned-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe("every script that removes or puts back an earlier deploy's tables passes shellcheck", () => {
  const host = hostOf(moved, 34);
  it.each([
    ['the deploy', () => renderApplyScript(host, moved, planDeploy(host, moved, hook, deployed940), 'run-1')],
    ['the rollback', () => renderRollbackScript(host, moved, rollbackLines(host, moved, deployed940), 'run-1')],
    ['the restore', () => renderRestoreScript(host, moved, planRestore(host, moved, deployed940, [], ''), 'run-1')],
  ])('%s', (name, render) => {
    const path = join(work, `${name.replace(/\W+/g, '-')}.sh`);
    writeFileSync(path, render());
    expectShellcheckClean(path);
  });
});
