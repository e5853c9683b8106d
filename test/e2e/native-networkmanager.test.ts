/**
 * Native persistence against the real NetworkManager: the per-NIC table and rule live in each
 * fabric NIC's active connection profile, and NetworkManager alone brings them back — after a boot,
 * `nmcli device reapply`, `nmcli connection up`, a restart of NetworkManager, a carrier flap and an
 * admin link flap — with no hook and no timer. A host switches between hook and native and back;
 * a change that fails verification leaves the profiles as they were; rollback leaves no rule and
 * the user's own rule on a profile alone; a NIC whose profile is not active stops the deploy before
 * anything changes; an old NetworkManager gets the hook, with the reason.
 */
import { describe, expect, it } from 'vitest';
import { labFlap, labReboot, labRestartManager } from '../../src/lab/index.js';
import { IS_ROOT, noteIfNotRoot, testLab, useLab } from '../lab/helpers.js';
import { json, statuses } from '../helpers/cli.js';
import { HOOK, NATIVE, nativeLab } from './native.js';

const LAB = testLab('e2e-native-nm');
const HOSTS = [16, 17];
/** Where ibfleet's hook-mode files live: none of them on a native host. */
const HOOK_FILES =
  '/etc/NetworkManager/dispatcher.d/50-ibfleet-routes /etc/ibfleet/ibfleet-routes /etc/systemd/system/ibfleet-routes-repair.timer';

noteIfNotRoot('test/e2e/native-networkmanager.test.ts (native persistence against the real NetworkManager)');

