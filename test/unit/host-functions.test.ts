/**
 * The scripts ibfleet sends take their shell functions from the repository's host/ files
 * (src/script/host-functions.ts): a script gets the definition of every function it calls, and of
 * those they call, once each, and nothing else.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CONTENT_PREFIX } from '../../src/facts/probe-format.js';
import { readProbe } from '../../src/plan/change-output.js';
import { planDeploy } from '../../src/plan/host-plan.js';
import { planRestore } from '../../src/plan/restore.js';
import { rollbackLines } from '../../src/plan/rollback.js';
import { renderApplyScript, renderRollbackScript } from '../../src/render/apply-script.js';
import { renderProbeScript } from '../../src/render/probe-script.js';
import { renderRestoreScript } from '../../src/render/restore-script.js';
import { renderSettleProbe } from '../../src/render/settle-script.js';
import { renderCapabilityScript } from '../../src/render/verify-scripts.js';
import { hostOf, loadFixtureFleet, loadFixturePlaybook } from '../fixtures/fixtures.js';
import { definitionsFor, functionsOf, HOST_FUNCTIONS, withHostFunctions } from '../../src/script/host-functions.js';

const fleet = loadFixtureFleet('seeds.yaml');
const host = hostOf(fleet, 34);
const playbook = loadFixturePlaybook();
const probed = readProbe(readFileSync(new URL('../fixtures/probe/netplan-hook-deployed.txt', import.meta.url), 'utf8'));

const defined = (text: string) => [...text.matchAll(/^([a-z_]+)\(\) \{/gm)].map((m) => m[1]);

describe('host functions', () => {
  it('reads a file: each function with the comment above it, one-line ones too', () => {
    const file = ['# a file', '', '# one: says one', 'one() {', '\techo 1', '}', 'two() { echo 2; }', 'x=1'].join('\n');
    expect(functionsOf(file, 'f.sh')).toEqual([
      { name: 'one', text: '# one: says one\none() {\n\techo 1\n}' },
      { name: 'two', text: 'two() { echo 2; }' },
    ]);
  });

  it('refuses a function that never closes', () => {
    expect(() => functionsOf('one() {\n\techo 1\n', 'f.sh')).toThrow(/f\.sh: function one has no closing line/);
  });

  it("the steps' functions and the routing program's shared helpers are there, and no other of its own", () => {
    for (const name of [
      'await_address',
      'tell',
      'new_keyfile',
      'await_routing',
      'hand_over',
      'del_rules',
      'systemd_runs',
    ])
      expect(HOST_FUNCTIONS.has(name), name).toBe(true);
    for (const name of ['nic', 'configure', 'say', 'drift']) expect(HOST_FUNCTIONS.has(name), name).toBe(false);
  });

  it("the probe's functions print a file's lines behind the probe's content prefix", () => {
    expect(CONTENT_PREFIX).toBe('|');
    for (const name of ['rd_section', 'links_source'])
      expect(HOST_FUNCTIONS.get(name)!.text).toContain("printf '|%s\\n'");
  });

  it("a script gets what it calls and what that calls, once, in the files' order", () => {
    expect(defined(definitionsFor('hand_over ib0 10.0.0.1 101 || status=1\nhand_over ib1 10.0.0.2 102'))).toEqual([
      'hand_over',
      'del_rules',
    ]);
    expect(defined(definitionsFor('if systemd_runs; then :; fi\n! systemd_runs || sd=1'))).toEqual(['systemd_runs']);
  });

  it('a name in a comment, in a word or in a file the script writes is no call', () => {
    expect(definitionsFor('# tell the manager\necho told; x=await_addresses\nprintf %s "nic ib0"')).toBe('');
    expect(withHostFunctions('echo nothing')).toBe('echo nothing');
  });

  it.each([
    ['probe', () => renderProbeScript(host, fleet)],
    ['deploy', () => renderApplyScript(host, fleet, planDeploy(host, fleet, playbook, probed))],
    ['rollback', () => renderRollbackScript(host, fleet, rollbackLines(host, fleet, probed), 'r')],
    ['restore', () => renderRestoreScript(host, fleet, planRestore(host, fleet, probed, [], ''), 'r')],
    ['settle', () => renderSettleProbe(host, fleet, 'r', 5)],
    ['capabilities', () => renderCapabilityScript(host, fleet)],
  ])('the %s script defines every host function it calls', (_, render) => {
    const script = render();
    const calls = [...HOST_FUNCTIONS.keys()].filter((name) =>
      new RegExp(`^[^#\\n]*(^|[\\s;&|(!{])${name}(?=[\\s;)]|$)`, 'm').test(script),
    );
    expect(calls.length).toBeGreaterThan(0);
    for (const name of calls) expect(defined(script), name).toContain(name);
  });
});
