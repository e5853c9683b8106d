/**
 * The restore after a failed verification: pure planning from two probes, a shellcheck-clean
 * script, and — run for real in a throw-away network namespace — a host whose state had odd
 * corners (a foreign route in a NIC table, a foreign rule, main routes in reverse order, strict
 * rp_filter) is put back exactly after the routing script changed it: that run needs root and is
 * test/root/render/restore-run.test.ts.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readProbe as parseProbe } from '../../src/plan/change-output.js';
import { planDeploy } from '../../src/plan/host-plan.js';
import { planRestore, stateDifferences } from '../../src/plan/restore.js';
import { rollbackLines } from '../../src/plan/rollback.js';
import { renderApplyScript, renderRollbackScript } from '../../src/render/apply-script.js';
import { renderRestoreScript } from '../../src/render/restore-script.js';
import { renderSettleProbe } from '../../src/render/settle-script.js';
import { filesOf as renderHostFiles, hostOf, loadFixtureFleet, loadFixturePlaybook } from '../fixtures/fixtures.js';
import { addIpLines } from '../helpers/probe-edit.js';
import { expectShellcheckClean } from '../helpers/tools.js';

const seeds = loadFixtureFleet('seeds.yaml');
const playbook = loadFixturePlaybook();
const host = hostOf(seeds, 34);
const files = renderHostFiles(host, seeds, playbook, 'netplan');
const work = mkdtempSync(join(tmpdir(), 'ibfleet-restore-'));
afterAll(() => {
  rmSync(work, { recursive: true, force: true });
});

describe('planning a restore', () => {
  const boot = parseProbe(readFixture('netplan-boot.txt'));

  it('keeps the directories the change says it created, and only those it could have created', () => {
    const output = [
      'ibfleet: created /etc/ibfleet',
      'ibfleet: created /etc',
      'ibfleet: created /etc/networkd-dispatcher',
      'ibfleet: wrote /etc/ibfleet/ibfleet-routes',
    ].join('\n');
    expect(planRestore(host, seeds, boot, files, output).createdDirs).toEqual([
      '/etc/ibfleet',
      '/etc/networkd-dispatcher',
    ]);
  });

  it('takes the state before from the probe: main routes in order, sysctls, files absent', () => {
    const spec = planRestore(host, seeds, boot, files, '');
    const kernel = spec.steps.flatMap((s) => s.kernel ?? []);
    expect(kernel.filter((l) => l.startsWith('ip -4 route append'))).toEqual([
      'ip -4 route append 172.16.0.0/16 dev ib0 proto kernel scope link src 172.16.34.1 || status=1',
      'ip -4 route append 172.16.0.0/16 dev ib1 proto kernel scope link src 172.16.34.2 || status=1',
    ]);
    expect(kernel.filter((l) => l.startsWith('ip -4 route flush table'))).toEqual([
      'ip -4 route flush table 941 2>/dev/null',
      'ip -4 route flush table 942 2>/dev/null',
    ]);
    expect(kernel.filter((l) => l.startsWith('ip -4 rule add'))).toEqual([]);
    expect(kernel).toContain(
      "printf '%s\\n' 0 >/proc/sys/net/ipv4/conf/ib1/rp_filter || { echo 'ibfleet: ib1: cannot set rp_filter back to 0' >&2; status=1; }",
    );
    expect(spec.files.every((f) => f.before === null)).toBe(true);
  });

  it('a probe compared with itself shows no difference; a changed one names each aspect', () => {
    expect(stateDifferences(host, seeds, boot, boot)).toEqual([]);
    const changed = parseProbe(
      addIpLines(
        readFixture('netplan-boot.txt'),
        '172.16.0.0/16 dev ib0 table 941 proto kernel scope link src 172.16.34.1',
      ),
    );
    expect(stateDifferences(host, seeds, boot, changed)).toEqual([
      'table 941: 172.16.0.0/16 dev ib0 proto kernel scope link src 172.16.34.1, before (empty)',
    ]);
  });

  it('the script passes shellcheck, words from the host quoted', () => {
    const hostile = parseProbe(
      addIpLines(readFixture('netplan-boot.txt'), '500:\tfrom 172.16.34.1 lookup 100; reboot'),
    );
    const spec = planRestore(host, seeds, hostile, files, 'ibfleet: created /etc/ibfleet');
    const script = renderRestoreScript(host, seeds, spec, 'restore-test');
    expect(script).toContain("ip -4 rule add from 172.16.34.1 lookup '100;' reboot priority 500");
    const path = join(work, 'restore.sh');
    writeFileSync(path, script);
    expectShellcheckClean(path);
  });
});

describe('every script a change sends passes shellcheck', () => {
  const boot = parseProbe(readFixture('netplan-boot.txt'));
  it.each([
    ['apply', () => renderApplyScript(host, seeds, planDeploy(host, seeds, playbook, boot), 'run-1')],
    [
      'rollback',
      () =>
        renderRollbackScript(
          host,
          seeds,
          rollbackLines(host, seeds, parseProbe(readFixture('netplan-deployed.txt'))),
          'run-1',
        ),
    ],
    [
      'restore',
      () =>
        renderRestoreScript(
          host,
          seeds,
          planRestore(
            host,
            seeds,
            boot,
            files,
            'ibfleet: created /etc/ibfleet\nibfleet: created /etc/networkd-dispatcher',
          ),
          'run-1',
        ),
    ],
    ['settle', () => renderSettleProbe(host, seeds, 'run-1', 30)],
  ])('%s', (name, render) => {
    const path = join(work, `${name}.sh`);
    writeFileSync(path, render());
    expectShellcheckClean(path);
  });
});

function readFixture(name: string): string {
  return readFileSync(new URL(`../fixtures/probe/${name}`, import.meta.url), 'utf8');
}
