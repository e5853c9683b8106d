/**
 * Native persistence decided from real probe transcripts of the lab's NetworkManager and netplan
 * hosts (test/fixtures/probe/nm-*.txt, netplan-native-deployed.txt), each with one edit: what the
 * probe's NetworkManager section says, which persistence a host gets and why, what deploy, status
 * and rollback plan, and what a restore puts back.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { HostError } from '../../src/errors.js';
import type { HostFacts } from '../../src/facts/host-facts.js';
import { normalizeNmRule, parseNmSection, versionAtLeast } from '../../src/facts/nm-facts.js';
import { readProbe as parseProbe } from '../../src/plan/change-output.js';
import { assessStatus, planDeploy, type DeployPlan } from '../../src/plan/host-plan.js';
import { planRestore } from '../../src/plan/restore.js';
import { assessRollback } from '../../src/plan/rollback.js';
import { loadPlaybook, type Playbook } from '../../src/playbook/playbook.js';
import { renderApplyScript } from '../../src/render/apply-script.js';
import type { NativeSteps } from '../../src/steps/persist/native-apply.js';
import { planNativeRollback } from '../../src/steps/persist/native-plan.js';
import { NETPLAN_FILE_PATH } from '../../src/steps/persist/paths.js';
import { hostOf, loadFixtureFleet, loadFixturePlaybook } from '../fixtures/fixtures.js';

const fixture = (name: string) => readFileSync(new URL(`../fixtures/probe/${name}`, import.meta.url), 'utf8');
const seeds = loadFixtureFleet('seeds.yaml');
const nmHost = hostOf(seeds, 16);
const netplanHost = hostOf(seeds, 34);
const native = loadPlaybook(
  readFileSync(new URL('../../playbooks/dual-ib-routing-native.yaml', import.meta.url), 'utf8'),
  'playbooks/dual-ib-routing-native.yaml',
);
const hook = loadFixturePlaybook();
const ifupdownHost = { ...netplanHost, manager: 'ifupdown' as const };

const nmBoot = fixture('nm-boot.txt');
const nmDeployed = fixture('nm-native-deployed.txt');
const netplanDeployed = fixture('netplan-native-deployed.txt');
const netplanHook = fixture('netplan-hook-deployed.txt');

/** The probe of a host whose NetworkManager says it is `version`. */
const withNmVersion = (probe: string, version: string) =>
  probe.replace(/^general running:\S+$/m, `general running:${version}`);
const UUID0 = /^active ibs5f0 (\S+)$/m.exec(nmBoot)![1]!;
const UUID1 = /^active ibs5f1 (\S+)$/m.exec(nmBoot)![1]!;

/** What a deploy tells the network manager: the persist step's part of the change. */
const nativeOf = (plan: DeployPlan) => plan.parts.get('persist')?.memo as NativeSteps | undefined;

function planError(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    if (error instanceof HostError) return error.message;
    throw error;
  }
  throw new Error('planned without an error');
}

