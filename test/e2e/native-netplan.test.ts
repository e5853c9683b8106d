/**
 * Native persistence against netplan + the real systemd-networkd (and ifupdown's real ifup): the
 * netplan hosts carry ibfleet's own netplan file, which networkd applies at every boot, carrier
 * flap, `networkctl reconfigure` and restart with no hook; the ifupdown host gets ifupdown's own
 * if-up.d hook. Switching between hook and native removes the other mechanism; a change that fails
 * verification leaves the netplan configuration as it was; rollback leaves no rule and no file.
 */
import { describe, expect, it } from 'vitest';
import { labFlap, labReboot, labRestartManager } from '../../src/lab/index.js';
import { IS_ROOT, noteIfNotRoot, testLab, testSuite, useLab } from '../lab/helpers.js';
import { json, statuses } from '../helpers/cli.js';
import { HOOK, NATIVE, nativeLab, withSlowNetworkd } from './native.js';

const LAB = testLab('e2e-native-netplan');
/** How `ip rule` shows a rule networkd made: `proto static` from systemd 248 on; bullseye's networkd 247 (test/e2e/on-suite) tags none. */
const STATIC = testSuite() === 'bullseye' ? '' : ' proto static';
const HOSTS = [34, 35, 40];
const NETPLAN_FILE = '/etc/netplan/60-ibfleet.yaml';
/** A drop-in of the site's for the .network file netplan generates for ib0. */
const SITE_DROP_IN_DIR = '/etc/systemd/network/10-netplan-ib0.network.d';
const HOOK_FILES =
  '/etc/networkd-dispatcher/routable.d/50-ibfleet-routes /etc/ibfleet/ibfleet-routes /etc/systemd/system/ibfleet-routes-repair.timer';

noteIfNotRoot('test/e2e/native-netplan.test.ts (native persistence against the real systemd-networkd and ifupdown)');

