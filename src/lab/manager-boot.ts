/**
 * How a lab host's networking boots, as the shell that runs inside its namespaces: the real network
 * manager of the host with its own system D-Bus, started the way its init would start it, and the
 * lab's stand-in for systemd's timers. Pure; src/lab/up.ts and src/lab/reboot.ts run the scripts.
 *
 * Everything a host's daemons keep lives in its private /run; the lab's own bookkeeping (pid files,
 * daemon logs, the timer runner) lives in HOST_BOOT_DIR there, which a reboot keeps while it forgets
 * everything else, as a real reboot forgets a tmpfs.
 */
import { LOCK_DIR, ROUTES_LOCK_PATH, ROUTING_SCRIPT_PATH } from '../script/paths.js';
import { shellQuote } from '../script/shell.js';
import { MGMT_IFACE } from './names.js';
import type { LabHost, LabPlan } from './plan.js';
import { fabricTables, runsSystemd } from './plan.js';
import { configuredNics } from './fresh.js';
import { isRoce } from './rdma-emulation.js';
import { DISPATCH_RECORDER, DISPATCHED_SUBDIR } from './dispatch-recorder.js';

/** Inside a host: pid files and logs of the daemons the lab started, and the timer runner. */
export const HOST_BOOT_DIR = '/run/ibfleet-lab-host';
export const TIMER_RUNNER_PATH = `${HOST_BOOT_DIR}/timer-runner`;
/** Inside a RoCE host: the program keeping its GID tables following its NICs' addresses (gid-follower.ts). */
export const GID_FOLLOWER_PATH = `${HOST_BOOT_DIR}/gid-follower`;

/**
 * Kernel settings of a freshly booted lab host, on all, default and every fabric NIC. Strict
 * reverse-path filtering and ARP answered only by the NIC that owns the address make the seeds'
 * failure exact and repeatable: NIC 1 ↔ NIC 1 works, anything through a NIC 2 fails until the
 * per-NIC routing is in place. The other two are pinned to the kernel defaults so a reboot also
 * undoes what a deploy sets, whatever the machine's own defaults are.
 */
export const BOOT_SYSCTLS: Readonly<Record<string, string>> = {
  rp_filter: '1',
  arp_ignore: '1',
  arp_announce: '0',
  accept_local: '0',
};

/** What /run keeps across a lab reboot: sshd (the lab's way in stays up) and the lab's bookkeeping. */
const RUN_KEPT = ['sshd', 'sshd.pid', 'sshd.log', HOST_BOOT_DIR.slice('/run/'.length)];

/** Seconds a boot waits for a daemon or the manager's NICs before it reports the host failed. */
const BOOT_WAIT_S = 30;

export function disableIpv6(): string {
  return 'if [ -d /proc/sys/net/ipv6 ]; then echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6; echo 1 > /proc/sys/net/ipv6/conf/default/disable_ipv6; fi';
}

export function sysctlLines(host: LabHost): string {
  const targets = ['all', 'default', ...host.nics.map((n) => n.iface)];
  const writes = Object.entries(BOOT_SYSCTLS).map(([key, value]) => `echo ${value} > "$d/${key}"`);
  return `for conf in ${targets.join(' ')}; do\n\td=/proc/sys/net/ipv4/conf/$conf\n\t${writes.join('; ')}\ndone`;
}

/**
 * The lab's stand-in for udev, which lab hosts do not run. When a network interface appears,
 * systemd's udev rule (99-systemd.rules) runs systemd-sysctl for it, so the /etc/sysctl.d keys of
 * that interface — which can only be set once it exists — take effect before any manager configures
 * it. A lab boot does not create the NICs again: it puts them back to a new interface's settings
 * (sysctlLines) and then runs what that rule runs, with the same arguments, for each NIC.
 */
