/**
 * The promise that the per-NIC routing comes back by itself, held against the real NetworkManager
 * and its D-Bus-activated dispatcher: after a boot, a carrier flap of each NIC, `nmcli device
 * reapply`, `nmcli connection up` and a restart of NetworkManager, status is ok and the full matrix
 * passes; an admin link flap inside the carrier grace (no dispatcher event) is repaired by the
 * timer within its bound. Without persistence the same events leave drift and failing cells, so
 * these tests can fail. Also here: the machine itself is never touched by a lab.
 */
import { readdir, readlink } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { labDown, labFlap, labReboot, labRestartManager } from '../../src/lab/index.js';
import { hostDaemons } from '../../src/lab/processes.js';
import { run } from '../../src/lab/system.js';
import { IS_ROOT, noteIfNotRoot, testLab, useLab } from '../lab/helpers.js';
import { REPAIR_BOUND_MS, managerLab } from './managers.js';

const LAB = testLab('e2e-managers-nm');
const TIMERS_LOG = '/run/ibfleet-lab-host/timers.log';
/** How long a hook may take to set things right after an event, on a loaded CI machine. */
const SETTLE_MS = 30_000;

async function waitFor(done: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
const HOSTS = [16, 17];

noteIfNotRoot('test/e2e/managers-networkmanager.test.ts (the real NetworkManager)');

/** The machine's own links, routes and rules, leaving out every lab's one link (other suites' labs come and go meanwhile). */
async function machineNetwork(): Promise<string> {
  const links = (await run(['ip', '-o', 'link', 'show'])).stdout
    .split('\n')
    .map((l) => l.split(':')[1]?.trim().replace(/@.*/, '') ?? '');
  const routes = (await run(['ip', '-4', 'route', 'show', 'table', 'all'])).stdout.split('\n');
  const rules = (await run(['ip', '-4', 'rule', 'show'])).stdout;
  return [
    ...links.filter((l) => l && !l.startsWith('ibfl-')),
    ...routes.filter((r) => r && !/ dev ibfl-/.test(r) && !/^local 198\.19\.255\.254 /.test(r)),
    rules,
  ]
    .sort()
    .join('\n');
}

const machineBefore = IS_ROOT ? machineNetwork() : Promise.resolve('');

describe.skipIf(!IS_ROOT)(
  'NetworkManager hosts: the routing survives what NetworkManager and an admin do (needs root)',
  () => {
    const lab = useLab({
      name: LAB.name,
      mgmtSubnet: LAB.mgmtSubnet,
      hosts: HOSTS,
      managers: { 16: 'networkmanager', 17: 'networkmanager' },
    });
    const m = managerLab(lab);
    const nics = (id: number) => lab().hosts.find((h) => h.id === id)!.interfaces;

    it("the real NetworkManager runs in each host's namespaces, never in the machine's, and the machine gained one link and one route", async () => {
      const machineNet = await readlink('/proc/self/ns/net');
      const LASTING = ['NetworkManager', 'dbus-daemon', 'bash'];
      for (const id of HOSTS) {
        const daemons = await hostDaemons(LAB.name, id);
        expect(daemons.map((d) => d.command.split(' ')[0]).sort()).toEqual(expect.arrayContaining(LASTING));
        // A short-lived process the list caught (a dispatcher script) may be gone by now; the daemons may not.
        for (const d of daemons) {
          const transient = !LASTING.includes(d.command.split(' ')[0]!);
          const net = await readlink(`/proc/${d.pid}/ns/net`).catch((e: NodeJS.ErrnoException) =>
            transient && e.code === 'ENOENT' ? undefined : Promise.reject(e),
          );
          if (net !== undefined) expect(net, d.command).not.toBe(machineNet);
        }
      }
      // No NetworkManager, networkd or D-Bus of the lab's in the machine's own network namespace.
      const inMachine: string[] = [];
      for (const pid of (await readdir('/proc')).filter((e) => /^\d+$/.test(e))) {
        const [net, exe] = await Promise.all([
          readlink(`/proc/${pid}/ns/net`).catch(() => ''),
          readlink(`/proc/${pid}/exe`).catch(() => ''),
        ]);
        if (net === machineNet && /\/(NetworkManager|systemd-networkd|networkd-dispatcher|nm-dispatcher)$/.test(exe))
          inMachine.push(`${pid} ${exe}`);
      }
      expect(inMachine).toEqual([]);
      expect(await machineNetwork()).toBe(await machineBefore);
    });

    it('deploy: status ok and every NIC reaches every NIC', async () => {
      const deployed = await m.run('deploy', '--hosts', 'all', '--playbook', m.persisted, '--json');
      expect(deployed.code, deployed.stdout + deployed.stderr).toBe(0);
      await m.expectHealthy('deploy');
    });

    it('a boot: NetworkManager brings the NICs up and its dispatcher runs the hook', async () => {
      const reboots = await labReboot(LAB.name, HOSTS);
      expect(reboots.map((r) => [r.id, r.ok, r.hooks])).toEqual(HOSTS.map((id) => [id, true, ['50-ibfleet-routes']]));
      await m.untilOk(SETTLE_MS);
      await m.expectHealthy('reboot');
    });

    it('a carrier flap of each NIC', async () => {
      for (const nic of nics(16)) expect((await labFlap(LAB.name, 16, nic)).settled).toBe(true);
      await m.untilOk(SETTLE_MS);
      await m.expectHealthy('flaps');
    });

    it('nmcli device reapply of each NIC, and nmcli connection up: NetworkManager puts its main-table route back, the hook takes it out again', async () => {
      for (const nic of nics(16))
        expect(await m.sh(16, `nmcli device reapply ${nic} && sleep 1`)).toContain('successfully reapplied');
      await m.untilOk(SETTLE_MS);
      expect(await m.sh(16, `nmcli connection up ${nics(16)[1]} && sleep 1`)).toContain('successfully activated');
      await m.untilOk(SETTLE_MS);
      await m.expectHealthy('reapply and connection up');
    });

    it('a restart of NetworkManager', async () => {
      expect((await labRestartManager(LAB.name, 16)).ok).toBe(true);
      await m.untilOk(SETTLE_MS);
      await m.expectHealthy('restart');
    });

    it('an admin link flap inside the carrier grace announces nothing: status shows the drift, the repair timer ends it within its bound', async () => {
      const nic = nics(16)[0]!;
      // Right after a repair run has finished, so the next is a whole interval away and status sees the
      // drift. The run a restart of the timer starts at once (its OnBootSec long past, as systemd does),
      // not the timer's next one, up to a whole interval away: the first start logged after the restart,
      // and its exit. A run already under way when the restart came is not it: it started before.
      await m.sh(16, 'systemctl restart ibfleet-routes-repair.timer');
      const restartedRunEnded = async () =>
        (await m.sh(
          16,
          `awk '/ restart ibfleet-routes-repair\\.timer$/ { r = 1; s = 0; e = 0 } r && /ibfleet-routes-repair\\.timer: starting / { s = 1 } s && /ibfleet-routes-repair\\.service: exit / { e = 1 } END { print e + 0 }' ${TIMERS_LOG}`,
        )) === '1';
      await waitFor(restartedRunEnded, REPAIR_BOUND_MS);
      // The kernel drops the table route with the link; no hook runs for it.
      expect(
        await m.sh(16, `ip link set ${nic} down; ip link set ${nic} up; sleep 0.5; ip -4 route show table 941 | wc -l`),
      ).toBe('0');
      const drift = await m.status();
      expect(drift.statuses[16]).toBe('drift');
      // The kernel dropped the table route with the link; NetworkManager puts its own main-table route back (soon after).
      expect(drift.reasons).toEqual(expect.arrayContaining([`16: ${nic}: table 941 is empty (missing table route)`]));
      const took = await m.untilOk(REPAIR_BOUND_MS);
      expect(took).toBeLessThan(REPAIR_BOUND_MS);
      await m.expectHealthy('the repair');
    });

    it('without persistence the same events show the bug: drift and failing cells', async () => {
      expect((await m.run('rollback', '--hosts', 'all', '--json')).code).toBe(0);
      expect((await m.run('deploy', '--hosts', 'all', '--playbook', m.unpersisted, '--json')).code).toBe(0);
      expect((await m.status(m.unpersisted)).reasons).toEqual([]);

      await m.sh(16, `nmcli device reapply ${nics(16)[0]} && sleep 1`);
      expect((await m.status(m.unpersisted)).reasons).toEqual([
        `16: ${nics(16)[0]}: main-table route to 172.16.0.0/16 is back`,
      ]);

      const nic = nics(17)[1]!;
      await m.sh(17, `ip link set ${nic} down; ip link set ${nic} up; sleep 1`);
      await new Promise((r) => setTimeout(r, 8000));
      expect((await m.status(m.unpersisted)).reasons).toEqual(
        expect.arrayContaining([`17: ${nic}: table 942 is empty (missing table route)`]),
      );

      await labReboot(LAB.name, HOSTS);
      expect(Object.values((await m.status(m.unpersisted)).statuses)).toEqual(['drift', 'drift']);
      expect((await m.failingCells()).length).toBeGreaterThan(0);
    });

    it("lab down ends every daemon by PID and leaves the machine's own links, routes and rules as they were", async () => {
      const pids = (await Promise.all(HOSTS.map((id) => hostDaemons(LAB.name, id)))).flat().map((d) => d.pid);
      expect(pids.length).toBeGreaterThanOrEqual(6);
      expect((await labDown(LAB.name)).found).toBe(true);
      // A process that has ended (a zombie not yet reaped included) has no namespaces left.
      for (const pid of pids)
        expect(
          await readlink(`/proc/${pid}/ns/net`)
            .then(() => `${pid} alive`)
            .catch(() => 'gone'),
        ).toBe('gone');
      expect(await machineNetwork()).toBe(await machineBefore);
    });
  },
);