describe.skipIf(!IS_ROOT)('native persistence on NetworkManager hosts (needs root)', () => {
  const lab = useLab({
    name: LAB.name,
    mgmtSubnet: LAB.mgmtSubnet,
    hosts: HOSTS,
    managers: { 16: 'networkmanager', 17: 'networkmanager' },
  });
  const m = nativeLab(lab);
  const nics = (id: number) => lab().hosts.find((h) => h.id === id)!.interfaces;
  const hookFilesLeft = (id: number) => m.sh(id, `for f in ${HOOK_FILES}; do [ -e "$f" ] && echo "$f"; done; true`);

  it('the hook first: status ok and the full matrix', async () => {
    expect((await m.deploy(HOOK)).code).toBe(0);
    await m.expectHealthy('hook deploy', HOOK);
  });

  it('native on hook hosts: each profile carries its table and rule, the hook, script and timer are gone, main keeps no fabric route', async () => {
    const deployed = await m.deploy(NATIVE);
    expect(deployed.code, deployed.text).toBe(0);
    expect(deployed.hosts.map((h) => h.status)).toEqual(['changed', 'changed']);
    const [nic1, nic2] = nics(16);
    expect(await m.profile(16, nic1!)).toBe('priority 941 from 172.16.16.1 table 941\n941');
    expect(await m.profile(16, nic2!)).toBe('priority 942 from 172.16.16.2 table 942\n942');
    // NetworkManager wrote its own keyfile: ibfleet never edits one.
    expect(
      await m.sh(
        16,
        `grep -h -E '^(route-table|routing-rule)' /etc/NetworkManager/system-connections/${nic1}.nmconnection`,
      ),
    ).toBe('route-table=941\nrouting-rule1=priority 941 from 172.16.16.1 table 941');
    for (const id of HOSTS) expect(await hookFilesLeft(id)).toBe('');
    expect(await m.sh(16, 'ip -4 route show table main | grep -c "^172.16.0.0/16" || true')).toBe('0');
    expect(await m.sh(16, 'ip -4 route show table 941')).toBe(
      '172.16.0.0/16 dev ibs5f0 proto kernel scope link src 172.16.16.1 metric 100',
    );
    await m.expectHealthy('native deploy', NATIVE);
  });

  it('a second native deploy changes nothing', async () => {
    const again = await m.deploy(NATIVE);
    expect(again.hosts.map((h) => h.status)).toEqual(['unchanged', 'unchanged']);
  });

  it('a boot: NetworkManager activates each profile with its table and rule, and no hook runs', async () => {
    const reboots = await labReboot(LAB.name, HOSTS);
    expect(reboots.map((r) => [r.id, r.ok, r.hooks])).toEqual(HOSTS.map((id) => [id, true, []]));
    // The sysctls came from /etc/sysctl.d as each NIC appeared (the lab's stand-in for udev).
    expect(await m.sh(16, `cat /proc/sys/net/ipv4/conf/${nics(16)[1]}/rp_filter`)).toBe('2');
    await m.untilOk(NATIVE);
    await m.expectHealthy('reboot', NATIVE);
  });

  it('nmcli device reapply of each NIC, and nmcli connection up', async () => {
    for (const nic of nics(16))
      expect(await m.sh(16, `nmcli device reapply ${nic}`)).toContain('successfully reapplied');
    expect(await m.sh(17, `nmcli connection up ${nics(17)[1]}`)).toContain('successfully activated');
    await m.untilOk(NATIVE);
    await m.expectHealthy('reapply and connection up', NATIVE);
  });

  it('a restart of NetworkManager', async () => {
    expect((await labRestartManager(LAB.name, 16)).ok).toBe(true);
    await m.untilOk(NATIVE);
    await m.expectHealthy('restart', NATIVE);
  });

  it('a carrier flap, and an admin link flap no dispatcher announces: NetworkManager puts its route back itself', async () => {
    expect((await labFlap(LAB.name, 16, nics(16)[0]!)).settled).toBe(true);
    await m.sh(17, `ip link set ${nics(17)[1]} down; ip link set ${nics(17)[1]} up`);
    await m.untilOk(NATIVE);
    await m.expectHealthy('flaps', NATIVE);
  });

  it("a profile edited behind ibfleet's back is drift, even before the kernel notices; deploy puts it back", async () => {
    const nic = nics(16)[1]!;
    await m.sh(16, `nmcli connection modify ${nic} ipv4.route-table 0`);
    expect((await m.status(NATIVE)).reasons).toEqual([
      `16: ${nic}: connection profile ${nic}: ipv4.route-table is 0, want 942`,
    ]);
    const fixed = await m.deploy(NATIVE, '16');
    expect(fixed.hosts[0]!.status).toBe('changed');
    expect(await m.profile(16, nic)).toBe('priority 942 from 172.16.16.2 table 942\n942');
    await m.expectHealthy('deploy after the edit', NATIVE);
  });

  it('a changed tableBase (940 → 500): native deploy moves each profile to its new table, and the old tables and rules go; back to 940 the same', async () => {
    const moved = m.variant('inv-500.yaml', (t) => t.replace('tableBase: 940', 'tableBase: 500'));
    const [nic1, nic2] = nics(16);
    const drift = json(await m.runOn(moved, 'status', '--playbook', NATIVE, '--json'));
    expect(drift.hosts[0]!.reasons).toContain(
      `table 941 of an earlier deploy (tableBase was 940, /etc/ibfleet/owned) still holds 172.16.0.0/16 dev ${nic1} proto kernel scope link src 172.16.16.1 metric 100`,
    );
    // The profile routes into ibfleet's own old table: ibfleet's to move, no reason to stop.
    const deployed = await m.runOn(moved, 'deploy', '--hosts', 'all', '--playbook', NATIVE, '--json');
    expect(deployed.code, deployed.stdout).toBe(0);
    expect(await m.profile(16, nic1!)).toBe('priority 501 from 172.16.16.1 table 501\n501');
    expect(await m.profile(16, nic2!)).toBe('priority 502 from 172.16.16.2 table 502\n502');
    // NetworkManager leaves the route it made in the old table; the deploy flushed it.
    expect(
      await m.sh(
        16,
        'ip -4 rule show | grep -c "^94[12]:" || true; ip -4 route show table 941; ip -4 route show table 942',
      ),
    ).toBe('0');
    expect(Object.values(statuses(json(await m.runOn(moved, 'status', '--playbook', NATIVE, '--json'))))).toEqual([
      'ok',
      'ok',
    ]);
    expect(await m.failingCells()).toEqual([]);

    expect((await m.deploy(NATIVE)).code).toBe(0);
    expect(await m.profile(16, nic1!)).toBe('priority 941 from 172.16.16.1 table 941\n941');
    expect(
      await m.sh(
        16,
        'ip -4 rule show | grep -c "^50[12]:" || true; ip -4 route show table 501; ip -4 route show table 502',
      ),
    ).toBe('0');
    await m.expectHealthy('back to tableBase 940', NATIVE);
  });

  it("back to the hook: ibfleet's table and rule leave the profiles, the hook returns; status ok, full matrix", async () => {
    const deployed = await m.deploy(HOOK);
    expect(deployed.code, deployed.text).toBe(0);
    for (const nic of nics(16)) expect(await m.profile(16, nic)).toBe('0');
    expect(await m.sh(16, 'ls /etc/NetworkManager/dispatcher.d/50-ibfleet-routes')).toBe(
      '/etc/NetworkManager/dispatcher.d/50-ibfleet-routes',
    );
    await m.expectHealthy('switch back to the hook', HOOK);
  });

  it("a native change that fails verification is undone: the profiles, rules, tables and ibfleet's files exactly as before", async () => {
    // A site rule ahead of ibfleet's sends the fabric subnet to the management network: the change
    // applies, but traffic from the NICs still leaves through mgmt0.
    await m.sh(
      17,
      'ip -4 rule add priority 100 to 172.16.0.0/16 lookup 100 && ip -4 route add 172.16.0.0/16 dev mgmt0 table 100',
    );
    const state = () =>
      m.sh(
        17,
        [
          'ip -4 rule show',
          'ip -4 route show table all | grep -v "^local\\|^broadcast"',
          ...nics(17).map((n) => `nmcli -g ipv4.routing-rules,ipv4.route-table connection show ${n}`),
          'for f in /proc/sys/net/ipv4/conf/ib*/*; do printf "%s=%s\\n" "$f" "$(cat "$f")"; done',
          `ls -l ${HOOK_FILES} /etc/sysctl.d/60-ibfleet-fabric.conf; sha256sum ${HOOK_FILES}`,
        ].join('; '),
      );
    const before = await state();
    try {
      const failed = await m.deploy(NATIVE, '17');
      expect(failed.code).toBe(1);
      expect(failed.hosts[0]!.error).toMatch(
        /^verify: verification failed: .*leaves through mgmt0.*; rolled back: the host is as it was before this deploy/,
      );
      expect(await state()).toBe(before);
    } finally {
      await m.sh(17, 'ip -4 rule del priority 100; ip -4 route flush table 100');
    }
  });

  it('a NIC whose profile is not active: the deploy fails at plan, naming it, and changes nothing on either NIC', async () => {
    const [nic1, nic2] = nics(17);
    // Unmanaged, the NIC keeps its address and routes but has no active profile.
    await m.sh(17, `nmcli device set ${nic2} managed no`);
    try {
      const before = await m.sh(
        17,
        `nmcli -g ipv4.route-table connection show ${nic1}; ls /etc/NetworkManager/dispatcher.d`,
      );
      const failed = await m.deploy(NATIVE, '17');
      expect(failed.code).toBe(1);
      expect(failed.hosts[0]!.error).toMatch(
        new RegExp(`^plan: ${nic2} has no active NetworkManager connection profile; .*deploy the hook playbook$`),
      );
      expect(
        await m.sh(17, `nmcli -g ipv4.route-table connection show ${nic1}; ls /etc/NetworkManager/dispatcher.d`),
      ).toBe(before);
    } finally {
      await m.sh(17, `nmcli device set ${nic2} managed yes; nmcli connection up ${nic2} >/dev/null`);
    }
  });

  it('an old NetworkManager (the probe reads 1.10.6, as Ubuntu 18.04 ships): the hook, and the plan says why', async () => {
    // Inside host 17's own mount namespace only: nmcli answers `general` as 1.10 would, the rest as itself.
    const boot = '/run/ibfleet-lab-host';
    await m.sh(
      17,
      [
        `: >${boot}/nmcli.real && mount --bind /usr/bin/nmcli ${boot}/nmcli.real`,
        `printf '#!/bin/sh\\ncase " $* " in *" general "*) echo running:1.10.6; exit 0 ;; esac\\nexec ${boot}/nmcli.real "$@"\\n' >${boot}/nmcli.old && chmod 755 ${boot}/nmcli.old`,
        `mount --bind ${boot}/nmcli.old /usr/bin/nmcli`,
      ].join(' && '),
    );
    try {
      expect(await m.sh(17, 'nmcli -t -f RUNNING,VERSION general')).toBe('running:1.10.6');
      const deployed = await m.deploy(NATIVE, '17');
      expect(deployed.code, deployed.text).toBe(0);
      expect(deployed.hosts[0]!.reasons[0]).toBe(
        'NetworkManager 1.10.6 has no ipv4.routing-rules (they came with 1.18): the routing persists with the dispatcher hook instead',
      );
      for (const nic of nics(17)) expect(await m.profile(17, nic)).toBe('0');
      expect(await m.sh(17, 'ls /etc/NetworkManager/dispatcher.d/50-ibfleet-routes')).toBe(
        '/etc/NetworkManager/dispatcher.d/50-ibfleet-routes',
      );
      expect((await m.status(NATIVE)).statuses[17]).toBe('ok');
      expect(await m.failingCells()).toEqual([]);
    } finally {
      await m.sh(17, `umount /usr/bin/nmcli; umount ${boot}/nmcli.real; rm -f ${boot}/nmcli.real ${boot}/nmcli.old`);
    }
  });

  it("rollback leaves no rule of ibfleet's, and a rule of the user's own on the same profile stays", async () => {
    expect((await m.deploy(NATIVE)).code).toBe(0);
    const nic = nics(16)[0]!;
    await m.sh(
      16,
      `nmcli connection modify ${nic} +ipv4.routing-rules 'priority 100 to 10.9.0.0/16 table 100' && nmcli device reapply ${nic}`,
    );
    await m.expectHealthy("a user rule beside ibfleet's", NATIVE);
    const rolled = await m.run('rollback', '--hosts', 'all', '--json');
    expect(rolled.code, rolled.stdout + rolled.stderr).toBe(0);
    expect(await m.profile(16, nic)).toBe('priority 100 to 10.9.0.0/16 table 100\n0');
    expect(await m.profile(16, nics(16)[1]!)).toBe('0');
    // NetworkManager 1.42+ marks its rules `proto static`; 1.30 leaves the kernel's default.
    expect((await m.sh(16, 'ip -4 rule show')).replace(/ proto static$/m, '')).toBe(
      '0:\tfrom all lookup local\n100:\tfrom all to 10.9.0.0/16 lookup 100\n32766:\tfrom all lookup main\n32767:\tfrom all lookup default',
    );
    expect(await m.sh(17, 'ip -4 rule show | grep -c lookup\\ 94 || true')).toBe('0');
    expect(await m.sh(16, 'ip -4 route show table 941; ip -4 route show table 942')).toBe('');
  });
});
