/**
 * Whether systemd runs a host, asked by what runs — PID 1, and `systemctl is-system-running` — not
 * by /run/systemd/system, which `netplan generate` writes on hosts without systemd. The probe is run
 * for real under each combination (a private /run, a file laid over /proc/1/comm, a systemctl that
 * answers as told); the plan and status are decided from what it found. Needs root for the runs.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { factOf } from '../../src/facts/host-facts.js';
import { readProbe as parseProbe } from '../../src/plan/change-output.js';
import { assessStatus, planDeploy } from '../../src/plan/host-plan.js';
import { renderContext, renderHostFiles } from '../../src/render/host-files.js';
import { renderProbeScript } from '../../src/render/probe-script.js';
import { NO_SYSTEMD_NOTE, SYSTEMD_FACT } from '../../src/steps/persist/systemd.js';
import { loadPlaybook } from '../../src/playbook/playbook.js';
import { hostOf, loadFixtureFleet, loadFixturePlaybook } from '../fixtures/fixtures.js';

const IS_ROOT = process.getuid?.() === 0;
if (!IS_ROOT)
  console.warn('NOTE: test/steps/persist-systemd.test.ts: the probe runs skipped (they need root: unshare, mounts)');
const seeds = loadFixtureFleet('seeds.yaml');
const host = hostOf(seeds, 34);
const playbook = loadFixturePlaybook();
const work = mkdtempSync(join(tmpdir(), 'ibfleet-systemd-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/**
 * The probe's facts on a host whose PID 1 is `pid1` and whose systemctl prints `state` for
 * is-system-running (and `active` for is-active) — or has no systemctl at all — with
 * /run/systemd/system present, as netplan generate leaves it.
 */
function probeUnder(pid1: string, state: string | undefined, runDir = true) {
  const comm = join(work, `comm-${pid1}`);
  writeFileSync(comm, `${pid1}\n`);
  const fake = join(work, `systemctl-${state ?? 'none'}`);
  writeFileSync(
    fake,
    `#!/bin/sh\ncase $1 in is-system-running) echo ${state ?? ''} ;; is-active) echo active ;; esac\n`,
    { mode: 0o755 },
  );
  const script = join(work, 'probe.sh');
  writeFileSync(script, renderProbeScript(host, seeds));
  const systemctl =
    state === undefined
      ? 'mount --bind /dev/null "$(command -v systemctl)"'
      : `mount --bind ${fake} "$(command -v systemctl)"`;
  const setup = [
    `mount --bind ${comm} /proc/1/comm`,
    'mount -t tmpfs ibfleet-test /run',
    ...(runDir ? ['mkdir -p /run/systemd/system'] : []),
    systemctl,
    'exec sh "$0"',
  ].join(' && ');
  const result = spawnSync('unshare', ['--mount', '--propagation', 'private', 'sh', '-c', setup, script], {
    encoding: 'utf8',
  });
  expect(result.status, result.stderr).toBe(0);
  return parseProbe(result.stdout);
}

describe.skipIf(!IS_ROOT)('the probe tells a host systemd runs from one it does not', () => {
  it.each([
    ['PID 1 is systemd', 'systemd', 'offline', true],
    ['systemctl says running', 'init', 'running', true],
    ['systemctl says degraded (a failed unit)', 'init', 'degraded', true],
    ['systemctl says offline, /run/systemd/system notwithstanding', 'init', 'offline', false],
    ['systemctl cannot reach a bus (prints nothing)', 'sh', '', false],
    ['no systemctl that runs', 'tini', undefined, false],
  ] as const)('%s', (_, pid1, state, runs) => {
    const facts = probeUnder(pid1, state);
    expect(facts.complete).toBe(true);
    // The timer is asked after only where systemd runs.
    expect(factOf(facts, SYSTEMD_FACT)).toEqual({ runs, repairTimer: runs ? 'active' : undefined });
  });

  it('without /run/systemd/system (which systemd makes at boot) systemctl is not even asked: no systemd, one process fewer', () => {
    expect(factOf(probeUnder('init', 'running', false), SYSTEMD_FACT)).toEqual({ runs: false, repairTimer: undefined });
  });
});

