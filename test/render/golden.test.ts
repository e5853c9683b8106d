/**
 * Golden files: the exact bytes ibfleet installs on the seeds' machines, one file per renderer and
 * network manager, kept under test/golden/<host>/ so a review shows every change to what a host
 * receives.
 *
 * After an intended change to a renderer (or a version bump, which every header names), rewrite
 * them and review the diff before committing:
 *
 *   UPDATE_GOLDEN=1 npx vitest run test/render/golden.test.ts && git diff test/golden
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { MANAGERS, type Host, type Manager } from '../../src/inventory/model.js';
import { loadPlaybook, type Playbook } from '../../src/playbook/playbook.js';
import { routesDataFor } from '../../src/render/host-files.js';
import { renderForDisplay } from '../../src/render/host-render.js';
import { ROUTES_DATA_PATH, ROUTING_SCRIPT_PATH } from '../../src/script/paths.js';
import { ROUTES_PROGRAM } from '../../src/script/routes-program.js';
import type { RenderedFile } from '../../src/script/rendered-file.js';
import {
  renderSysctlConf,
  sysctlKey,
  SYSCTL_PATH,
  type SysctlParams,
} from '../../src/steps/fabric-sysctl/sysctl-file.js';
import { renderHook as hookFor } from '../../src/steps/persist/hooks.js';
import { HOOK_PATHS, MANAGER_HOOK_PATHS, NETWORKD_CONF_PATH, REPAIR_PATHS } from '../../src/steps/persist/paths.js';
import { OWNED_PATH } from '../../src/steps/policy-routing/owned-record.js';
import { VERSION } from '../../src/version.js';
import { filesOf as renderHostFiles, hostOf, loadFixtureFleet, loadFixturePlaybook } from '../fixtures/fixtures.js';

const renderRoutesData = (host: Host, fleet: typeof seeds, playbook: Playbook) => routesDataFor(playbook, host, fleet);
const renderHook = (manager: Manager, host: Host, playbook: Playbook) => hookFor(manager, host, playbook.name);

const UPDATE = process.env.UPDATE_GOLDEN === '1';

function expectGolden(rendered: string, name: string): void {
  const path = fileURLToPath(new URL(`../golden/${name}`, import.meta.url));
  if (UPDATE) {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, rendered);
    return;
  }
  if (!existsSync(path)) {
    throw new Error(
      `test/golden/${name} does not exist; create it with UPDATE_GOLDEN=1 npx vitest run test/render/golden.test.ts`,
    );
  }
  expect(rendered).toBe(readFileSync(path, 'utf8'));
}

const seeds = loadFixtureFleet('seeds.yaml');
const odd = loadFixtureFleet('odd-names.yaml');
const playbook = loadFixturePlaybook();
const memserver34 = hostOf(seeds, 34);
const cpuserver16 = hostOf(seeds, 16);
const pkeyhost7 = hostOf(odd, 7);

const fileOf = (files: readonly RenderedFile[], role: RenderedFile['role']) => {
  const file = files.find((f) => f.role === role);
  if (!file) throw new Error(`no ${role} rendered`);
  return file;
};

describe('golden files: the exact bytes each host receives', () => {
  it("the routing program is the repository's host/ibfleet-routes, the same bytes on every host and manager", () => {
    const programs = [
      ...MANAGERS.map((m) => renderHostFiles(memserver34, seeds, playbook, m)),
      renderHostFiles(cpuserver16, seeds, playbook, 'networkmanager'),
      renderHostFiles(pkeyhost7, odd, loadFixturePlaybook('routes-only.yaml'), 'ifupdown'),
    ].map((files) => fileOf(files, 'routing-script'));
    expect(new Set(programs.map((p) => p.content))).toEqual(new Set([ROUTES_PROGRAM]));
    expect(programs.map((p) => [p.path, p.mode.toString(8)])).toEqual(programs.map(() => [ROUTING_SCRIPT_PATH, '755']));
  });

  describe('memserver34 (ib0, ib1), under each of the three network managers', () => {
    it.each(MANAGERS)('the %s hook', (manager) => {
      expectGolden(
        fileOf(renderHostFiles(memserver34, seeds, playbook, manager), 'hook').content,
        `memserver34/hook-${manager}`,
      );
    });

    it("netplan's networkd.conf drop-in", () => {
      expectGolden(
        fileOf(renderHostFiles(memserver34, seeds, playbook, 'netplan'), 'networkd-conf').content,
        'memserver34/60-ibfleet.conf',
      );
    });

    it('the routing data, the same whichever manager runs it', () => {
      const data = MANAGERS.map(
        (m) => fileOf(renderHostFiles(memserver34, seeds, playbook, m), 'routing-data').content,
      );
      expect(new Set(data).size).toBe(1);
      expectGolden(data[0]!, 'memserver34/routes.conf');
    });

    it('the sysctl file, the same whichever manager runs the hook', () => {
      const confs = MANAGERS.map((m) => fileOf(renderHostFiles(memserver34, seeds, playbook, m), 'sysctl').content);
      expect(new Set(confs).size).toBe(1);
      expectGolden(confs[0]!, 'memserver34/60-ibfleet-fabric.conf');
    });

    it('the repair timer, its service and the drop-in that enables it, the same whichever manager runs the hook', () => {
      const units = MANAGERS.map((m) =>
        renderHostFiles(memserver34, seeds, playbook, m).filter((f) => f.role === 'repair'),
      );
      expect(new Set(units.map((u) => JSON.stringify(u))).size).toBe(1);
      expect(units[0]!.map((f) => basename(f.path))).toEqual([
        'ibfleet-routes-repair.service',
        'ibfleet-routes-repair.timer',
        'ibfleet-routes-repair.conf',
      ]);
      for (const unit of units[0]!) expectGolden(unit.content, `memserver34/${basename(unit.path)}`);
    });

    it('the ownership record, the same whichever manager runs the hook', () => {
      const records = MANAGERS.map((m) => fileOf(renderHostFiles(memserver34, seeds, playbook, m), 'record').content);
      expect(new Set(records).size).toBe(1);
      expectGolden(records[0]!, 'memserver34/owned');
    });

    it('the routing data of a playbook with only policy-routing leaves kernel settings alone', () => {
      const data = renderRoutesData(memserver34, seeds, loadFixturePlaybook('routes-only.yaml'));
      expect(data).not.toMatch(/^sysctl /m);
      expectGolden(data, 'memserver34/routes-only/routes.conf');
    });
  });

  describe('cpuserver16 (ibs5f0, ibs5f1), NetworkManager', () => {
    const files = renderHostFiles(cpuserver16, seeds, playbook, 'networkmanager');
    it('the routing data', () => expectGolden(fileOf(files, 'routing-data').content, 'cpuserver16/routes.conf'));
    it('the networkmanager hook', () => expectGolden(fileOf(files, 'hook').content, 'cpuserver16/hook-networkmanager'));
    it('the sysctl file', () => expectGolden(fileOf(files, 'sysctl').content, 'cpuserver16/60-ibfleet-fabric.conf'));
    it('the ownership record', () => expectGolden(fileOf(files, 'record').content, 'cpuserver16/owned'));
  });

  describe('pkeyhost7 (ib0.8001, ib_fab-2): odd but valid interface names', () => {
    const files = renderHostFiles(pkeyhost7, odd, playbook, 'ifupdown');
    it('the routing data', () => expectGolden(fileOf(files, 'routing-data').content, 'pkeyhost7/routes.conf'));
    it('the ifupdown hook', () => expectGolden(fileOf(files, 'hook').content, 'pkeyhost7/hook-ifupdown'));
    it('the sysctl file', () => expectGolden(fileOf(files, 'sysctl').content, 'pkeyhost7/60-ibfleet-fabric.conf'));
  });
});

describe('what a host receives: paths, modes and names', () => {
  it.each([
    [
      'netplan',
      [
        '/etc/networkd-dispatcher/routable.d/50-ibfleet-routes',
        '/etc/networkd-dispatcher/configured.d/50-ibfleet-routes',
      ],
    ],
    ['ifupdown', ['/etc/network/if-up.d/ibfleet-routes']],
    ['networkmanager', ['/etc/NetworkManager/dispatcher.d/50-ibfleet-routes']],
  ] as const)(
    '%s: the routing script (0755), the ownership record, the sysctl file, the hooks at %s (0755) and the repair units (0644)',
    (manager, hooks) => {
      const files = renderHostFiles(memserver34, seeds, playbook, manager);
      expect(files.map((f) => [f.path, f.mode.toString(8), f.role])).toEqual([
        ['/etc/ibfleet/routes.conf', '644', 'routing-data'],
        ['/etc/ibfleet/ibfleet-routes', '755', 'routing-script'],
        ['/etc/ibfleet/owned', '644', 'record'],
        ['/etc/sysctl.d/60-ibfleet-fabric.conf', '644', 'sysctl'],
        ...hooks.map((hook) => [hook, '755', 'hook']),
        ...(manager === 'netplan' ? [['/etc/systemd/networkd.conf.d/60-ibfleet.conf', '644', 'networkd-conf']] : []),
        ['/etc/systemd/system/ibfleet-routes-repair.service', '644', 'repair'],
        ['/etc/systemd/system/ibfleet-routes-repair.timer', '644', 'repair'],
        ['/etc/systemd/system/timers.target.d/ibfleet-routes-repair.conf', '644', 'repair'],
      ]);
    },
  );

  it('persist with repairEvery: 0 installs the hook and no repair timer', () => {
    const noRepair = loadPlaybook(
      'name: no-repair\nsteps:\n  - policy-routing\n  - fabric-sysctl\n  - persist: { repairEvery: 0 }\n',
      'no-repair.yaml',
    );
    expect(renderHostFiles(memserver34, seeds, noRepair, 'netplan').map((f) => f.role)).toEqual([
      'routing-data',
      'routing-script',
      'record',
      'sysctl',
      'hook',
      'hook',
      'networkd-conf',
    ]);
  });

  it('hook names are ones run-parts and the dispatchers run: only [A-Za-z0-9_-], no dots', () => {
    for (const path of Object.values(MANAGER_HOOK_PATHS).flat()) expect(basename(path)).toMatch(/^[A-Za-z0-9_-]+$/);
  });

  it('a playbook without persist or fabric-sysctl gives only the routing program, its data and the ownership record', () => {
    const files = renderHostFiles(memserver34, seeds, loadFixturePlaybook('routes-only.yaml'), 'netplan');
    expect(files.map((f) => f.path)).toEqual([ROUTES_DATA_PATH, ROUTING_SCRIPT_PATH, OWNED_PATH]);
  });

  it('manager auto shows the routing script, the sysctl file and every candidate hook', () => {
    const auto = { ...memserver34, manager: 'auto' } as const;
    const shown = renderForDisplay(auto, seeds, playbook);
    expect(shown.managers).toEqual(['networkmanager', 'ifupdown', 'netplan']);
    expect(shown.files.map((f) => f.path)).toEqual([
      ROUTES_DATA_PATH,
      ROUTING_SCRIPT_PATH,
      OWNED_PATH,
      SYSCTL_PATH,
      HOOK_PATHS.networkmanager,
      HOOK_PATHS.ifupdown,
      ...MANAGER_HOOK_PATHS.netplan,
      ...REPAIR_PATHS,
      NETWORKD_CONF_PATH,
    ]);
  });

  it('a known manager shows just its own hook', () => {
    expect(renderForDisplay(memserver34, seeds, playbook).files.map((f) => f.path)).toEqual([
      ROUTES_DATA_PATH,
      ROUTING_SCRIPT_PATH,
      OWNED_PATH,
      SYSCTL_PATH,
      ...MANAGER_HOOK_PATHS.netplan,
      NETWORKD_CONF_PATH,
      ...REPAIR_PATHS,
    ]);
  });
});

describe('rendering is pure and reproducible', () => {
  it('the same inventory gives byte-identical files, render after render', () => {
    const render = () =>
      loadFixtureFleet('seeds.yaml').hosts.flatMap((h) =>
        MANAGERS.flatMap((m) => renderHostFiles(h, seeds, loadFixturePlaybook(), m)),
      );
    expect(render()).toEqual(render());
  });

  it('a file names no date, time or machine that rendered it', () => {
    for (const file of renderHostFiles(memserver34, seeds, playbook, 'netplan')) {
      expect(file.content).not.toMatch(/20\d\d-\d\d-\d\d|\d\d:\d\d:\d\d/);
    }
  });
});

describe('headers name the file, the host and the ibfleet version', () => {
  it.each(MANAGERS)(
    '%s: every file starts with its path and "Generated by ibfleet <version> for host 34 (memserver34)"',
    (manager) => {
      // The routing program is the same on every host: its data names the host.
      for (const file of renderHostFiles(memserver34, seeds, playbook, manager).filter(
        (f) => f.role !== 'routing-script',
      )) {
        const lines = file.content.split('\n');
        const script = ['hook', 'monitor'].includes(file.role);
        const header = script ? lines.slice(1, 3) : lines.slice(0, 2);
        if (script) expect(lines[0]).toBe('#!/bin/sh');
        expect(header).toEqual([
          `# ${file.path}`,
          `# Generated by ibfleet ${VERSION} for host 34 (memserver34), playbook dual-ib-routing.`,
        ]);
      }
    },
  );

  it('files end with exactly one newline', () => {
    for (const file of renderHostFiles(cpuserver16, seeds, playbook, 'networkmanager')) {
      expect(file.content.endsWith('\n')).toBe(true);
      expect(file.content.endsWith('\n\n')).toBe(false);
    }
  });
});

describe("the routing data for the seeds' memserver34 says exactly what the seeds did by hand, made idempotent", () => {
  const data = renderRoutesData(memserver34, seeds, playbook);

  it('one line per fabric NIC with its interface, derived address, table, priority, number and a peer', () => {
    expect(data).toContain('\nnic ib0 172.16.34.1 941 941 1 172.16.1.1\nnic ib1 172.16.34.2 942 942 2 172.16.1.2\n');
    expect(data).toContain('\nsubnet 172.16.0.0/16\n');
  });

  it('the table route and rule are the seeds\' commands, with a fixed priority and without the "tible" typo', () => {
    expect(ROUTES_PROGRAM).toContain(
      'ip -4 route add "$SUBNET" dev "$iface" proto kernel scope link src "$addr" table "$table"',
    );
    expect(ROUTES_PROGRAM).toContain('ip -4 rule add from "$addr" lookup "$table" priority "$prio"');
    expect(ROUTES_PROGRAM).not.toContain('tible');
  });

  it.each([
    ['remove', undefined],
    ['keep', 'keep-main-routes.yaml'],
  ])('mainRoutes %s is written into the data', (mode, file) => {
    expect(renderRoutesData(memserver34, seeds, loadFixturePlaybook(file))).toContain(`\nmain-routes ${mode}\n`);
  });

  it("applies the playbook's own sysctl values, not the defaults", () => {
    const custom = renderRoutesData(memserver34, seeds, loadFixturePlaybook('custom-sysctl.yaml'));
    expect(custom).toContain(
      '\nsysctl arp_ignore 1\nsysctl arp_announce 1\nsysctl rp_filter 0\nsysctl accept_local 0\n',
    );
  });
});

describe('no inventory value reaches a script unquoted', () => {
  it('odd but valid names (ib0.8001, ib_fab-2) are single words of the data, which the program checks', () => {
    const data = renderRoutesData(pkeyhost7, odd, playbook);
    expect(data).toContain(
      '\nnic ib0.8001 172.16.7.1 941 941 1 172.16.1.1\nnic ib_fab-2 172.16.7.2 942 942 2 172.16.1.2\n',
    );
    // The hook names no interface: it restores every fabric NIC through the routing program.
    expect(renderHook('ifupdown', pkeyhost7, playbook)).not.toMatch(/ib0\.8001|ib_fab-2/);
  });

  it('the sysctl file uses the slash form for a name with a dot, so the dot is not read as a separator', () => {
    const params = playbook.steps.find((s) => s.module.name === 'fabric-sysctl')!.params as SysctlParams;
    const conf = renderSysctlConf(pkeyhost7, odd, playbook.name, params);
    expect(conf).toContain(
      '\nnet/ipv4/conf/ib0.8001/arp_ignore = 2\nnet/ipv4/conf/ib0.8001/arp_announce = 2\nnet/ipv4/conf/ib0.8001/rp_filter = 2\nnet/ipv4/conf/ib0.8001/accept_local = 1\n',
    );
    expect(conf).toContain('\nnet.ipv4.conf.ib_fab-2.rp_filter = 2\n');
    expect(conf).not.toContain('net.ipv4.conf.ib0.8001');
  });

  it.each([
    ['ib0', 'rp_filter', 'net.ipv4.conf.ib0.rp_filter'],
    ['ib0.8001', 'rp_filter', 'net/ipv4/conf/ib0.8001/rp_filter'],
    ['ib_fab-2', 'arp_ignore', 'net.ipv4.conf.ib_fab-2.arp_ignore'],
  ])('sysctlKey(%s, %s) is %s', (iface, key, expected) => {
    expect(sysctlKey(iface, key)).toBe(expected);
  });

  // The loader refuses such names; the renderers must still not trust their input.
  it.each(['ib0;touch /tmp/ibfleet-pwned', "it's", '$(reboot)', 'a b'])(
    'an interface named %j that bypassed validation is single-quoted everywhere',
    (evil) => {
      const host: Host = { ...memserver34, nics: [{ ...memserver34.nics[0]!, iface: evil }, memserver34.nics[1]!] };
      const quoted = `'${evil.replace(/'/g, `'\\''`)}'`;
      for (const manager of MANAGERS) {
        // The routing program holds no inventory value: it is the same file on every host.
        for (const file of renderHostFiles(host, seeds, playbook, manager).filter(
          (f) => f.role !== 'sysctl' && f.role !== 'routing-script',
        )) {
          // The record is data, read line by line: an invalid name is not written at all.
          if (file.role === 'record') {
            expect(file.content).toContain('\nnic - table 941 priority 941 from 172.16.34.1\n');
            expect(file.content).not.toContain(evil);
            continue;
          }
          // The routing data is data too: the name is not written, and the program refuses the line.
          if (file.role === 'routing-data') {
            expect(file.content).toContain('\nnic - 172.16.34.1 941 941 1 172.16.1.1\n');
            expect(file.content).not.toContain(evil);
            continue;
          }
          expect(file.content.split(quoted).join('')).not.toContain(evil);
          if (file.role !== 'repair') execFileSync('sh', ['-n'], { input: file.content });
        }
      }
    },
  );
});

describe('hooks differ only in how their manager hands over the interface and event', () => {
  const hooks = Object.fromEntries(MANAGERS.map((m) => [m, renderHook(m, memserver34, playbook)])) as Record<
    Manager,
    string
  >;

  it.each([
    ['netplan', 'iface=${IFACE:-}', '\troutable | configured) ;;'],
    ['ifupdown', 'iface=${IFACE:-}', '[ "${MODE:-start}" = start ] || exit 0'],
    ['networkmanager', 'iface=${1:-}', '\tup | reapply | dhcp4-change) ;;'],
  ] as const)('%s reads %s and ignores other events', (manager, reads, filter) => {
    expect(hooks[manager]).toContain(`${reads}\n`);
    expect(hooks[manager]).toContain(filter);
  });

  it.each(MANAGERS)(
    '%s: any interface but lo coming up restores every fabric NIC that is up, and the hook always exits 0',
    (manager) => {
      expect(hooks[manager]).toContain("case $iface in '' | lo) exit 0 ;; esac\n");
      expect(hooks[manager]).toContain(`${ROUTING_SCRIPT_PATH} --up-only --quiet || log`);
      expect(hooks[manager].trimEnd().split('\n').at(-1)).toBe('exit 0');
    },
  );
});
