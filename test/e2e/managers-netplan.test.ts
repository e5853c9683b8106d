/**
 * The same promise against netplan + the real systemd-networkd + networkd-dispatcher (and ifupdown's
 * real ifup): after a boot, a carrier flap of each NIC, `networkctl reconfigure` of each NIC — which
 * makes networkd drop every rule it did not make, both NICs' — and a restart of networkd, status
 * is ok and the full matrix passes. Without persistence the same events leave drift and failing
 * cells, so these tests can fail.
 */
import { describe, expect, it } from 'vitest';
import { labFlap, labReboot, labRestartManager } from '../../src/lab/index.js';
import { IS_ROOT, noteIfNotRoot, testLab, useLab } from '../lab/helpers.js';
import { managerLab } from './managers.js';

const LAB = testLab('e2e-managers-netplan');
const HOSTS = [34, 35, 40];

noteIfNotRoot('test/e2e/managers-netplan.test.ts (the real systemd-networkd and networkd-dispatcher)');

describe.skipIf(!IS_ROOT)(
  'netplan and ifupdown hosts: the routing survives what networkd, ifupdown and an admin do (needs root)',
  () => {
    const lab = useLab({
      name: LAB.name,
      mgmtSubnet: LAB.mgmtSubnet,
      hosts: HOSTS,
      managers: { 34: 'netplan', 35: 'netplan', 40: 'ifupdown' },
    });
    const m = managerLab(lab);

    it('deploy: status ok and every NIC reaches every NIC', async () => {
      const deployed = await m.run('deploy', '--hosts', 'all', '--playbook', m.persisted, '--json');
      expect(deployed.code, deployed.stdout + deployed.stderr).toBe(0);
      await m.expectHealthy('deploy');
    });

    it('a boot: networkd brings the NICs up, networkd-dispatcher and ifup run the hooks', async () => {
      const reboots = await labReboot(LAB.name, HOSTS);
      expect(reboots.map((r) => [r.id, r.ok])).toEqual(HOSTS.map((id) => [id, true]));
      await m.untilOk(30_000);
      await m.expectHealthy('reboot');
    });

    it('a carrier flap of each NIC', async () => {
      // Each host's NICs one after the other; the two hosts, whose carriers have nothing to do with each other, at once.
      const flapped = await Promise.all(
        [34, 40].map(async (id) => {
          const settled: boolean[] = [];
          for (const nic of ['ib0', 'ib1']) settled.push((await labFlap(LAB.name, id, nic)).settled);
          return settled;
        }),
      );
      expect(flapped).toEqual([
        [true, true],
        [true, true],
      ]);
      await m.untilOk(30_000);
      await m.expectHealthy('flaps');
    });

    it("networkctl reconfigure of one NIC drops both NICs' rules; the hook, run for that one NIC, restores both", async () => {
      for (const nic of ['ib0', 'ib1']) {
        await m.sh(34, `networkctl reconfigure ${nic}`);
        await m.untilOk(30_000);
      }
      await m.expectHealthy('networkctl reconfigure');
    });

    it('a restart of systemd-networkd, and ifdown + ifup on the ifupdown host', async () => {
      // Both hosts at once: ifdown + ifup on 40 need not wait for networkd's ~12 s IPv6 solicitations on 34.
      const restarts = await Promise.all([34, 40].map((id) => labRestartManager(LAB.name, id)));
      expect(restarts.map((r) => [r.id, r.ok])).toEqual([
        [34, true],
        [40, true],
      ]);
      await m.untilOk(30_000);
      await m.expectHealthy('restart');
    });

    it('without persistence the same events show the bug: drift and failing cells', async () => {
      expect((await m.run('rollback', '--hosts', 'all', '--json')).code).toBe(0);
      // networkd reads networkd.conf only when it starts: the hook's drop-in that rollback took away
      // (ManageForeignRoutingPolicyRules=no) holds until then. A boot, as a host's next one would.
      await labReboot(LAB.name, HOSTS);
      expect((await m.run('deploy', '--hosts', 'all', '--playbook', m.unpersisted, '--json')).code).toBe(0);
      expect((await m.status(m.unpersisted)).reasons).toEqual([]);

      await m.sh(34, 'networkctl reconfigure ib0; sleep 2');
      // networkd re-added ib0's address (and its main-table route) and dropped every foreign rule: ib1's too.
      // ib1's traffic now leaves through ib0: what makes RDMA CM pick the wrong port.
      expect((await m.status(m.unpersisted)).reasons).toEqual(
        expect.arrayContaining([
          '34: ib0: rule from 172.16.34.1 is missing',
          '34: ib0: main-table route to 172.16.0.0/16 is back',
          '34: ib1: rule from 172.16.34.2 is missing',
          '34: ib1: traffic from 172.16.34.2 leaves through ib0',
        ]),
      );

      await labReboot(LAB.name, HOSTS);
      expect(Object.values((await m.status(m.unpersisted)).statuses)).toEqual(['drift', 'drift', 'drift']);
      expect((await m.failingCells()).length).toBeGreaterThan(0);
    });
  },
);
