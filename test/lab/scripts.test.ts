/**
 * The lab's generated commands: what they create where, in which order, and shellcheck on every
 * script (like the deploy scripts, a script nobody has checked must not look green).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { planLab } from '../../src/lab/plan.js';
import { DISPATCH_RECORDER } from '../../src/lab/dispatch-recorder.js';
import { renderManagerRestartScript, renderNetworkBootScript, renderResetScript } from '../../src/lab/manager-boot.js';
import { shellQuote } from '../../src/script/shell.js';
import {
  renderBootScript,
  renderCreateBatch,
  renderHostStartScript,
  renderListHooksScript,
  renderMountScript,
  renderRootLinkBatch,
  renderSwitchScript,
} from '../../src/lab/scripts.js';
import { renderSystemctlStandIn } from '../../src/lab/systemctl-standin.js';
import { renderTimerRunner } from '../../src/lab/timer-runner.js';
import { renderGidFollower } from '../../src/lab/gid-follower.js';
import { seedsFleet } from './fleet.js';

const plan = planLab({
  fleet: seedsFleet(),
  name: 'demo',
  hosts: [16, 34, 40],
  managers: new Map([[40, 'ifupdown']]),
  mgmtSubnet: '198.18.9.0/24',
});
const [h16, h34, h40] = plan.hosts as [(typeof plan.hosts)[0], (typeof plan.hosts)[0], (typeof plan.hosts)[0]];
/** Host 34 with RoCE ports (lab up --link-layer ethernet): its boot starts the GID follower. */
const roce34 = { ...h34, linkLayer: 'ethernet' as const };

