/**
 * Whether systemd runs a host, asked by what runs — PID 1, and `systemctl is-system-running` — not
 * by /run/systemd/system, which `netplan generate` writes on hosts without systemd. The probe is run
 * for real under each combination (a private /run, a file laid over /proc/1/comm, a systemctl that
 * answers as told: test/root/steps/persist-systemd-probe.test.ts, which needs root); here, what the
 * plan and status decide from what it found.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { factOf } from '../../src/facts/host-facts.js';
import { readProbe as parseProbe } from '../../src/plan/change-output.js';
import { assessStatus, planDeploy } from '../../src/plan/host-plan.js';
import { renderContext, renderHostFiles } from '../../src/render/host-files.js';
import { NO_SYSTEMD_NOTE, SYSTEMD_FACT } from '../../src/steps/persist/systemd.js';
import { loadPlaybook } from '../../src/playbook/playbook.js';
import { hostOf, loadFixtureFleet, loadFixturePlaybook } from '../fixtures/fixtures.js';
import { withFile } from '../helpers/probe-edit.js';

const seeds = loadFixtureFleet('seeds.yaml');
const host = hostOf(seeds, 34);
const playbook = loadFixturePlaybook();
describe('what deploy and status decide where no systemd runs', () => {
  const fixture = (name: string) => readFileSync(new URL(`../fixtures/probe/${name}`, import.meta.url), 'utf8');
  /** The deployed hook host's probe, as a host without systemd answers it. */
  const withoutSystemd = (probe: string) => probe.replace('@@ibfleet end', '@@ibfleet systemd no\n@@ibfleet end');
  const withSystemd = (probe: string) => probe.replace('@@ibfleet end', '@@ibfleet systemd yes\nactive\n@@ibfleet end');
  /** A hook host as deploy leaves it: the transcript's files as this inventory renders them (the lab's differed in its size). */
  const deployed = renderHostFiles(playbook, renderContext(playbook, host, seeds, 'netplan')).reduce(
    (text, f) => withFile(text, f.path, f.mode.toString(8), createHash('sha256').update(f.content).digest('hex')),
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
