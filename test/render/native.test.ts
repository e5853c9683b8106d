/**
 * What native persistence renders: the netplan file and the nmcli commands as golden files, the
 * netplan file read by the real netplan together with a host's own file (it merges: the host's
 * routes stay, ibfleet's are added), and every script that tells a manager something passing
 * shellcheck.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { loadPlaybook } from '../../src/playbook/playbook.js';
import { renderApplyScript, renderRollbackScript } from '../../src/render/apply-script.js';
import { readProbe } from '../../src/plan/change-output.js';
import { planDeploy } from '../../src/plan/host-plan.js';
import { rollbackLines } from '../../src/plan/rollback.js';
import { renderForDisplay } from '../../src/render/host-render.js';
import { renderRestoreScript } from '../../src/render/restore-script.js';
import { renderNativeSteps, type NativeSteps } from '../../src/steps/persist/native-apply.js';
import { renderNetplanFile } from '../../src/steps/persist/native-netplan.js';
import { NETPLAN_FILE_PATH } from '../../src/steps/persist/paths.js';
import { filesOf, hostOf, loadFixtureFleet, loadFixturePlaybook } from '../fixtures/fixtures.js';
import { fixture } from '../helpers/fake-transport.js';
import { netplanGenerate, expectShellcheckClean } from '../helpers/tools.js';

const UPDATE = process.env.UPDATE_GOLDEN === '1';
const native = loadPlaybook(
  readFileSync(new URL('../../playbooks/dual-ib-routing-native.yaml', import.meta.url), 'utf8'),
  'playbooks/dual-ib-routing-native.yaml',
);
const seeds = loadFixtureFleet('seeds.yaml');
const odd = loadFixtureFleet('odd-names.yaml');
const memserver34 = hostOf(seeds, 34);
const cpuserver16 = hostOf(seeds, 16);
const pkeyhost7 = hostOf(odd, 7);
const work = mkdtempSync(join(tmpdir(), 'ibfleet-native-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

function expectGolden(rendered: string, name: string): void {
  const path = fileURLToPath(new URL(`../golden/${name}`, import.meta.url));
  if (UPDATE) {
    mkdirSync(join(path, '..'), { recursive: true });
    writeFileSync(path, rendered);
    return;
  }
  expect(rendered, `test/golden/${name} (UPDATE_GOLDEN=1 rewrites it)`).toBe(readFileSync(path, 'utf8'));
}

const has = (tool: string) => spawnSync(tool, ['--help'], { encoding: 'utf8' }).error === undefined;

describe('golden files: native persistence', () => {
  it("memserver34's ownership record, sysctl file and netplan file; no routing script, hook or timer", () => {
    const files = filesOf(memserver34, seeds, native, 'netplan', {
      kind: 'netplan',
      devices: [
        { iface: 'ib0', type: 'ethernets', id: 'ib0' },
        { iface: 'ib1', type: 'ethernets', id: 'ib1' },
      ],
    });
    expect(files.map((f) => [f.path, f.mode.toString(8), f.role])).toEqual([
      ['/etc/ibfleet/owned', '644', 'record'],
      ['/etc/sysctl.d/60-ibfleet-fabric.conf', '644', 'sysctl'],
      [NETPLAN_FILE_PATH, '600', 'netplan'],
    ]);
    expectGolden(files[2]!.content, 'memserver34/native/60-ibfleet.yaml');
    expectGolden(files[1]!.content, 'memserver34/native/60-ibfleet-fabric.conf');
  });

  it('a NIC the host defines under another type and id, and ids YAML would read as something else, quoted', () => {
    const text = renderNetplanFile(pkeyhost7, odd, native.name, [
      { iface: 'ib0.8001', type: 'vlans', id: 'ib0.8001' },
      { iface: 'ib_fab-2', type: 'ethernets', id: 'yes' },
    ]);
    expect(text).toContain('  vlans:\n    "ib0.8001":\n');
    expect(text).toContain('  ethernets:\n    "yes":\n');
    expectGolden(text, 'pkeyhost7/native/60-ibfleet.yaml');
  });

  it("cpuserver16's render: the ownership record, the sysctl file and the nmcli commands deploy runs", () => {
    const render = renderForDisplay({ ...cpuserver16, manager: 'networkmanager' }, seeds, native);
    expect(render.files.map((f) => f.role)).toEqual(['record', 'sysctl']);
    // Native persistence's commands; what links would run for a NIC without its address has its own golden (test/steps/links-render.test.ts).
    const persist = render.commands.filter((c) => !c.title.startsWith('links:'));
    expectGolden(
      `${persist.map((c) => [`# ${c.title}`, ...c.lines].join('\n')).join('\n')}\n`,
      'cpuserver16/native/nmcli',
    );
  });
});

describe.skipIf(!has('netplan'))("the real netplan reads the file together with the host's own", () => {
  const generate = (files: Record<string, string>) => netplanGenerate(work, files);
  const own =
    'network:\n  version: 2\n  renderer: networkd\n  ethernets:\n    ib0:\n      addresses: [172.16.34.1/16]\n      routes:\n        - to: 10.9.0.0/16\n          via: 172.16.0.254\n    ib1:\n      addresses: [172.16.34.2/16]\n';
  const ours = renderNetplanFile(memserver34, seeds, native.name, []);

  it('merges: ib0 keeps its own route and address and gains the table route and the rule', () => {
    const { status, stderr, network } = generate({ '99-netcfg.yaml': own, '60-ibfleet.yaml': ours });
    expect(status, stderr).toBe(0);
    const ib0 = network['10-netplan-ib0.network']!;
    expect(ib0).toContain('Address=172.16.34.1/16');
    expect(ib0).toContain('[Route]\nDestination=10.9.0.0/16\nGateway=172.16.0.254');
    expect(ib0).toContain('[Route]\nDestination=172.16.0.0/16\nPreferredSource=172.16.34.1\nScope=link\nTable=941');
    expect(ib0).toContain('[RoutingPolicyRule]\nFrom=172.16.34.1\nTable=941\nPriority=941');
    expect(network['10-netplan-ib1.network']).toContain(
      '[RoutingPolicyRule]\nFrom=172.16.34.2\nTable=942\nPriority=942',
    );
  });

  it('refuses what is not netplan: the validation deploy runs before the file is renamed into place catches it', () => {
    expect(
      generate({ '99-netcfg.yaml': own, '60-ibfleet.yaml': ours.replace('table: 941', 'table: nine') }).status,
    ).not.toBe(0);
  });
});

describe('every script that tells a manager something passes shellcheck', () => {
  const everything: NativeSteps = {
    nmEdits: [
      {
        iface: 'ibs5f0',
        uuid: '6cf550b9-cd4c-4278-8bfd-2db27d64ca11',
        name: "my 'fabric' port",
        routeTable: 941,
        removeRules: ['priority 7 from 172.16.16.1 table 941'],
        addRules: ['priority 941 from 172.16.16.1 table 941'],
      },
    ],
    nmRestore: [
      {
        iface: 'ibs5f1',
        uuid: '0a00b4ab-1506-4493-8454-9223cb2cd346',
        routeTable: '0',
        rules: ['priority 100 to 10.9.0.0/16 table 100'],
      },
    ],
    nmReapply: ['ibs5f0', 'ibs5f1'],
    netplan: { reload: true, reconfigure: ['ibs5f0', 'ibs5f1'] },
    handOver: [{ iface: 'ibs5f0', address: '172.16.16.1', table: 941, priority: 941 }],
    await: [{ iface: 'ibs5f0', address: '172.16.16.1', table: 941, priority: 941 }],
    awaitGone: [{ iface: 'ibs5f1', address: '172.16.16.2', table: 942, priority: 942 }],
    awaitRuleGone: [{ iface: 'ibs5f0', address: '172.16.16.1', table: 941, priority: 941 }],
  };
  const hook = loadFixturePlaybook();
  // A fleet whose neighbour table must grow, on a host below it: the native change raises it itself.
  const big = { ...seeds, hosts: Array.from({ length: 200 }, () => cpuserver16) };
  const lowNeigh = fixture('nm-boot.txt').replace(
    '@@ibfleet end',
    '@@ibfleet neigh\n/proc/sys/net/ipv4/neigh/default/gc_thresh3:1024\n@@ibfleet end',
  );
  const apply = (host: typeof memserver34, fleet: typeof seeds, playbook: typeof native, probe: string) =>
    renderApplyScript(host, fleet, planDeploy(host, fleet, playbook, readProbe(probe)), 'run-1');
  it.each([
    [
      'a native apply on NetworkManager (profiles, reapply, neighbour limits, stray main routes, sysctls)',
      () => apply(cpuserver16, big, native, lowNeigh),
    ],
    [
      'a native apply on netplan (the file checked by netplan generate, the hook taken away)',
      () => apply(memserver34, seeds, native, fixture('netplan-hook-deployed.txt')),
    ],
    ['an apply switching to the hook', () => apply(memserver34, seeds, hook, fixture('netplan-native-deployed.txt'))],
    [
      'a rollback taking native persistence away',
      () =>
        renderRollbackScript(
          cpuserver16,
          seeds,
          rollbackLines(cpuserver16, seeds, readProbe(fixture('nm-native-deployed.txt'))),
          'run-1',
        ),
    ],
    [
      'a restore putting profiles and the netplan file back',
      () =>
        renderRestoreScript(
          memserver34,
          seeds,
          {
            files: [{ path: NETPLAN_FILE_PATH, before: null }],
            createdDirs: [],
            steps: [{ manager: renderNativeSteps(everything) }],
          },
          'run-1',
        ),
    ],
  ])('%s', (name, render) => {
    const path = join(work, `${name.replace(/\W+/g, '-')}.sh`);
    writeFileSync(path, render());
    // -S warning, as for every change script: the prelude's helpers a restore does not call are style notes.
    expectShellcheckClean(path);
  });
});
