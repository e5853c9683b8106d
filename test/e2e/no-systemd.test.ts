/**
 * A netplan host that systemd does not run (a container, a chroot-like host), end to end, beside one
 * it does: `netplan generate` leaves its units under /run/systemd/system on both, as it does on real
 * hosts, so that directory tells nothing. On the host without systemd, deploy installs no repair
 * timer and succeeds (no rollback), the plan and status say the timer is not active, and the hook
 * still brings the routing back after a boot; a repair timer an earlier deploy left there goes as
 * stale. On the systemd host the repair timer is installed, started through systemctl and runs.
 */
import { describe, expect, it } from 'vitest';
import { labReboot } from '../../src/lab/index.js';
import { NO_SYSTEMD_NOTE } from '../../src/steps/persist/systemd.js';
import { IS_ROOT, noteIfNotRoot, testLab, useLab } from '../lab/helpers.js';
import { json, statuses } from '../helpers/cli.js';
import { REPAIR_BOUND_MS, managerLab } from './managers.js';

const LAB = testLab('e2e-no-systemd');
const HOSTS = [34, 35];
const UNITS =
  '/etc/systemd/system/ibfleet-routes-repair.service /etc/systemd/system/ibfleet-routes-repair.timer /etc/systemd/system/timers.target.d/ibfleet-routes-repair.conf';
const TIMERS_LOG = '/run/ibfleet-lab-host/timers.log';

noteIfNotRoot('test/e2e/no-systemd.test.ts (a netplan host without systemd)');

