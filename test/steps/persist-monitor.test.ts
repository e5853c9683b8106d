/**
 * The persist step's `monitor`: its parameter, what it adds to a host (the NHC check file, the
 * textfile the routing script writes), what status and deploy make of it (missing, edited, stale),
 * and rollback. The real node_exporter and the NHC calling convention are exercised against the
 * lab in test/e2e/fit.test.ts.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { readProbe } from '../../src/plan/change-output.js';
import { assessStatus, planDeploy, probeWants } from '../../src/plan/host-plan.js';
import { rollbackLines } from '../../src/plan/rollback.js';
import { loadPlaybook } from '../../src/playbook/playbook.js';
import { AFTER_MARK, renderApplyScript, renderRollbackScript } from '../../src/render/apply-script.js';
import { renderProbeScript } from '../../src/render/probe-script.js';
import { routesDataFor } from '../../src/render/host-files.js';
import { renderForDisplay } from '../../src/render/host-render.js';
import { sha256 } from '../../src/script/digest.js';
import { MONITOR_FACT, MONITOR_WORDS, NHC_PATH, TEXTFILE_DIR, TEXTFILE_PATH } from '../../src/steps/persist/monitor.js';
import { ROUTES_PROGRAM } from '../../src/script/routes-program.js';
import { filesOf, hostOf, loadFixtureFleet, loadFixturePlaybook } from '../fixtures/fixtures.js';
import { deployedProbe } from '../helpers/fake-transport.js';
import { withFile, withSection } from '../helpers/probe-edit.js';
import { expectShellcheckClean } from '../helpers/tools.js';

const seeds = loadFixtureFleet('seeds.yaml');
const host = hostOf(seeds, 34);
const monitored = loadFixturePlaybook('monitored.yaml');
const plain = loadFixturePlaybook();
const persistWith = (params: string) =>
  loadPlaybook(`name: m\nsteps:\n  - policy-routing\n  - persist: ${params}\n`, 'm.yaml');

/** The probe of a host deployed with `playbook`, its monitor section saying what is there. */
function probeOf(playbook = monitored, monitor: readonly string[] = ['dir', 'textfile']) {
  return withSection(deployedProbe(host, seeds, playbook, 'netplan'), 'monitor', monitor);
}