export function udevSysctlLines(host: LabHost): string {
  const prefixes = (iface: string) =>
    ['ipv4/conf', 'ipv4/neigh', 'ipv6/conf', 'ipv6/neigh']
      .map((k) => shellQuote(`--prefix=/net/${k}/${iface}`))
      .join(' ');
  return [
    "# udev's 99-systemd.rules, as each NIC appears: its keys from /etc/sysctl.d.",
    `if [ -x ${UDEV_SYSCTL} ]; then`,
    ...host.nics.map((n) => `\t${UDEV_SYSCTL} ${prefixes(n.iface)} || status=1`),
    'fi',
  ].join('\n');
}

/** What udev's rule runs (Debian's path; /lib is /usr/lib on merged-/usr systems). */
const UDEV_SYSCTL = '/lib/systemd/systemd-sysctl';

/**
 * Once the manager has brought the NICs up: NIC 1's main-table route to the fabric subnet is the one
 * the kernel uses — the first of the equal routes — as on the seeds' machines, whatever order the
 * daemon configured the NICs in (networkd 252 goes by descending ifindex, 257 does not). Where another
 * NIC's route comes first, each route of NICs 2.. is deleted and appended again as it was: the same
 * routes, with the same attributes, only in NIC order. A host's daemons keep what they made.
 */
export function nic1RouteFirst(plan: LabPlan, host: LabHost): string {
  const nics = configuredNics(host);
  if (nics.length < 2) return '';
  const subnet = plan.fabric.subnet;
  return `# The seeds' failure: NIC 1's route to ${subnet} first in main, whatever order the manager went in.
# route_last NIC: NIC's routes to the subnet deleted and appended again, exactly as ip prints them.
route_last() {
	nic=$1
	ip -4 -o route show table main exact ${subnet} dev "$nic" | sed 's/ linkdown//; s/ dead//' >"$B/route-order"
	while read -r route; do
		# shellcheck disable=SC2086 # the route's own words
		set -- $route
		if ip -4 route del table main "$@" dev "$nic" 2>/dev/null; then
			ip -4 route append table main "$@" dev "$nic" || status=1
		elif [ -n "$(ip -4 -o route show table main exact ${subnet} dev "$nic")" ]; then
			status=1
		fi
		# Gone meanwhile: a deployed host's own hook took it out of main, and there is nothing to order.
	done <"$B/route-order"
}
# A deployed host's hook may take NICs' main routes out meanwhile (NetworkManager's dispatcher runs it
# as the NICs come up): under the routing program's own lock, it runs before or after this, never
# between a route's del and its append (which would put back a route it had just taken out).
if [ -x ${ROUTING_SCRIPT_PATH} ] && command -v flock >/dev/null 2>&1; then
	[ -d ${LOCK_DIR} ] || mkdir -m 0700 ${LOCK_DIR}
	exec 9>>${ROUTES_LOCK_PATH}
	flock -w 30 9 || echo "lab boot: ${ROUTES_LOCK_PATH} still held after 30 s; ordering the routes anyway" >&2
fi
first=$(ip -4 -o route show table main exact ${subnet} | head -n 1)
case "$first " in
*" dev ${nics[0]!.iface} "*) ;;
*)
${nics
  .slice(1)
  .map((n) => `\troute_last ${n.iface}`)
  .join('\n')}
	;;
esac
exec 9>&-
`;
}

/** Fabric addresses in NIC order, so the main table lists NIC 1's subnet route first — the seeds' failure. */
export function fabricUpBatch(host: LabHost): string[] {
  return configuredNics(host).flatMap((n) => [
    `link set ${n.iface} up`,
    `address add ${n.address}/${n.prefixLength} dev ${n.iface}`,
  ]);
}

const DIRS = `B=${HOST_BOOT_DIR}
mkdir -p "$B" /run/lock /run/network
chmod 1777 /run/lock`;