describe('what deploy and status decide where no systemd runs', () => {
  const fixture = (name: string) => readFileSync(new URL(`../fixtures/probe/${name}`, import.meta.url), 'utf8');
  /** The deployed hook host's probe, as a host without systemd answers it. */
  const withoutSystemd = (probe: string) => probe.replace('@@ibfleet end', '@@ibfleet systemd no\n@@ibfleet end');
  const withSystemd = (probe: string) => probe.replace('@@ibfleet end', '@@ibfleet systemd yes\nactive\n@@ibfleet end');
  /** A hook host as deploy leaves it: the transcript's files as this inventory renders them (the lab's differed in its size). */
  const deployed = renderHostFiles(playbook, renderContext(playbook, host, seeds, 'netplan')).reduce(
    (text, f) =>
      text.replace(
        new RegExp(`^[0-9a-f]{64}(  ${f.path.replace(/[.]/g, '\\.')})$`, 'm'),
        `${createHash('sha256').update(f.content).digest('hex')}$1`,
      ),
    fixture('netplan-hook-deployed.txt'),
  );
  const unitLines = /^.*\/etc\/systemd\/system\/.*$\n/gm;

  it('reads the fact: yes, no, or not said (an older probe)', () => {
    expect(factOf(parseProbe(withoutSystemd(deployed)), SYSTEMD_FACT).runs).toBe(false);
    expect(factOf(parseProbe(withSystemd(deployed)), SYSTEMD_FACT)).toEqual({ runs: true, repairTimer: 'active' });
    expect(factOf(parseProbe(deployed), SYSTEMD_FACT).runs).toBeUndefined();
  });

  it('deploy installs no repair units, removes the ones an earlier deploy left as stale, and says why in the plan', () => {
    const plan = planDeploy(host, seeds, playbook, parseProbe(withoutSystemd(deployed)));
    expect(plan.files.some((f) => f.role === 'repair')).toBe(false);
    expect(plan.remove).toEqual([
      '/etc/systemd/system/ibfleet-routes-repair.service',
      '/etc/systemd/system/ibfleet-routes-repair.timer',
      '/etc/systemd/system/timers.target.d/ibfleet-routes-repair.conf',
    ]);
    expect(plan.changes.map((c) => c.text)).toContain(
      'remove /etc/systemd/system/ibfleet-routes-repair.timer (no systemd runs on this host to start it)',
    );
    expect(plan.notes).toEqual([NO_SYSTEMD_NOTE]);
  });

  it('status: ok with the note, not drift, once no units are left; the stale units are drift until deploy removes them', () => {
    const clean = parseProbe(withoutSystemd(deployed).replace(unitLines, ''));
    expect(assessStatus(host, seeds, playbook, clean)).toMatchObject({ status: 'ok', reasons: [NO_SYSTEMD_NOTE] });
    const stale = assessStatus(host, seeds, playbook, parseProbe(withoutSystemd(deployed)));
    expect(stale.status).toBe('drift');
    expect(stale.reasons.at(-1)).toBe(NO_SYSTEMD_NOTE);
  });

  it('where systemd runs, the timer is installed and no note is said; a playbook without the timer says nothing either', () => {
    const facts = parseProbe(withSystemd(deployed));
    expect(planDeploy(host, seeds, playbook, facts)).toMatchObject({ changes: [], notes: [] });
    const noTimer = loadPlaybook(
      readFileSync(new URL('../../playbooks/dual-ib-routing.yaml', import.meta.url), 'utf8').replace(
        /^ {2}- persist$/m,
        '  - persist:\n      repairEvery: 0',
      ),
      'no-timer.yaml',
    );
    expect(planDeploy(host, seeds, noTimer, parseProbe(withoutSystemd(deployed.replace(unitLines, '')))).notes).toEqual(
      [],
    );
  });
});