describe("the probe's NetworkManager section", () => {
  it("reads the running version, each fabric NIC's active profile and its routing properties", () => {
    const nm = parseProbe(nmBoot).nm!;
    expect(nm.version).toBe('1.42.4');
    expect([...nm.active]).toEqual([
      ['ibs5f0', UUID0],
      ['ibs5f1', UUID1],
    ]);
    expect(nm.profiles.get(UUID0)).toEqual({
      uuid: UUID0,
      name: 'ibs5f0',
      routeTable: '0',
      rules: ['priority 100 to 10.9.0.0/16 table 100'],
    });
    expect(nm.profiles.get(UUID1)).toEqual({ uuid: UUID1, name: 'ibs5f1', routeTable: '0', rules: [] });
  });

  it.each([
    ['no answer from NetworkManager (not running, not installed)', ['active ib0 x'], undefined],
    [
      'a profile name with colons and a backslash, as nmcli -t escapes them',
      [
        'general running:1.22.10',
        'active ib0 u1',
        'connection.uuid:u1',
        'connection.id:fabric\\:port\\\\1',
        'ipv4.route-table:941',
        'ipv4.routing-rules:priority 941 from 172.16.1.1 table 941, priority 5 to 10.0.0.0/8 table 5',
      ],
      {
        version: '1.22.10',
        name: 'fabric:port\\1',
        rules: ['priority 941 from 172.16.1.1 table 941', 'priority 5 to 10.0.0.0/8 table 5'],
      },
    ],
    [
      'a profile nmcli did not show',
      ['general running:1.30.0', 'active ib0 u1'],
      { version: '1.30.0', name: undefined, rules: undefined },
    ],
  ])('%s', (_, lines, want) => {
    const nm = parseNmSection(lines);
    if (want === undefined) return expect(nm).toBeUndefined();
    expect(nm?.version).toBe(want.version);
    expect(nm?.profiles.get('u1')?.name).toBe(want.name);
    expect(nm?.profiles.get('u1')?.rules).toEqual(want.rules);
  });

  it.each([
    ['1.42.4', true],
    ['1.18.0', true],
    ['1.18', true],
    ['1.17.90', false],
    ['1.10.6', false],
    ['2.0', true],
    ['1.20.0-dev', true],
    ['unknown', false],
  ])('NetworkManager %s holds routing rules: %s', (version, ok) => {
    expect(versionAtLeast(version, '1.18')).toBe(ok);
  });

  it('compares rules however they are spaced, with or without /32', () => {
    expect(normalizeNmRule('priority  941 from 172.16.16.1/32   table 941')).toBe(
      normalizeNmRule('priority 941 from 172.16.16.1 table 941'),
    );
  });
});