const START = `# start NAME CMD...: CMD as a daemon of this host (own session, no terminal), its pid in $B/NAME.pid.
# It returns once the daemon runs its own program, not this shell or setsid on the way there (at
# most 5 s): whoever lists the host's daemons right after boot sees each as it is.
start() {
	name=$1
	shift
	setsid "$@" </dev/null >>"$B/$name.log" 2>&1 &
	pid=$!
	echo "$pid" >"$B/$name.pid"
	shell_exe=$(readlink /proc/$$/exe)
	setsid_exe=$(readlink -f "$(command -v setsid)")
	n=0
	while [ "$n" -lt 500 ]; do
		exe=$(readlink "/proc/$pid/exe") || break
		[ "$exe" = "$shell_exe" ] || [ "$exe" = "$setsid_exe" ] || break
		n=$((n + 1))
		sleep 0.01
	done
}`;

const AWAIT = `# await WHAT CMD...: until CMD succeeds, at most ${BOOT_WAIT_S} s.
await() {
	what=$1
	shift
	n=0
	until "$@" >/dev/null 2>&1; do
		n=$((n + 1))
		if [ "$n" -ge ${BOOT_WAIT_S * 10} ]; then
			echo "lab boot: $what not ready after ${BOOT_WAIT_S} s" >&2
			return 1
		fi
		sleep 0.1
	done
}`;

/** The host's own system bus: NetworkManager, networkd and their dispatchers talk over it. */
const DBUS = `mkdir -p /run/dbus
dbus-daemon --system --fork --print-pid >"$B/dbus-daemon.pid" 2>>"$B/dbus-daemon.log"`;

const START_NETWORK_MANAGER = `# As NetworkManager.service runs it; --debug only keeps it in the foreground, logging to its file.
# Its dispatcher calls and their answers logged (DISPATCH at debug): how the lab knows the hooks ran.
start NetworkManager NetworkManager --no-daemon --debug --log-domains=DEFAULT,DISPATCH:DEBUG
# NetworkManager-wait-online: startup is complete once every managed device is activated.
await NetworkManager nm-online -s -q -t ${BOOT_WAIT_S} || status=1
`;

const START_NETWORKD = `start systemd-networkd /lib/systemd/systemd-networkd
await systemd-networkd sh -c 'dbus-send --system --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus.NameHasOwner string:org.freedesktop.network1 | grep -q true' || status=1
`;

function networkManagerBoot(): string {
  return `${DBUS}
${START_NETWORK_MANAGER}`;
}

/**
 * Until networkd has each NIC routable — and, at a boot, done configuring it ("routable
 * (configured)"), what systemd-networkd-wait-online waits for: after it networkd has nothing more to
 * report about the boot. Done comes well after routable: with IPv6 router advertisements accepted
 * (networkd's default, which netplan keeps) and no router on the fabric, only when its solicitations
 * time out (~12 s). `lab restart` waits for routable only, as before: the dispatcher runs there and
 * the configured.d hook may still come after it returns.
 */
function awaitRoutable(host: LabHost, state: 'routable' | 'routable (configured)'): string {
  return configuredNics(host)
    .map(
      (n) =>
        `await "${n.iface} ${state}" sh -c ${shellQuote(`networkctl status ${n.iface} | grep -q "State: ${state}"`)} || status=1`,
    )
    .join('\n');
}

/**
 * systemd's side of a Type=notify service: the datagram socket its NOTIFY_SOCKET names, read until
 * READY=1 (exit 0), or exit 1 after the timeout. Python, as the daemon it waits for.
 */
const NOTIFY_LISTENER = `import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(float(sys.argv[2]))
try:
    while b"READY=1" not in s.recv(4096).split(b"\\n"):
        pass
except socket.timeout:
    sys.exit(1)`;

/**
 * networkd-dispatcher, started once networkd is done with the NICs, as systemd starts its
 * Type=notify unit: the boot goes on when it sends READY=1, which it does only after its startup
 * triggers (--run-startup-triggers, Debian's default) ran the hooks of every link's state —
 * configured.d and routable.d — one after the other, to the end. Started beside networkd, as it
 * was, it ran them at times nothing could tell: while it was still starting (no hook process yet,
 * so a boot looked quiet and was reported done with no rule back), and again when networkd reported
 * the NICs configured, seconds into whatever came after the boot (putting back a rule a test had
 * just deleted). Both orders happen on real hosts (networkd-dispatcher.service is not ordered after
 * networkd's links); this is the one after which the lab can say the hooks have run.
 */