describe.skipIf(!IS_ROOT)('native persistence on netplan and ifupdown hosts (needs root)', () => {
  const lab = useLab({
    name: LAB.name,
    mgmtSubnet: LAB.mgmtSubnet,
    hosts: HOSTS,
    managers: { 34: 'netplan', 35: 'netplan', 40: 'ifupdown' },
  });
  const m = nativeLab(lab);
  const rules = (id: number) => m.sh(id, 'ip -4 rule show');

  it("native deploy: ibfleet's netplan file on the netplan hosts (netplan says why main keeps its routes), the if-up.d hook on ifupdown; status ok, full matrix", async () => {
    const deployed = await m.deploy(NATIVE);
    expect(deployed.code, deployed.text).toBe(0);
    const byId = Object.fromEntries(deployed.hosts.map((h) => [h.id, h]));
    expect(byId[34]!.reasons[0]).toMatch(/^netplan cannot keep the kernel's subnet route out of the main table/);
    expect(byId[40]!.reasons[0]).toMatch(/^ifupdown: native persistence is ifupdown's own if-up\.d hook/);
    expect(
      await m.sh(
        34,
        `stat -c '%a %U' ${NETPLAN_FILE}; for f in ${HOOK_FILES}; do [ -e "$f" ] && echo "$f"; done; true`,
      ),
    ).toBe('600 root');
    expect(await m.sh(34, `sed -n '/^network:/,$p' ${NETPLAN_FILE}`)).toBe(
      [
        'network:',
        '  version: 2',
        '  ethernets:',
        '    ib0:',
        '      # NIC 1: ib0 (172.16.34.1)',
        '      routes:',
        '        - to: 172.16.0.0/16',
        '          scope: link',
        '          table: 941',
        '          from: 172.16.34.1',
        '      routing-policy:',
        '        - from: 172.16.34.1',
        '          table: 941',
        '          priority: 941',
        '    ib1:',
        '      # NIC 2: ib1 (172.16.34.2)',
        '      routes:',
        '        - to: 172.16.0.0/16',
        '          scope: link',
        '          table: 942',
        '          from: 172.16.34.2',
        '      routing-policy:',
        '        - from: 172.16.34.2',
        '          table: 942',
        '          priority: 942',
      ].join('\n'),
    );
    // networkd made them: its own rules and routes, `proto static` (networkd 248 on; 247 tags none).
    expect(await rules(34)).toBe(
      `0:\tfrom all lookup local\n941:\tfrom 172.16.34.1 lookup 941${STATIC}\n942:\tfrom 172.16.34.2 lookup 942${STATIC}\n32766:\tfrom all lookup main\n32767:\tfrom all lookup default`,
    );
    expect(await m.sh(40, 'ls /etc/network/if-up.d/ibfleet-routes')).toBe('/etc/network/if-up.d/ibfleet-routes');
    await m.expectHealthy('native deploy', NATIVE);
  });

  it('a boot: netplan generate and networkd bring the routing back with no hook (ifupdown: ifup runs its hook)', async () => {
    const reboots = await labReboot(LAB.name, HOSTS);
    expect(reboots.map((r) => [r.id, r.ok, r.hooks])).toEqual([
      [34, true, []],
      [35, true, []],
      [40, true, []],
    ]);
    expect(await m.sh(34, 'cat /proc/sys/net/ipv4/conf/ib1/arp_ignore')).toBe('2');
    await m.untilOk(NATIVE);
    await m.expectHealthy('reboot', NATIVE);
  });

  it('networkctl reconfigure of each NIC: networkd puts its own rules back at once', async () => {
    for (const nic of ['ib0', 'ib1']) {
      await m.sh(34, `networkctl reconfigure ${nic}`);
      await m.untilOk(NATIVE);
    }
    await m.expectHealthy('networkctl reconfigure', NATIVE);
  });

  it('a restart of systemd-networkd, ifdown + ifup, and a carrier flap', async () => {
    // Three hosts, three events at once: ifdown + ifup on 40 and the flap on 35 need not wait for
    // networkd's ~12 s IPv6 solicitations after the restart on 34 (src/lab/dispatched.ts).
    const [restarted34, restarted40, flapped35] = await Promise.all([
      labRestartManager(LAB.name, 34),
      labRestartManager(LAB.name, 40),
      labFlap(LAB.name, 35, 'ib1'),
    ]);
    expect([restarted34.ok, restarted40.ok, flapped35.settled]).toEqual([true, true, true]);
    await m.untilOk(NATIVE);
    await m.expectHealthy('restart and flap', NATIVE);
  });

  it('an edited netplan file is drift; deploy puts it back and reloads networkd', async () => {
    await m.sh(35, `sed -i 's/priority: 942/priority: 1942/' ${NETPLAN_FILE}`);
    expect((await m.status(NATIVE)).reasons).toEqual([
      `35: ${NETPLAN_FILE} was modified (content differs from the rendered file)`,
    ]);
    expect((await m.deploy(NATIVE, '35')).hosts[0]!.status).toBe('changed');
    await m.expectHealthy('deploy after the edit', NATIVE);
  });

  it('a changed tableBase (940 → 500): networkd takes its old rules and routes away with the old netplan file, nothing is left; back to 940 the same', async () => {
    const moved = m.variant('inv-500.yaml', (t) => t.replace('tableBase: 940', 'tableBase: 500'));
    const deployed = await m.runOn(moved, 'deploy', '--hosts', 'all', '--playbook', NATIVE, '--json');
    expect(deployed.code, deployed.stdout).toBe(0);
    expect(await rules(34)).toBe(
      `0:\tfrom all lookup local\n501:\tfrom 172.16.34.1 lookup 501${STATIC}\n502:\tfrom 172.16.34.2 lookup 502${STATIC}\n32766:\tfrom all lookup main\n32767:\tfrom all lookup default`,
    );
    for (const id of HOSTS) expect(await m.sh(id, 'ip -4 route show table 941; ip -4 route show table 942')).toBe('');
    expect(Object.values(statuses(json(await m.runOn(moved, 'status', '--playbook', NATIVE, '--json'))))).toEqual([
      'ok',
      'ok',
      'ok',
    ]);
    expect(await m.failingCells()).toEqual([]);
    // A reboot brings back the new tables only.
    await labReboot(LAB.name, [34]);
    expect(await m.sh(34, 'ip -4 rule show | grep -c "^94[12]:" || true')).toBe('0');

    expect((await m.deploy(NATIVE)).code).toBe(0);
    for (const id of HOSTS)
      expect(
        await m.sh(
          id,
          'ip -4 rule show | grep -c "^50[12]:" || true; ip -4 route show table 501; ip -4 route show table 502',
        ),
      ).toBe('0');
    await m.untilOk(NATIVE);
    await m.expectHealthy('back to tableBase 940', NATIVE);
  });

  it('hook → native → hook: each time the other mechanism goes, and both verify the same', async () => {
    // Host 35's networkd slowed: it drops ib0's and ib1's configuration well after `networkctl
    // reconfigure` returned, and the change waits for that before the hook's program runs.
    const toHook = await withSlowNetworkd(LAB.name, 35, () => m.deploy(HOOK));
    expect(toHook.code, toHook.text).toBe(0);
    expect(await m.sh(34, `ls ${NETPLAN_FILE} 2>&1; ls /etc/networkd-dispatcher/routable.d`)).toBe(
      `ls: cannot access '${NETPLAN_FILE}': No such file or directory\n50-ibfleet-routes`,
    );
    expect(await rules(34)).toBe(
      '0:\tfrom all lookup local\n941:\tfrom 172.16.34.1 lookup 941\n942:\tfrom 172.16.34.2 lookup 942\n32766:\tfrom all lookup main\n32767:\tfrom all lookup default',
    );
    await m.expectHealthy('native → hook', HOOK);
    // networkd reconfiguring a link drops the hook's rules: the hook restores them.
    await m.sh(34, 'networkctl reconfigure ib0');
    await m.untilOk(HOOK);

    const toNative = await m.deploy(NATIVE);
    expect(toNative.code, toNative.text).toBe(0);
    expect(await m.sh(34, `ls /etc/networkd-dispatcher/routable.d /etc/ibfleet; ls ${NETPLAN_FILE}`)).toBe(
      `/etc/ibfleet:\nowned\nprevious\n\n/etc/networkd-dispatcher/routable.d:\n${NETPLAN_FILE}`,
    );
    await m.expectHealthy('hook → native', NATIVE);
  });

  it("a native change that fails verification is undone: the netplan file gone again, networkd's rules with it, the hook back", async () => {
    const toHook = await m.deploy(HOOK, '35');
    expect(toHook.code, toHook.text).toBe(0);
    // A site rule of networkd's own ahead of ibfleet's (a rule added by hand would not survive the
    // reconfigure: networkd drops rules it did not make) sends the fabric subnet to table 100.
    const state = () =>
      m.sh(
        35,
        [
          'ip -4 rule show',
          'ip -4 route show table all | grep -v "^local\\|^broadcast"',
          'for f in /proc/sys/net/ipv4/conf/ib*/*; do printf "%s=%s\\n" "$f" "$(cat "$f")"; done',
          'find /etc/netplan /etc/networkd-dispatcher /etc/ibfleet /etc/systemd/system /etc/sysctl.d -xdev -printf "%y %p %m\\n" | sort',
          'find /etc/netplan /etc/networkd-dispatcher /etc/ibfleet/ibfleet-routes /etc/systemd/system -xdev -type f -print0 | sort -z | xargs -0 sha256sum',
        ].join('; '),
      );
    try {
      // networkd drops the hook's rules as it reconfigures ib0 for the drop-in; the hook puts them back.
      await m.sh(
        35,
        `mkdir -p ${SITE_DROP_IN_DIR} && printf '[RoutingPolicyRule]\\nTo=172.16.0.0/16\\nTable=100\\nPriority=100\\n\\n[Route]\\nDestination=172.16.0.0/16\\nTable=100\\nScope=link\\n' >${SITE_DROP_IN_DIR}/site.conf && networkctl reload`,
      );
      await m.sh(
        35,
        'n=0; until [ "$(ip -4 rule show | grep -c -E "^(100|941|942):")" = 3 ] || [ "$n" -gt 150 ]; do sleep 0.2; n=$((n + 1)); done; sleep 1',
      );
      const before = await state();
      const failed = await m.deploy(NATIVE, '35');
      expect(failed.code, failed.text).toBe(1);
      expect(failed.hosts[0]!.error).toMatch(
        /^verify: verification failed: .*ib1: traffic from 172\.16\.35\.2 leaves through ib0 \(table 100\).*; rolled back: the host is as it was before this deploy/,
      );
      expect(await state()).toBe(before);
    } finally {
      await m.sh(35, `rm -rf ${SITE_DROP_IN_DIR} && networkctl reload`);
    }
    const again = await m.deploy(NATIVE, '35');
    expect(again.code, again.text).toBe(0);
  });

  it('rollback: no rule, no netplan file; networkd configures the NICs as before the deploy', async () => {
    const rolled = await m.run('rollback', '--hosts', 'all', '--json');
    expect(rolled.code, rolled.stdout + rolled.stderr).toBe(0);
    for (const id of HOSTS)
      expect(await rules(id)).toBe(
        '0:\tfrom all lookup local\n32766:\tfrom all lookup main\n32767:\tfrom all lookup default',
      );
    expect(
      await m.sh(
        34,
        `ls /etc/netplan; ip -4 route show table 941; networkctl reconfigure ib0 ib1; sleep 1; ip -4 rule show | grep -c 94 || true`,
      ),
    ).toBe('99-netcfg.yaml\n0');
    expect((await m.status(NATIVE)).statuses).toEqual({ 34: 'drift', 35: 'drift', 40: 'drift' });
  });
});