describe('creating the lab', () => {
  const batch = renderCreateBatch(plan).trimEnd().split('\n');

  it("creates each veth end directly in its namespace, so nothing of the fabric is ever in the machine's namespace; IPoIB datagram MTU 2044", () => {
    expect(batch).toContain(
      'link add ibs5f1 netns ibfl-demo-h16 mtu 2044 type veth peer name f16n2 netns ibfl-demo-sw mtu 2044',
    );
    // NIC 2 first: networkd configures the higher ifindex first, and NIC 1's route must come first in main.
    expect(
      batch.indexOf(
        'link add ibs5f1 netns ibfl-demo-h16 mtu 2044 type veth peer name f16n2 netns ibfl-demo-sw mtu 2044',
      ),
    ).toBeLessThan(
      batch.indexOf(
        'link add ibs5f0 netns ibfl-demo-h16 mtu 2044 type veth peer name f16n1 netns ibfl-demo-sw mtu 2044',
      ),
    );
    expect(batch).toContain('link add mgmt0 netns ibfl-demo-h34 type veth peer name m34 netns ibfl-demo-sw');
    expect(batch).toContain('link add br-fabric netns ibfl-demo-sw type bridge');
    expect(batch.filter((l) => l.startsWith('link add') && !l.split(' type ')[0]!.includes(' netns '))).toEqual([
      'link add ibfl-demo type veth peer name up0 netns ibfl-demo-sw',
    ]);
  });

  it("creates the namespaces first and the machine's one link last", () => {
    expect(batch.slice(0, 4)).toEqual([
      'netns add ibfl-demo-sw',
      'netns add ibfl-demo-h16',
      'netns add ibfl-demo-h34',
      'netns add ibfl-demo-h40',
    ]);
    expect(batch.at(-1)).toMatch(/^link add ibfl-demo /);
  });

  it('gives the machine one /32 and one route, to the management subnet', () => {
    expect(renderRootLinkBatch(plan)).toBe(
      'address add 198.19.255.254/32 dev ibfl-demo\nlink set ibfl-demo up\nroute add 198.18.9.0/24 dev ibfl-demo src 198.19.255.254\n',
    );
  });

  it('boots each host with its real manager, which brings the fabric NICs up; the lab only configures the management link', () => {
    const boot = renderBootScript(plan, h16, '/usr/sbin/sshd');
    expect(boot).toMatch(/^mount -t sysfs -o ro,nosuid,nodev,noexec sysfs \/sys\n/);
    expect(boot).toContain('address add 198.18.9.16/24 dev mgmt0');
    expect(boot).not.toContain('172.16.16.');
    expect(boot).toContain('for conf in all default ibs5f0 ibs5f1; do');
    expect(boot).toContain('echo 1 > "$d/rp_filter"; echo 1 > "$d/arp_ignore"');
    expect(boot).toContain('dbus-daemon --system --fork --print-pid');
    // Its dispatcher's calls and answers in its log: how lab restart and flap know the hooks ran (dispatched.ts).
    expect(boot).toContain(
      'start NetworkManager NetworkManager --no-daemon --debug --log-domains=DEFAULT,DISPATCH:DEBUG',
    );
    const netplan = renderNetworkBootScript(plan, h34);
    expect(netplan.indexOf('netplan generate')).toBeLessThan(
      netplan.indexOf('start systemd-networkd /lib/systemd/systemd-networkd'),
    );
    expect(netplan).toContain('rm -f /run/systemd/network/10-netplan-mgmt0.network');
    expect(netplan).toContain('chown systemd-network:systemd-network /run/systemd/netif');
    // The dispatcher as systemd starts a Type=notify unit, once networkd is done and the NIC order fixed:
    // the boot returns after its startup triggers ran the hooks, and no hook races the order fix.
    // The real program, loaded by the lab's recorder of the reports it handled (DISPATCH_RECORDER).
    expect(netplan).toContain(
      `start networkd-dispatcher env NOTIFY_SOCKET="$notify" python3 -c ${shellQuote(DISPATCH_RECORDER)} /run/ibfleet-lab-host/dispatched $networkd_dispatcher_args`,
    );
    expect(netplan).toContain('grep -q "State: routable (configured)"');
    // `lab restart` is `systemctl restart systemd-networkd`: back once the NICs are routable, as before.
    const restart = renderManagerRestartScript(plan, h34);
    expect(restart).toContain('grep -q "State: routable"');
    expect(restart).not.toContain('(configured)');
    // The old daemon's bus name released before the new one asks for it (it would exit at once).
    const released = 'NameHasOwner string:org.freedesktop.network1 | grep -q true';
    expect(restart.indexOf(released)).toBeGreaterThan(-1);
    expect(restart.indexOf(released)).toBeLessThan(restart.indexOf('start systemd-networkd'));
    const order = ['networkctl status ib1', 'route_last ib1', 'start networkd-dispatcher', 'wait "$listener"'];
    expect(order.map((s) => netplan.indexOf(s))).toEqual(order.map((s) => netplan.indexOf(s)).sort((a, b) => a - b));
    expect(order.map((s) => netplan.indexOf(s))).not.toContain(-1);
    // NetworkManager's dispatcher runs a deployed hook while the order is fixed: the routing program's
    // lock keeps the hook from running between a route's del and its append.
    const nm = renderNetworkBootScript(plan, h16);
    const fix = ['exec 9>>/run/ibfleet/routes.lock', 'flock -w 30 9', 'route_last ibs5f1', 'exec 9>&-'];
    expect(fix.map((s) => nm.indexOf(s))).toEqual(fix.map((s) => nm.indexOf(s)).sort((a, b) => a - b));
    expect(fix.map((s) => nm.indexOf(s))).not.toContain(-1);
    expect(renderNetworkBootScript(plan, h40)).toContain('\nifup -a -v 2>&1 || status=$?\n');
    for (const host of [h16, h34, h40])
      expect(renderNetworkBootScript(plan, host)).toContain('start timers bash /run/ibfleet-lab-host/timer-runner');
  });

  it('without daemons (the benchmark), adds the fabric addresses itself in NIC order', () => {
    const bare = renderNetworkBootScript({ ...plan, networkDaemons: false }, h16);
    expect(bare.indexOf('address add 172.16.16.1/16 dev ibs5f0')).toBeLessThan(
      bare.indexOf('address add 172.16.16.2/16 dev ibs5f1'),
    );
    expect(bare).not.toMatch(/NetworkManager|timers/);
  });

  it('detaches namespace files in whole trees inside a new host, then overlays /etc', () => {
    const mount = renderMountScript(plan, h34);
    expect(mount).toContain('if (m == "/run/netns" || m ~ "^/run/ibfleet-lab/[^/]+$") { print m; continue }');
    expect(mount).toContain(
      'mount -t overlay ibfleet-lab -o lowerdir=/etc,upperdir=/run/ibfleet-lab/demo/hosts/34/upper/etc,workdir=/run/ibfleet-lab/demo/hosts/34/work /etc',
    );
    expect(mount.indexOf('mount -t overlay')).toBeLessThan(mount.indexOf("prune_trees ''"));
  });

  it("keeps what netplan generate writes under /run/systemd/system: whether systemd runs is the host's PID 1 and systemctl", () => {
    expect(renderNetworkBootScript(plan, h34)).not.toContain('rm -rf /run/systemd/system');
    expect(renderMountScript(plan, h34)).not.toContain('/usr/sbin/netplan');
  });

  it('a host that emulates systemd gets the systemctl stand-in over the real one (after the /usr/bin overlay) and a timer runner; one without, a PID 1 that is not systemd and neither', () => {
    const [s34, n35] = planLab({
      fleet: seedsFleet(),
      name: 'demo',
      hosts: [34, 35],
      noSystemd: [35],
      mgmtSubnet: '198.18.9.0/24',
    }).hosts;
    expect([s34!.systemd, n35!.systemd]).toEqual([true, false]);
    const mount = renderMountScript(plan, s34!);
    expect(mount).toContain(
      'mount --bind /run/ibfleet-lab/demo/hosts/34/run/ibfleet-lab-host/systemctl "$(readlink -f "$(command -v systemctl)")"\n',
    );
    expect(mount.indexOf('ibfleet-lab-bin')).toBeLessThan(mount.indexOf('/systemctl'));
    expect(mount).not.toContain('/proc/1/comm');
    const without = renderMountScript(plan, n35!);
    expect(without).toContain(
      'mount --bind /run/ibfleet-lab/demo/hosts/35/run/ibfleet-lab-host/pid1-comm /proc/1/comm\n',
    );
    expect(without).not.toContain('systemctl');
    expect(renderNetworkBootScript(plan, n35!)).not.toContain('timer-runner');
    // systemd's mark is made by every boot, lab up's and lab reboot's (whose reset empties /run), as systemd makes it.
    expect(renderNetworkBootScript(plan, s34!)).toContain('mkdir -p /run/systemd/system\n');
    expect(renderNetworkBootScript(plan, n35!)).not.toContain('mkdir -p /run/systemd/system');
    // A lab without network daemons runs no timers: none of its hosts runs systemd.
    expect(
      planLab({ fleet: seedsFleet(), name: 'demo', hosts: [34], networkDaemons: false, mgmtSubnet: '198.18.9.0/24' })
        .hosts[0]!.systemd,
    ).toBe(false);
  });

  it('--without-systemd names only hosts of the lab', () => {
    expect(() =>
      planLab({ fleet: seedsFleet(), name: 'demo', hosts: [34], noSystemd: [35, 36], mgmtSubnet: '198.18.9.0/24' }),
    ).toThrow('--without-systemd names hosts 35-36, not in the lab (--hosts 34)');
  });

  it("resets rules except the kernel's three and flushes the fabric tables", () => {
    const reset = renderResetScript(plan, h34);
    expect(reset).toContain('case $pref in 0 | 32766 | 32767) ;; *) ip -4 rule del pref "$pref" ;; esac');
    expect(reset).toContain('ip -4 route flush table 941');
    expect(reset).toContain('ip -4 route flush table 942');
    expect(renderResetScript(plan, h40)).toContain('ifdown ib1 2>/dev/null || true');
    // /run forgets the last boot, except sshd and the lab's pid files and logs.
    expect(reset).toContain(
      'case ${f#/run/} in sshd | sshd.pid | sshd.log | ibfleet-lab-host) ;; *) rm -rf -- "$f" ;; esac',
    );
  });
});