const START_NETWORKD_DISPATCHER = `# networkd-dispatcher.service: Debian's arguments from /etc/default/networkd-dispatcher.
networkd_dispatcher_args=--run-startup-triggers
# shellcheck source=/dev/null
[ ! -f /etc/default/networkd-dispatcher ] || . /etc/default/networkd-dispatcher
notify=$B/networkd-dispatcher.notify
rm -f "$notify"
python3 -c ${shellQuote(NOTIFY_LISTENER)} "$notify" ${BOOT_WAIT_S} &
listener=$!
await "networkd-dispatcher's notify socket" test -S "$notify" || status=1
# shellcheck disable=SC2086 # the arguments are a word list
start networkd-dispatcher env NOTIFY_SOCKET="$notify" python3 -c ${shellQuote(DISPATCH_RECORDER)} ${HOST_BOOT_DIR}/${DISPATCHED_SUBDIR} $networkd_dispatcher_args
if ! wait "$listener"; then
	echo "lab boot: networkd-dispatcher not ready (no READY=1) after ${BOOT_WAIT_S} s" >&2
	status=1
fi
rm -f "$notify"
`;

function netplanBoot(plan: LabPlan, host: LabHost): string {
  return `# netplan's systemd generator, as at every boot: /etc/netplan → /run/systemd/network. It also
# writes units for systemd under /run/systemd/system, whether systemd runs or not: they stay, as on
# a real host (a program that took that directory for "systemd runs" is wrong on either).
netplan generate
rm -f /run/systemd/network/10-netplan-${MGMT_IFACE}.network
mkdir -p /run/systemd/netif
chown systemd-network:systemd-network /run/systemd/netif
${DBUS}
${START_NETWORKD}${awaitRoutable(host, 'routable (configured)')}
${nic1RouteFirst(plan, host)}${START_NETWORKD_DISPATCHER}`;
}

/** The daemon `systemctl restart` would restart on each host: what `lab restart` stops by PID and starts here. */
export const MANAGER_DAEMON: Readonly<Record<Exclude<LabHost['manager'], 'ifupdown'>, string>> = {
  networkmanager: 'NetworkManager',
  netplan: 'systemd-networkd',
};

/** The D-Bus name each daemon takes: a new one exits at once if the bus still gives it to the old one. */
const MANAGER_BUS_NAME: Readonly<Record<keyof typeof MANAGER_DAEMON, string>> = {
  networkmanager: 'org.freedesktop.NetworkManager',
  netplan: 'org.freedesktop.network1',
};

/**
 * Until the bus has let go of the stopped daemon's name. The old process has exited (restart.ts), but
 * dbus-daemon releases the name only as it reads the closed connection: NetworkManager 1.30 started
 * before that says "fatal failure to acquire D-Bus service … Service already taken" and exits.
 */
function awaitNameReleased(manager: keyof typeof MANAGER_DAEMON): string {
  const name = MANAGER_BUS_NAME[manager];
  return `await "the bus to release ${name}" sh -c '! dbus-send --system --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus.NameHasOwner string:${name} | grep -q true' || status=1
`;
}

/**
 * `lab restart`, once the manager's daemon is stopped: started again over the /run it left, as
 * `systemctl restart NetworkManager` / `systemctl restart systemd-networkd` do — D-Bus, the
 * dispatchers and the kernel state stay. ifupdown has no daemon: `ifdown` and `ifup` every fabric NIC.
 */
export function renderManagerRestartScript(plan: LabPlan, host: LabHost): string {
  const head = `set -u
status=0
${DIRS}
`;
  if (host.manager === 'ifupdown')
    return `${head}${host.nics.map((n) => `ifdown ${n.iface} 2>&1 || status=$?\nifup -v ${n.iface} 2>&1 || status=$?`).join('\n')}\n${nic1RouteFirst(plan, host)}exit "$status"\n`;
  const start =
    host.manager === 'networkmanager' ? START_NETWORK_MANAGER : `${START_NETWORKD}${awaitRoutable(host, 'routable')}\n`;
  return `${head}${START}
${AWAIT}
${awaitNameReleased(host.manager)}${start}${nic1RouteFirst(plan, host)}exit "$status"
`;
}