describe('which persistence a host gets', () => {
  const choose = (host: typeof nmHost, probe: string, playbook: Playbook = native) => {
    return playbook.persister.choose({
      host,
      fleet: seeds,
      playbook: playbook.name,
      manager: host.manager as never,
      facts: parseProbe(probe),
    });
  };

  it('the hook playbook: the hook, whatever the host could do', () => {
    expect(choose(nmHost, nmBoot, hook)).toEqual({ persistence: { kind: 'script' }, notes: [], blockers: [] });
  });

  it('NetworkManager 1.18+: the active profile of each fabric NIC', () => {
    const choice = choose(nmHost, nmBoot);
    expect(choice.blockers).toEqual([]);
    expect(
      choice.persistence.kind === 'networkmanager' &&
        choice.persistence.profiles.map((p) => [p.nic.iface, p.profile.uuid]),
    ).toEqual([
      ['ibs5f0', UUID0],
      ['ibs5f1', UUID1],
    ]);
  });

  it("NetworkManager 1.10 (Ubuntu 18.04's): the hook, and the plan says why", () => {
    expect(choose(nmHost, withNmVersion(nmBoot, '1.10.6'))).toEqual({
      persistence: { kind: 'script' },
      notes: [
        'NetworkManager 1.10.6 has no ipv4.routing-rules (they came with 1.18): the routing persists with the dispatcher hook instead',
      ],
      blockers: [],
    });
  });

  it('a NIC without an active profile stops the host, naming the NIC and the way out', () => {
    const [blocker] = choose(nmHost, nmBoot.replace(/^active ibs5f1 .*\n/m, '')).blockers;
    expect(blocker).toMatch(
      /^ibs5f1 has no active NetworkManager connection profile; .*nmcli connection up .*or deploy the hook playbook$/,
    );
  });

  it('a profile that already routes into another table stops the host rather than moving its routes', () => {
    const probe = nmBoot.replace(/(connection\.id:ibs5f1\n)ipv4\.route-table:0/, '$1ipv4.route-table:100');
    expect(choose(nmHost, probe).blockers).toEqual([
      `ibs5f1's connection profile ibs5f1 already routes into table 100 (ipv4.route-table); ibfleet would move its routes to table 942: set it to 0 (nmcli connection modify uuid ${UUID1} ipv4.route-table 0), or deploy the hook playbook`,
    ]);
  });

  it('NetworkManager that does not answer stops the host', () => {
    expect(choose(nmHost, nmBoot.replace(/^general running:.*\n/m, '')).blockers[0]).toMatch(
      /^NetworkManager did not answer nmcli \(is it running\?\)/,
    );
  });

  it("netplan: the device type and id the host's own netplan file gives each NIC, and what netplan cannot do", () => {
    expect(choose(netplanHost, netplanHook)).toEqual({
      persistence: {
        kind: 'netplan',
        devices: [
          { iface: 'ib0', type: 'ethernets', id: 'ib0' },
          { iface: 'ib1', type: 'ethernets', id: 'ib1' },
        ],
      },
      notes: [],
      blockers: [],
    });
    expect(planDeploy(netplanHost, seeds, native, parseProbe(netplanHook)).notes).toEqual([
      "netplan cannot keep the kernel's subnet route out of the main table, so mainRoutes: remove does not apply here; the source rules (priority 941, 942) come before main, so each NIC's traffic still leaves through it",
    ]);
  });

  it("netplan defining both NICs with one glob: the hook, since one definition cannot carry two NICs' routes", () => {
    const glob = netplanHook.replace(
      /\| {4}ib0:\n\| {6}addresses: \[172\.16\.34\.1\/16\]\n\| {4}ib1:\n\| {6}addresses: \[172\.16\.34\.2\/16\]\n/,
      '|    fabric:\n|      match: { name: "ib*" }\n',
    );
    expect(glob).not.toBe(netplanHook);
    expect(choose(netplanHost, glob).notes).toEqual([
      'ib0 has no netplan definition of its own, so a netplan file cannot add its routing: the routing persists with the networkd-dispatcher hook instead',
    ]);
  });

  it('a netplan host without networkctl: the hook, with the reason', () => {
    expect(choose(netplanHost, netplanHook.replace(/^networkctl\n/m, '')).notes).toEqual([
      'networkctl is not installed: the routing persists with the networkd-dispatcher hook instead',
    ]);
  });

  it('ifupdown: its own if-up.d hook, said as such', () => {
    const choice = choose(ifupdownHost, netplanHook);
    expect(choice.persistence).toEqual({ kind: 'script' });
    expect(choice.notes[0]).toMatch(/^ifupdown: native persistence is ifupdown's own if-up\.d hook/);
  });
});

describe('deploy, status and rollback with native persistence', () => {
  it("a NetworkManager host: both profiles get the table and rule (the user's own rule stays), both NICs are reapplied, no routing script", () => {
    const plan = planDeploy(nmHost, seeds, native, parseProbe(nmBoot));
    expect(plan.routingScript).toBe(false);
    expect(plan.write.map((f) => f.path)).toEqual(['/etc/ibfleet/owned', '/etc/sysctl.d/60-ibfleet-fabric.conf']);
    expect(nativeOf(plan)?.nmEdits).toEqual([
      {
        iface: 'ibs5f0',
        uuid: UUID0,
        name: 'ibs5f0',
        routeTable: 941,
        removeRules: [],
        addRules: ['priority 941 from 172.16.16.1 table 941'],
      },
      {
        iface: 'ibs5f1',
        uuid: UUID1,
        name: 'ibs5f1',
        routeTable: 942,
        removeRules: [],
        addRules: ['priority 942 from 172.16.16.2 table 942'],
      },
    ]);
    expect(nativeOf(plan)?.nmReapply).toEqual(['ibs5f0', 'ibs5f1']);
    expect(plan.changes.slice(0, 2)).toEqual([
      {
        kind: 'nm-profile',
        action: 'set',
        subject: 'ibs5f0',
        text: 'ibs5f0: nmcli: profile ibs5f0 ipv4.route-table 941, ipv4.routing-rules + priority 941 from 172.16.16.1 table 941; reapply',
      },
      {
        kind: 'nm-profile',
        action: 'set',
        subject: 'ibs5f1',
        text: 'ibs5f1: nmcli: profile ibs5f1 ipv4.route-table 942, ipv4.routing-rules + priority 942 from 172.16.16.2 table 942; reapply',
      },
    ]);
    const script = renderApplyScript(nmHost, seeds, plan);
    expect(script).toContain(
      `nmcli connection modify uuid ${UUID0} ipv4.route-table 941 +ipv4.routing-rules 'priority 941 from 172.16.16.1 table 941'`,
    );
    expect(script).toContain('nmcli device reapply ibs5f0');
    // No line runs the routing program (its restore may still remove a copy of it: remove_new).
    expect(script).not.toMatch(/^\s*\/etc\/ibfleet\/ibfleet-routes\b/m);
  });

  it('a second deploy changes nothing, and status is ok', () => {
    const facts = parseProbe(nmDeployed);
    expect(planDeploy(nmHost, seeds, native, facts).changes).toEqual([]);
    expect(assessStatus(nmHost, seeds, native, facts)).toMatchObject({ status: 'ok', reasons: [] });
    expect(assessStatus(netplanHost, seeds, native, parseProbe(netplanDeployed))).toMatchObject({
      status: 'ok',
      reasons: [],
    });
  });

  it("status reports a profile edited behind ibfleet's back as drift, before the kernel notices", () => {
    const edited = nmDeployed.replace(/(connection\.id:ibs5f1\n)ipv4\.route-table:942/, '$1ipv4.route-table:0');
    expect(assessStatus(nmHost, seeds, native, parseProbe(edited)).reasons).toEqual([
      'ibs5f1: connection profile ibs5f1: ipv4.route-table is 0, want 942',
    ]);
  });

  it('status reports an edited netplan file as drift, and deploy rewrites it and reloads networkd', () => {
    const probe = netplanDeployed.replace(
      /^([0-9a-f]{64})( {2}\/etc\/netplan\/60-ibfleet\.yaml)$/m,
      `${'0'.repeat(64)}$2`,
    );
    expect(probe).not.toBe(netplanDeployed);
    expect(assessStatus(netplanHost, seeds, native, parseProbe(probe)).reasons).toEqual([
      `${NETPLAN_FILE_PATH} was modified (content differs from the rendered file)`,
    ]);
    const plan = planDeploy(netplanHost, seeds, native, parseProbe(probe));
    expect(plan.write.map((f) => f.path)).toEqual([NETPLAN_FILE_PATH]);
    expect(nativeOf(plan)?.netplan).toEqual({ reload: true, reconfigure: ['ib0', 'ib1'] });
  });

  it("the hook playbook on a native host: the profiles lose ibfleet's table and rule (and only those), the hook comes", () => {
    const facts = parseProbe(
      nmDeployed.replace(
        'ipv4.routing-rules:priority 941',
        'ipv4.routing-rules:priority 100 to 10.9.0.0/16 table 100, priority 941',
      ),
    );
    expect(assessStatus(nmHost, seeds, hook, facts).reasons).toContain(
      "ibs5f0: connection profile ibs5f0 still carries native persistence's ipv4.route-table 941, rule priority 941 from 172.16.16.1 table 941 (this host persists with the hook)",
    );
    const plan = planDeploy(nmHost, seeds, hook, facts);
    expect(plan.routingScript).toBe(true);
    expect(nativeOf(plan)?.nmEdits[0]).toEqual({
      iface: 'ibs5f0',
      uuid: UUID0,
      name: 'ibs5f0',
      routeTable: 0,
      removeRules: ['priority 941 from 172.16.16.1 table 941'],
      addRules: [],
    });
    // The record too: its header names the playbook.
    expect(plan.write.map((f) => f.role)).toEqual([
      'routing-data',
      'routing-script',
      'record',
      'sysctl',
      'hook',
      'repair',
      'repair',
      'repair',
    ]);
  });

  it('the native playbook on a hook host removes the hook, its routing script and its timer', () => {
    const plan = planDeploy(netplanHost, seeds, native, parseProbe(netplanHook));
    expect(plan.remove).toEqual([
      '/etc/ibfleet/ibfleet-routes',
      '/etc/networkd-dispatcher/routable.d/50-ibfleet-routes',
      '/etc/networkd-dispatcher/configured.d/50-ibfleet-routes',
      '/etc/systemd/networkd.conf.d/60-ibfleet.conf',
      '/etc/systemd/system/ibfleet-routes-repair.service',
      '/etc/systemd/system/ibfleet-routes-repair.timer',
      '/etc/systemd/system/timers.target.d/ibfleet-routes-repair.conf',
    ]);
    expect(plan.write.map((f) => f.path)).toContain(NETPLAN_FILE_PATH);
  });

  it('the hook playbook on a netplan-native host removes the netplan file and waits for networkd to drop its rules', () => {
    const plan = planDeploy(netplanHost, seeds, hook, parseProbe(netplanDeployed));
    expect(plan.remove).toEqual([NETPLAN_FILE_PATH]);
    expect(nativeOf(plan)).toMatchObject({
      netplan: { reload: true, reconfigure: ['ib0', 'ib1'] },
      awaitGone: [{ iface: 'ib0' }, { iface: 'ib1' }],
    });
  });

  it('a NIC without an active profile: the plan fails and names it; nothing would change', () => {
    expect(
      planError(() => planDeploy(nmHost, seeds, native, parseProbe(nmBoot.replace(/^active ibs5f1 .*\n/m, '')))),
    ).toMatch(/^ibs5f1 has no active NetworkManager connection profile/);
  });

  it("rollback takes ibfleet's properties off the profiles and leaves the user's rule", () => {
    const facts = parseProbe(
      nmDeployed.replace(
        'ipv4.routing-rules:priority 941',
        'ipv4.routing-rules:priority 100 to 10.9.0.0/16 table 100, priority 941',
      ),
    );
    expect(
      assessRollback(nmHost, seeds, facts)
        .findings.filter((f) => !f.ok)
        .map((f) => f.id),
    ).toEqual(expect.arrayContaining(['nm ibs5f0', 'nm ibs5f1']));
    const steps = planNativeRollback(nmHost, facts)!;
    expect(steps.nmEdits.map((e) => [e.iface, e.routeTable, e.removeRules])).toEqual([
      ['ibs5f0', 0, ['priority 941 from 172.16.16.1 table 941']],
      ['ibs5f1', 0, ['priority 942 from 172.16.16.2 table 942']],
    ]);
    expect(assessRollback(nmHost, seeds, parseProbe(nmBoot)).findings.filter((f) => f.id.startsWith('nm '))).toEqual(
      [],
    );
  });

  it('a restore after a failed verification puts each changed profile back as the probe saw it', () => {
    const before = parseProbe(nmBoot);
    const plan = planDeploy(nmHost, seeds, native, before);
    const spec = planRestore(nmHost, seeds, before, plan.write, '', plan.parts);
    const restore = spec.steps.flatMap((s) => s.manager ?? []).join('\n');
    expect(restore).toContain(
      `nmcli connection modify uuid ${UUID0} ipv4.route-table 0 ipv4.routing-rules 'priority 100 to 10.9.0.0/16 table 100'`,
    );
    expect(restore).toContain(`nmcli connection modify uuid ${UUID1} ipv4.route-table 0 ipv4.routing-rules ''`);
    expect(restore).toContain('nmcli device reapply ibs5f0');
    expect(restore).toContain('nmcli device reapply ibs5f1');
    expect([
      { iface: 'ibs5f0', uuid: UUID0, routeTable: '0', rules: ['priority 100 to 10.9.0.0/16 table 100'] },
      { iface: 'ibs5f1', uuid: UUID1, routeTable: '0', rules: [] },
    ]).toHaveLength(2);
  });
});

/** Keeps the type checker honest about the fixtures' facts. */
export type { HostFacts };
