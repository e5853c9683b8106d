/**
 * The neigh-table step: the neighbour table's limits sized for the fleet, raised at once by the
 * routing script (or by deploy with native persistence), persisted for the next boot, warned about
 * by status, and nothing at all for a fleet the kernel's defaults fit.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadInventory } from '../../src/inventory/load.js';
import { readProbe } from '../../src/plan/change-output.js';
import { assessStatus, planDeploy } from '../../src/plan/host-plan.js';
import { loadPlaybook } from '../../src/playbook/playbook.js';
import { renderApplyScript } from '../../src/render/apply-script.js';
import { routesDataFor } from '../../src/render/host-files.js';
import { NEIGH_PATH } from '../../src/steps/neigh-table/index.js';
import { neighbourWarning, neighThresholds } from '../../src/steps/neigh-table/thresholds.js';
import { filesOf, loadFixturePlaybook } from '../fixtures/fixtures.js';
import { fixture } from '../helpers/fake-transport.js';
import { withFile, withSection } from '../helpers/probe-edit.js';

const fleetOf = (hosts: number, host = 'name: h{n}') =>
  loadInventory(
    `fabric: { subnet: 172.16.0.0/16 }\nhosts:\n${Array.from({ length: hosts }, (_, i) => `  ${i + 1}: { ${host.replace('{n}', String(i + 1))} }`).join('\n')}\n`,
    'fleet.yaml',
  );
const playbook = loadFixturePlaybook();
const native = loadPlaybook(
  readFileSync(new URL('../../playbooks/dual-ib-routing-native.yaml', import.meta.url), 'utf8'),
  'dual-ib-routing-native.yaml',
);
const withoutStep = loadPlaybook(
  'name: no-neigh\nsteps:\n  - policy-routing\n  - fabric-sysctl\n  - persist\n',
  'no-neigh.yaml',
);
const neigh = (t1: number, t2: number, t3: number) => [
  `/proc/sys/net/ipv4/neigh/default/gc_thresh1:${t1}`,
  `/proc/sys/net/ipv4/neigh/default/gc_thresh2:${t2}`,
  `/proc/sys/net/ipv4/neigh/default/gc_thresh3:${t3}`,
];

describe('the limits a fleet needs', () => {
  const withNics = (k: number) => ({ nics: Array.from({ length: k }) }) as never;
  const sized = (hosts: number, k = 2) =>
    neighThresholds({ hosts: Array.from({ length: hosts }, () => withNics(k)) }, withNics(k));
  it.each([
    [2, { gc_thresh1: 128, gc_thresh2: 512, gc_thresh3: 1024 }],
    [128, { gc_thresh1: 128, gc_thresh2: 512, gc_thresh3: 1024 }],
    [129, { gc_thresh1: 256, gc_thresh2: 1024, gc_thresh3: 2048 }],
    [254, { gc_thresh1: 256, gc_thresh2: 1024, gc_thresh3: 2048 }],
  ])('%i dual-NIC hosts → %o', (hosts, want) => expect(sized(hosts)).toEqual(want));

  it('an 8-NIC GPU node among 254 may hold 8 × 2 032 entries: 4096/16384/32768 (the kernel default is 1024)', () => {
    expect(sized(254, 8)).toEqual({ gc_thresh1: 4096, gc_thresh2: 16384, gc_thresh3: 32768 });
    expect(sized(8, 8)).toEqual({ gc_thresh1: 128, gc_thresh2: 512, gc_thresh3: 1024 });
    expect(sized(9, 8)).toEqual({ gc_thresh1: 256, gc_thresh2: 1024, gc_thresh3: 2048 });
  });

  it('each host is sized by its own NIC count: in 100 GPU nodes (8 NICs) + 20 CPU servers (2), 8 × 840 and 2 × 840 entries', () => {
    const fleet = {
      hosts: [...Array.from({ length: 100 }, () => withNics(8)), ...Array.from({ length: 20 }, () => withNics(2))],
    };
    expect(neighThresholds(fleet, withNics(8))).toEqual({ gc_thresh1: 2048, gc_thresh2: 8192, gc_thresh3: 16384 });
    expect(neighThresholds(fleet, withNics(2))).toEqual({ gc_thresh1: 512, gc_thresh2: 2048, gc_thresh3: 4096 });
  });
});

describe('a fleet that mixes 8-NIC GPU nodes and 2-NIC servers', () => {
  const gpu = Array.from({ length: 20 }, (_, i) => `  ${i + 1}: { name: gpu${i + 1}, nics: 8 }`);
  const fleet = loadInventory(
    `fabric: { subnet: 172.16.0.0/16 }\nhosts:\n${gpu.join('\n')}\n  40: { name: cpu40 }\n  41: { name: cpu41 }\n`,
    'fleet.yaml',
  );

  it('a GPU node gets the file for its 8 × 164 entries; a 2-NIC server, whose 2 × 164 the defaults fit, none', () => {
    const node = filesOf(fleet.hosts[0]!, fleet, playbook, 'netplan').find((f) => f.path === NEIGH_PATH)?.content;
    expect(node).toContain('# Neighbour table for 8 NICs here × 164 fabric NICs:');
    expect(node).toContain('net.ipv4.neigh.default.gc_thresh3 = 4096\n');
    expect(
      filesOf(
        fleet.hosts.find((h) => h.id === 40)!,
        fleet,
        playbook,
        'netplan',
      ).find((f) => f.path === NEIGH_PATH),
    ).toBeUndefined();
  });
});

describe("a fleet that needs more than the kernel's defaults", () => {
  const fleet = fleetOf(200);
  const host = fleet.hosts[0]!;

  it('its own sysctl.d file persists gc_thresh1/2/3 = 256/1024/2048; the routing program raises them, largest first', () => {
    const files = filesOf(host, fleet, playbook, 'netplan');
    expect(files.find((f) => f.path === NEIGH_PATH)?.content).toContain(
      '\nnet.ipv4.neigh.default.gc_thresh1 = 256\nnet.ipv4.neigh.default.gc_thresh2 = 1024\nnet.ipv4.neigh.default.gc_thresh3 = 2048\n',
    );
    expect(files.find((f) => f.path === '/etc/sysctl.d/60-ibfleet-fabric.conf')?.content).not.toContain('gc_thresh');
    expect(routesDataFor(playbook, host, fleet)).toContain(
      '\nneigh gc_thresh3 2048\nneigh gc_thresh2 1024\nneigh gc_thresh1 256\n',
    );
  });

  it('with native persistence deploy raises the limits the host has below them itself, never lowering one', () => {
    const nmFleet = fleetOf(200, 'name: h{n}, interfaces: [ibs5f0, ibs5f1], manager: networkmanager');
    const nmHost = nmFleet.hosts.find((h) => h.id === 16)!;
    const low = withSection(fixture('nm-boot.txt'), 'neigh', neigh(128, 4096, 1024));
    const raised = (probe: string) =>
      renderApplyScript(nmHost, nmFleet, planDeploy(nmHost, nmFleet, native, readProbe(probe))).match(
        /neigh\/default\/gc_thresh\d/g,
      ) ?? [];
    expect(raised(low)).toEqual([
      'neigh/default/gc_thresh3',
      'neigh/default/gc_thresh3',
      'neigh/default/gc_thresh1',
      'neigh/default/gc_thresh1',
    ]);
    expect(renderApplyScript(nmHost, nmFleet, planDeploy(nmHost, nmFleet, native, readProbe(low)))).toContain(
      'cur=$(cat /proc/sys/net/ipv4/neigh/default/gc_thresh3 2>/dev/null) && { [ "$cur" -ge 2048 ]',
    );
    expect(
      planDeploy(nmHost, nmFleet, native, readProbe(low)).files.find((f) => f.path === NEIGH_PATH)?.content,
    ).toContain('Raised, never lowered, by deploy too.');
    expect(raised(withSection(fixture('nm-boot.txt'), 'neigh', neigh(256, 1024, 2048)))).toEqual([]);
  });

  it('status warns about a host below them, and says which step raises them', () => {
    expect(neighbourWarning(fleet, host, { gc_thresh1: '128', gc_thresh2: '512', gc_thresh3: '1024' })).toMatch(
      /^neighbour table: gc_thresh1 128, gc_thresh2 512, gc_thresh3 1024 below what 200 hosts × 2 NICs need \(gc_thresh1 256, gc_thresh2 1024, gc_thresh3 2048\).*deploy raises them \(neigh-table\)$/,
    );
    expect(
      neighbourWarning(fleet, host, { gc_thresh1: '1024', gc_thresh2: '8192', gc_thresh3: '16384' }),
    ).toBeUndefined();
    const host34 = { ...fleet.hosts[33]!, manager: 'netplan' as const };
    const status = assessStatus(
      host34,
      fleet,
      playbook,
      readProbe(withSection(fixture('netplan-boot.txt'), 'neigh', neigh(128, 512, 1024))),
    );
    expect(status.warnings?.[0]).toMatch(/^neighbour table: /);
    expect(
      assessStatus(
        host34,
        fleet,
        withoutStep,
        readProbe(withSection(fixture('netplan-boot.txt'), 'neigh', neigh(128, 512, 1024))),
      ).warnings,
    ).toBeUndefined();
  });
});

describe("a fleet the kernel's defaults fit", () => {
  const fleet = loadInventory(
    'fabric: { subnet: 172.16.0.0/16 }\nhosts:\n  16: { name: cpuserver16 }\n  34: { name: memserver34, manager: netplan }\n',
    'seeds.yaml',
  );
  const host = fleet.hosts.find((h) => h.id === 34)!;

  it("gets neither the file nor a line of the routing script (an admin's higher limits stay)", () => {
    expect(filesOf(host, fleet, playbook, 'netplan').map((f) => f.path)).not.toContain(NEIGH_PATH);
    expect(routesDataFor(playbook, host, fleet)).not.toMatch(/^neigh /m);
  });

  it('a file left for a larger fleet is stale: deploy removes it', () => {
    const left = withFile(fixture('netplan-boot.txt'), NEIGH_PATH, '644', '0'.repeat(64));
    const plan = planDeploy(host, fleet, playbook, readProbe(left));
    expect(plan.remove).toContain(NEIGH_PATH);
    expect(planDeploy(host, fleet, playbook, readProbe(fixture('netplan-boot.txt'))).remove).not.toContain(NEIGH_PATH);
  });
});