describe('the monitor parameter', () => {
  it.each([
    ['prometheus', ['prometheus']],
    ['nhc', ['nhc']],
    ['[prometheus, nhc]', ['prometheus', 'nhc']],
    ['[nhc, nhc]', ['nhc']],
    ['[]', []],
  ])('monitor: %s → %o', (text, want) => {
    const playbook = persistWith(`{ monitor: ${text} }`);
    expect((playbook.steps[1]!.params as { monitor: string[] }).monitor).toEqual(want);
  });

  it.each([
    [
      '{ monitor: grafana }',
      'm.yaml:4:25: steps[1].persist.monitor = "grafana": monitor is prometheus or nhc, or a list of them',
    ],
    [
      '{ mode: native, monitor: nhc }',
      'monitor needs mode: hook: it runs the routing script, which native persistence does not install',
    ],
    [
      '{ repairEvery: 0, monitor: prometheus }',
      'monitor: prometheus needs the repair timer (repairEvery 5..3600): its runs write the textfile',
    ],
  ])('%s is refused at its place, saying what is allowed', (params, message) => {
    let error: unknown;
    try {
      persistWith(params);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toContain(message);
  });
});

describe('what a monitored host receives', () => {
  it('nhc: /etc/nhc/scripts/ibfleet.nhc (0644) defining check_ibfleet_routing, bash that shellcheck passes', () => {
    const nhc = filesOf(host, seeds, monitored, 'netplan').find((f) => f.path === NHC_PATH)!;
    expect(nhc.mode).toBe(0o644);
    expect(nhc.content).toContain('function check_ibfleet_routing() {');
    expect(nhc.content).toContain('IBFLEET_OUT=$(/etc/ibfleet/ibfleet-routes --check 2>&1)');
    expect(nhc.content).toContain('#   * || check_ibfleet_routing');
    const dir = mkdtempSync(join(tmpdir(), 'ibfleet-nhc-'));
    try {
      writeFileSync(join(dir, 'ibfleet.nhc'), nhc.content);
      // Sourced by NHC's bash, never run: no #! line (the helper leaves out SC1113 for such files).
      expectShellcheckClean(join(dir, 'ibfleet.nhc'), 'bash');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    expect(filesOf(host, seeds, plain, 'netplan').some((f) => f.path === NHC_PATH)).toBe(false);
  });

  it('prometheus: the routing data asks the program for the textfile (written after the NICs, checked under --check); without it, not', () => {
    const data = routesDataFor(monitored, host, seeds);
    expect(data).toContain('\nmonitor prometheus\n');
    // The NHC file is one of the files --check compares.
    expect(data).toContain(`\nfile always ${NHC_PATH} 644 `);
    expect(routesDataFor(plain, host, seeds)).not.toContain('monitor');
  });

  it("the program says what it finds of the textfile in status's words", () => {
    for (const words of Object.values(MONITOR_WORDS))
      expect(ROUTES_PROGRAM.replaceAll('$TEXTFILE_DIR', TEXTFILE_DIR).replaceAll('$TEXTFILE', TEXTFILE_PATH)).toContain(
        words,
      );
    expect(ROUTES_PROGRAM).toContain('# TYPE ibfleet_repairs_total counter');
  });

  it('render shows the NHC file and says what the textfile holds', () => {
    const shown = renderForDisplay(host, seeds, monitored);
    expect(shown.files.map((f) => f.path)).toContain(NHC_PATH);
    expect(shown.notes.join('\n')).toContain(
      `writes ${TEXTFILE_PATH} for node_exporter's textfile collector: ibfleet_nic_ok{iface,nic}`,
    );
  });
});

describe('status and deploy', () => {
  it('a host with everything in place is ok', () => {
    expect(assessStatus(host, seeds, monitored, readProbe(probeOf()))).toMatchObject({ status: 'ok', reasons: [] });
  });

  it('the textfile missing is drift; deploy plans the routing script run that writes it', () => {
    const facts = readProbe(probeOf(monitored, ['dir']));
    expect(assessStatus(host, seeds, monitored, facts).reasons).toEqual([
      `node_exporter textfile ${TEXTFILE_PATH} is missing (every run of the routing script writes it)`,
    ]);
    const plan = planDeploy(host, seeds, monitored, facts);
    expect(plan.changes.map((c) => c.text)).toEqual([`write ${TEXTFILE_PATH} (the routing script's run does)`]);
    expect(renderApplyScript(host, seeds, plan)).toContain('\t/etc/ibfleet/ibfleet-routes || status=$?');
  });

  it("a host without node_exporter's textfile directory: deploy stops at plan with what to install", () => {
    expect(() => planDeploy(host, seeds, monitored, readProbe(probeOf(monitored, [])))).toThrow(
      /monitor: prometheus writes node_exporter's textfile into \/var\/lib\/prometheus\/node-exporter, which this host does not have: install prometheus-node-exporter/,
    );
    expect(assessStatus(host, seeds, monitored, readProbe(probeOf(monitored, []))).reasons).toContain(
      "node_exporter's textfile directory /var/lib/prometheus/node-exporter is missing: is prometheus-node-exporter installed?",
    );
  });

  it('the NHC file missing or edited is drift, as every file of ibfleet', () => {
    const missing = probeOf().replace(new RegExp(`^.*${NHC_PATH.replace(/\//g, '\\/')}\\n`, 'gm'), '');
    expect(assessStatus(host, seeds, monitored, readProbe(missing)).reasons).toEqual([
      `NHC check ${NHC_PATH} is missing`,
    ]);
    const edited = withFile(probeOf(), NHC_PATH, '644', sha256('edited'));
    expect(assessStatus(host, seeds, monitored, readProbe(edited)).reasons).toEqual([
      `NHC check ${NHC_PATH} was modified (content differs from the rendered file)`,
    ]);
  });

  it('a playbook without the monitors: the NHC file and the textfile are stale, and deploy removes both', () => {
    const probe = withFile(
      withSection(deployedProbe(host, seeds, plain, 'netplan'), 'monitor', ['dir', 'textfile']),
      NHC_PATH,
      '644',
      sha256('old'),
    );
    const facts = readProbe(probe);
    expect(assessStatus(host, seeds, plain, facts).reasons).toEqual([
      `stale ${TEXTFILE_PATH} (the playbook monitors no more with prometheus)`,
      `stale ${NHC_PATH} (the playbook has no NHC check)`,
    ]);
    const plan = planDeploy(host, seeds, plain, facts);
    expect(plan.remove).toEqual([NHC_PATH]);
    const script = renderApplyScript(host, seeds, plan);
    expect(script).toContain(`retire ${NHC_PATH} || status=1`);
    expect(script).toContain(`rm -f ${TEXTFILE_PATH}`);
  });
});

describe('rollback', () => {
  it("takes the NHC file away with ibfleet's files, and the textfile", () => {
    const facts = readProbe(probeOf());
    const script = renderRollbackScript(host, seeds, rollbackLines(host, seeds, facts));
    expect(script).toContain(`give_back ${NHC_PATH} || status=1`);
    expect(script).toContain(`rm -f ${TEXTFILE_PATH} || status=1`);
  });
});

describe("node_exporter's textfile directory and the textfile, as the probe's stat shows them (issue 29)", () => {
  const dir = '/var/lib/prometheus/node-exporter';
  const parse = (lines: string[]) => MONITOR_FACT.parse(new Map([['monitor', lines]]));
  it.each([
    [
      ['dir', 'textfile', `0 755 directory|${dir}`, `0 644 regular file|${TEXTFILE_PATH}`],
      { dirUnsafe: false, textfileOther: undefined },
    ],
    [['dir', `0 1755 directory|${dir}`], { dirUnsafe: false, textfileOther: undefined }],
    [['dir', `0 775 directory|${dir}`], { dirUnsafe: true }],
    [['dir', `0 757 directory|${dir}`], { dirUnsafe: true }],
    [['dir', `0 1777 directory|${dir}`], { dirUnsafe: true }],
    [['dir', `112 755 directory|${dir}`], { dirUnsafe: true }],
    [['dir', `0 777 symbolic link|${dir}`], { dirUnsafe: true }],
    [
      ['dir', 'textfile', `0 755 directory|${dir}`, `1001 777 symbolic link|${TEXTFILE_PATH}`],
      { dirUnsafe: false, textfileOther: 'a symbolic link of uid 1001' },
    ],
    [
      ['dir', 'textfile', `0 755 directory|${dir}`, `1001 644 regular file|${TEXTFILE_PATH}`],
      { textfileOther: 'a regular file of uid 1001' },
    ],
  ])('%j', (lines, want) => {
    expect(parse(lines)).toMatchObject(want);
  });
});

describe('the textfile stat: a process every probe pays, only where the playbook monitors with prometheus', () => {
  const statCall = `stat -c '%u %a %F|%n' -- ${TEXTFILE_DIR}`;
  const editedNhc = (playbook: typeof monitored) =>
    withFile(
      withSection(deployedProbe(host, seeds, playbook, 'netplan'), 'monitor', ['dir', 'textfile']),
      NHC_PATH,
      '644',
      sha256('edited'),
    );
  it('the probe asks for it with prometheus, not without', () => {
    expect(renderProbeScript(host, seeds, { wants: probeWants(monitored, host) })).toContain(statCall);
    expect(renderProbeScript(host, seeds, { wants: probeWants(plain, host) })).not.toContain(statCall);
    expect(renderProbeScript(host, seeds, { wants: probeWants(persistWith('{ monitor: nhc }'), host) })).not.toContain(
      statCall,
    );
  });
  it("and so does the probe closing a change: verification reads what the playbook's probe read", () => {
    const withPrometheus = renderApplyScript(
      host,
      seeds,
      planDeploy(host, seeds, monitored, readProbe(editedNhc(monitored))),
    );
    expect(withPrometheus.slice(withPrometheus.indexOf(AFTER_MARK))).toContain(statCall);
    const without = renderApplyScript(host, seeds, planDeploy(host, seeds, plain, readProbe(editedNhc(plain))));
    expect(without).toContain(AFTER_MARK);
    expect(without).not.toContain(statCall);
  });
});
