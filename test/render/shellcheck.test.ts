/**
 * The routing program (the repository's host/ibfleet-routes, the file itself) and every script
 * rendered per host pass shellcheck through the one helper (test/helpers/tools.ts: one severity,
 * failing where shellcheck is missing). CI installs shellcheck (.ci/run).
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Fleet, Host } from '../../src/inventory/model.js';
import { MANAGERS } from '../../src/inventory/model.js';
import { renderProbeScript } from '../../src/render/probe-script.js';
import type { Playbook } from '../../src/playbook/playbook.js';
import { HOST_FUNCTION_SOURCES, withHostFunctions } from '../../src/script/host-functions.js';
import { HOST_TEMPLATES_DIR } from '../../src/script/host-templates-package.js';
import { renderHook } from '../../src/steps/persist/hooks.js';
import { ROUTES_PROGRAM_SOURCE } from '../../src/script/routes-program.js';
import { filesOf as renderHostFiles, loadFixtureFleet, loadFixturePlaybook } from '../fixtures/fixtures.js';
import { expectShellcheckClean } from '../helpers/tools.js';

const workDir = mkdtempSync(join(tmpdir(), 'ibfleet-shellcheck-'));
afterAll(() => rmSync(workDir, { recursive: true, force: true }));

interface Subject {
  readonly label: string;
  readonly host: Host;
  readonly fleet: Fleet;
  readonly playbook: Playbook;
}

const seeds = loadFixtureFleet('seeds.yaml');
const odd = loadFixtureFleet('odd-names.yaml');
const fourNics = (() => {
  const base = loadFixtureFleet('seeds.yaml');
  // Four NICs per host: a longer case list and set -- line than the seeds' two.
  const host = base.hosts[1]!;
  const nics = [1, 2, 3, 4].map((i) => ({
    index: i,
    iface: `ib${i - 1}`,
    address: `172.16.34.${i}`,
    prefixLength: 16,
    table: 940 + i,
    priority: 940 + i,
  }));
  return { fleet: { ...base, fabric: { ...base.fabric, nics: 4 } }, host: { ...host, nics } };
})();

const PLAYBOOKS = [
  ['default (mainRoutes: remove, fabric-sysctl)', undefined],
  ['mainRoutes: keep', 'keep-main-routes.yaml'],
  ['without fabric-sysctl', 'routes-only.yaml'],
  ['custom sysctl values', 'custom-sysctl.yaml'],
  ['monitored (prometheus, nhc)', 'monitored.yaml'],
] as const;

const subjects: Subject[] = PLAYBOOKS.flatMap(([label, file]) => [
  ...seeds.hosts.map((host) => ({
    label: `${host.name}, ${label}`,
    host,
    fleet: seeds,
    playbook: loadFixturePlaybook(file),
  })),
  ...odd.hosts.map((host) => ({
    label: `${host.name}, ${label}`,
    host,
    fleet: odd,
    playbook: loadFixturePlaybook(file),
  })),
]);
subjects.push({
  label: 'four NICs, default',
  host: fourNics.host,
  fleet: fourNics.fleet,
  playbook: loadFixturePlaybook(),
});

/** Every distinct shell file rendered for a subject: the hook for each manager, the probe (the routing program is one file, checked itself). */
function scriptsOf(subject: Subject): { name: string; content: string }[] {
  const seen = new Map<string, string>();
  for (const manager of MANAGERS) {
    for (const file of renderHostFiles(subject.host, subject.fleet, subject.playbook, manager)) {
      // The NHC check is bash, sourced by NHC: test/steps/persist-monitor.test.ts checks it as bash.
      if (
        file.role === 'sysctl' ||
        file.role === 'repair' ||
        file.role === 'record' ||
        file.role === 'monitor' ||
        file.role === 'networkd-conf' ||
        file.role === 'routing-script' ||
        file.role === 'routing-data'
      )
        continue;
      seen.set(`hook-${manager}`, file.content);
    }
  }
  // A playbook without persist renders no hook; check the hooks it would get with the default one.
  if (!subject.playbook.steps.some((s) => s.persister)) {
    for (const manager of MANAGERS) {
      const hook = renderHostFiles(subject.host, subject.fleet, loadFixturePlaybook(), manager).find(
        (f) => f.role === 'hook',
      );
      if (hook) seen.set(`hook-${manager}`, hook.content);
    }
  }
  // The program the exported Ansible role runs for the links step (src/steps/links/export.ts), with the functions it calls.
  for (const { step } of subject.playbook.steps)
    for (const manager of MANAGERS) {
      const program = step.exportProgram?.(subject.host, manager, subject.playbook.name);
      if (program) seen.set(`links-export-${manager}`, withHostFunctions(program));
    }
  // The read-only probe, with its fabric section: for the inventory's names, and for every interface (onboard).
  seen.set('probe', renderProbeScript(subject.host, subject.fleet));
  seen.set('probe-every-interface', renderProbeScript(subject.host, subject.fleet, { everyInterface: true }));
  return [...seen].map(([name, content]) => ({ name, content }));
}

let counter = 0;
/** Subjects share many scripts byte for byte (a hook, a probe): each distinct text is checked once. */
const checked = new Set<string>();
function written(content: string): string {
  const path = join(workDir, `script-${++counter}`);
  writeFileSync(path, content, { mode: 0o755 });
  return path;
}

describe('shellcheck finds nothing in the routing program or any rendered script', () => {
  it('host/ibfleet-routes, the file itself', () => expectShellcheckClean(ROUTES_PROGRAM_SOURCE));
  it.each(HOST_FUNCTION_SOURCES.filter((f) => f !== ROUTES_PROGRAM_SOURCE))('%s, the file itself', (file) =>
    expectShellcheckClean(file),
  );

  describe.each(subjects.map((s) => [s.label, s] as const))('%s', (_, subject) => {
    it.each(scriptsOf(subject).map((s) => [s.name, s] as const))('%s', (_, script) => {
      if (checked.has(script.content)) return;
      expectShellcheckClean(written(script.content));
      checked.add(script.content);
    });
  });

  // host/files/'s shell templates are parts of the hooks, no script alone: each is checked as the
  // hooks it makes (above). Every one of them must be in a hook rendered here.
  it.each(readdirSync(HOST_TEMPLATES_DIR).filter((f) => f.endsWith('.sh')))(
    'host/files/%s is checked as part of the hooks it makes',
    (file) => {
      const hooks = MANAGERS.map((m) => renderHook(m, seeds.hosts[1]!, 'dual-ib-routing')).join('\n');
      const fixed = readFileSync(join(HOST_TEMPLATES_DIR, file), 'utf8')
        .split('\n')
        .filter((line) => line !== '' && !line.includes('{{'));
      for (const line of fixed) expect(hooks.split('\n'), `${file}: ${line}`).toContain(line);
    },
  );

  it('a deliberately bad script is caught (the check itself works)', () => {
    expect(() => expectShellcheckClean(written('#!/bin/sh\nrm -rf $1/*\n'))).toThrow();
  });
});