const shellcheck = spawnSync('shellcheck', ['--version'], { encoding: 'utf8' });
const workDir = mkdtempSync(join(tmpdir(), 'ibfleet-lab-shellcheck-'));
afterAll(() => rmSync(workDir, { recursive: true, force: true }));

describe.skipIf(shellcheck.error !== undefined)('shellcheck', () => {
  const scripts: [string, string, string[]][] = [
    ['switch', renderSwitchScript(plan), []],
    ['mount', renderMountScript(plan, h16), []],
    ['boot networkmanager', renderBootScript(plan, h16, '/usr/sbin/sshd'), []],
    ['boot netplan', renderBootScript(plan, h34, '/usr/sbin/sshd'), []],
    ['boot ifupdown', renderBootScript(plan, h40, '/usr/sbin/sshd'), []],
    ['boot without daemons', renderNetworkBootScript({ ...plan, networkDaemons: false }, h34), []],
    ['timer runner', renderTimerRunner(), ['-s', 'bash']],
    ['RoCE GID follower', renderGidFollower(roce34), ['-s', 'bash']],
    ['boot RoCE netplan', renderBootScript(plan, roce34, '/usr/sbin/sshd'), []],
    ['systemctl stand-in', renderSystemctlStandIn(), ['-s', 'bash']],
    ['reset networkmanager', renderResetScript(plan, h16), []],
    ['reset ifupdown', renderResetScript(plan, h40), []],
    ['list hooks', renderListHooksScript('/etc/networkd-dispatcher/routable.d'), []],
    // The start script carries the mount and boot scripts single-quoted on purpose (SC2016).
    ['host start', renderHostStartScript(plan, h16, '/usr/sbin/sshd'), ['--exclude=SC2016']],
  ];
  it.each(scripts)('%s script passes shellcheck -s sh', (label, text, flags) => {
    const file = join(workDir, `${label.replace(/ /g, '-')}.sh`);
    writeFileSync(file, text);
    const result = spawnSync('shellcheck', [...(flags.includes('-s') ? [] : ['-s', 'sh']), ...flags, file], {
      encoding: 'utf8',
    });
    expect(result.stdout + result.stderr).toBe('');
    expect(result.status).toBe(0);
  });
});