/**
 * A host's networking boot: boot sysctls and the NICs' own from /etc/sysctl.d (udev's part), then its manager brings the fabric NICs up and runs the
 * hooks itself — NetworkManager with its D-Bus-activated dispatcher, netplan generate + systemd-
 * networkd + networkd-dispatcher, or ifupdown's `ifup -a` as networking.service runs it (-v names
 * each if-up.d script it runs). Then, on hosts that emulate systemd, the timer runner. Without daemons (the benchmark's big labs)
 * the lab adds the fabric addresses itself and nothing runs hooks.
 */
export function renderNetworkBootScript(plan: LabPlan, host: LabHost): string {
  // systemd makes /run/systemd/system at every boot (sd_booted's mark); a reboot's reset forgot it.
  const systemdMark = runsSystemd(host) ? 'mkdir -p /run/systemd/system\n' : '';
  const head = `set -u
${DIRS}
${systemdMark}${sysctlLines(host)}
`;
  if (!plan.networkDaemons) {
    return `${head}ip -batch - <<'EOF'\n${fabricUpBatch(host).join('\n')}\nEOF\n`;
  }
  const helpers = host.manager === 'ifupdown' ? START : `${START}\n${AWAIT}`;
  // netplan: the NIC order is fixed before its dispatcher starts (netplanBoot); the others' hooks
  // run as their manager brings the NICs up, so the order is fixed after.
  const manager = {
    networkmanager: `${networkManagerBoot()}${nic1RouteFirst(plan, host)}`,
    netplan: netplanBoot(plan, host),
    ifupdown: `ifup -a -v 2>&1 || status=$?\n${nic1RouteFirst(plan, host)}`,
  }[host.manager];
  // systemd's timers: the lab's stand-in, on hosts that emulate systemd only.
  const timers = runsSystemd(host) ? `start timers bash ${TIMER_RUNNER_PATH}\n` : '';
  // The kernel's GID management on a RoCE host, before the manager gives the NICs their addresses.
  const gids = host.rdma !== false && isRoce(host) ? `start gids bash ${GID_FOLLOWER_PATH}\n` : '';
  return `${head}status=0
${udevSysctlLines(host)}
${helpers}
${gids}${manager}${timers}exit "$status"
`;
}

/**
 * `lab reboot`, between stopping the host's daemons and booting it again: the kernel state of a
 * fresh boot — fabric NICs down without addresses, no rules but the kernel's three, empty fabric
 * tables, boot sysctls, no neighbours — and a /run that remembers nothing of the last boot (a
 * NetworkManager started over its old /run "assumes" the last activation and leaves the NICs down).
 * ifupdown hosts take their NICs down with a real `ifdown` first.
 */
export function renderResetScript(plan: LabPlan, host: LabHost): string {
  const down = host.manager === 'ifupdown' ? host.nics.map((n) => `ifdown ${n.iface} 2>/dev/null || true`) : [];
  return `set -u
${down.join('\n')}
${host.nics.map((n) => `ip address flush dev ${n.iface}; ip link set ${n.iface} down`).join('\n')}
ip -4 rule show | while IFS=: read -r pref rest; do
	case $pref in 0 | 32766 | 32767) ;; *) ip -4 rule del pref "$pref" ;; esac
done
${fabricTables(plan)
  .map((t) => `ip -4 route flush table ${t} 2>/dev/null || true`)
  .join('\n')}
${sysctlLines(host)}
ip neigh flush all 2>/dev/null || true
for f in /run/* /run/.[!.]*; do
	[ -e "$f" ] || continue
	case \${f#/run/} in ${RUN_KEPT.join(' | ')}) ;; *) rm -rf -- "$f" ;; esac
done
rm -rf ${HOST_BOOT_DIR}/timers
`;
}