describe.skipIf(!IS_ROOT)('a netplan host that systemd does not run (needs root)', () => {
  const lab = useLab({
    name: LAB.name,
    mgmtSubnet: LAB.mgmtSubnet,
    hosts: HOSTS,
    managers: { 34: 'netplan', 35: 'netplan' },
    noSystemd: [35],
  });
  const m = managerLab(lab);
  // Deploy and status both with the shipped playbook's repair timer shortened (managers.ts).
  const run = (command: 'deploy' | 'status' | 'rollback', ...args: string[]) =>
    m.run(command, ...(command === 'rollback' ? [] : ['--playbook', m.persisted]), ...args);
  const unitsOn = (id: number) => m.sh(id, `for f in ${UNITS}; do [ -e "$f" ] && echo "$f"; done; true`);

  it('both keep what netplan generate wrote under /run/systemd/system; only 34 runs "systemd" (its PID 1 and systemctl say so)', async () => {
    for (const id of HOSTS) expect(await m.sh(id, 'ls -d /run/systemd/system')).toBe('/run/systemd/system');
    expect(await m.sh(34, 'systemctl is-system-running')).toBe('running');
    expect(await m.sh(35, 'cat /proc/1/comm; systemctl is-system-running 2>/dev/null; echo "exit $?"')).toMatch(
      /^init\n(offline|unknown|)\n?exit 1$/,
    );
    expect(lab().hosts.map((h) => [h.id, h.systemd])).toEqual([
      [34, true],
      [35, false],
    ]);
  });

  it('the plan says the periodic repair is not active on 35 and installs no timer there; 34 gets its timer', async () => {
    const planned = json(await run('deploy', '--hosts', 'all', '--dry-run', '--json'));
    const [h34, h35] = planned.hosts;
    expect(h35!.reasons[0]).toBe(NO_SYSTEMD_NOTE);
    expect(h35!.reasons.join('\n')).not.toContain('ibfleet-routes-repair');
    expect(h34!.reasons).not.toContain(NO_SYSTEMD_NOTE);
    expect(h34!.reasons).toContain('start ibfleet-routes-repair.timer');
    const plain = await run('deploy', '--hosts', 'all', '--dry-run');
    expect(plain.stdout).toContain(`  note: ${NO_SYSTEMD_NOTE}`);
  });

  it('deploy succeeds on both, with no rollback: 35 has the hook and no repair units, 34 a running repair timer', async () => {
    const deployed = await run('deploy', '--hosts', 'all', '--json');
    expect(deployed.code, deployed.stdout + deployed.stderr).toBe(0);
    expect(statuses(json(deployed))).toEqual({ 34: 'changed', 35: 'changed' });
    expect(await unitsOn(35)).toBe('');
    expect(await m.sh(35, 'ls /etc/networkd-dispatcher/routable.d')).toBe('50-ibfleet-routes');
    expect(await m.sh(34, 'systemctl is-active ibfleet-routes-repair.timer')).toBe('active');
    expect(await m.sh(34, `grep -c 'systemctl restart ibfleet-routes-repair.timer' ${TIMERS_LOG}`)).toBe('1');
  });

  it('status: both ok, 35 with the note (not drift); the full matrix passes', async () => {
    const status = await run('status', '--json');
    expect(status.code, status.stdout).toBe(0);
    const doc = json(status);
    expect(doc.hosts.map((h) => [h.id, h.status, h.reasons])).toEqual([
      [34, 'ok', []],
      [35, 'ok', [NO_SYSTEMD_NOTE]],
    ]);
    expect((await run('status')).stdout).toContain(`35: ok: ${NO_SYSTEMD_NOTE}`);
    expect(await m.failingCells()).toEqual([]);
  });

  it('a boot of 35: networkd brings the NICs up and the hook restores the routing, with no timer', async () => {
    const [reboot] = await labReboot(LAB.name, [35]);
    expect([reboot!.ok, reboot!.hooks]).toEqual([true, ['50-ibfleet-routes']]);
    expect(await m.sh(35, 'ip -4 rule show | grep -c "^94[12]:"')).toBe('2');
    const status = json(await run('status', '--hosts', '35', '--json'));
    expect(status.hosts[0]).toMatchObject({ status: 'ok', reasons: [NO_SYSTEMD_NOTE] });
    const { cells, asks } = await m.settledCells();
    expect(cells, asks.join('\n')).toEqual([]);
  });

  it(
    'on 34 the repair timer runs through systemd: routing broken behind its back comes back within the bound',
    { timeout: 120_000 },
    async () => {
      const repairs = async () =>
        Number(await m.sh(34, `grep -c 'ibfleet-routes-repair.service: exit 0' ${TIMERS_LOG} || true`));
      const until = async (done: () => Promise<boolean>) => {
        const deadline = Date.now() + REPAIR_BOUND_MS;
        while (!(await done()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 250));
        return done();
      };
      // Broken right after a repair run (OnUnitActiveSec: the next is a whole interval away), so the
      // status that follows looks before the timer does; broken at any moment, the timer sometimes put
      // the rule back first and status found the host ok.
      const earlier = await repairs();
      expect(await until(async () => (await repairs()) > earlier)).toBe(true);
      const ran = await repairs();
      await m.sh(34, 'ip -4 rule del from 172.16.34.2 lookup 942');
      expect((await m.status()).statuses[34]).toBe('drift');
      expect(await m.untilOk(REPAIR_BOUND_MS)).toBeLessThan(REPAIR_BOUND_MS);
      // The timer runs again within the bound whatever the state. It may not be what put the rule back:
      // on networkd 248+ the configured.d hook can run first (networkd-dispatcher reports the link again).
      expect(await until(async () => (await repairs()) > ran)).toBe(true);
    },
  );

  it('repair units an earlier deploy left on 35 are stale there: drift, and deploy removes them without asking systemd', async () => {
    await m.sh(
      35,
      [
        'mkdir -p /etc/systemd/system/timers.target.d',
        ...UNITS.split(' ').map((unit) => `printf '[Unit]\\nDescription=left by an earlier deploy\\n' >${unit}`),
      ].join(' && '),
    );
    const drift = await m.status();
    expect(drift.statuses[35]).toBe('drift');
    expect(drift.reasons).toContain(
      '35: stale repair unit /etc/systemd/system/ibfleet-routes-repair.timer (no systemd runs on this host to start it)',
    );
    const fixed = await run('deploy', '--hosts', '35', '--json');
    expect(fixed.code, fixed.stdout).toBe(0);
    expect(json(fixed).hosts[0]!.reasons).toEqual([
      NO_SYSTEMD_NOTE,
      ...UNITS.split(' ').map((unit) => `remove ${unit} (no systemd runs on this host to start it)`),
    ]);
    expect(await unitsOn(35)).toBe('');
    expect(json(await run('status', '--hosts', '35', '--json')).hosts[0]!.status).toBe('ok');
  });

  it('rollback leaves both as they booted', async () => {
    const rolled = await run('rollback', '--hosts', 'all', '--json');
    expect(rolled.code, rolled.stdout + rolled.stderr).toBe(0);
    for (const id of HOSTS) expect(await m.sh(id, 'ip -4 rule show | grep -c "^94[12]:" || true')).toBe('0');
    expect(await unitsOn(34)).toBe('');
    expect(await m.sh(34, 'systemctl is-active ibfleet-routes-repair.timer || true')).toBe('inactive');
  });
});
