/**
 * The commands that build, boot, reset and inspect lab hosts, as text: `ip -batch` input and small
 * POSIX sh scripts. Pure; src/lab/up.ts and friends run them. Batching matters: `lab up` of 254
 * hosts is a handful of `ip` processes plus one short script per host.
 */
import { shellCommand, shellQuote } from '../script/shell.js';
import { HOST_KEY_VIEW_PATH, MANAGED_TREES } from './emulation.js';
import { FABRIC_BRIDGE, LAB_ROOT, MGMT_BRIDGE, MGMT_IFACE, NETNS_DIR, SWITCH_UPLINK, hostPaths } from './names.js';
import { runsSystemd, type LabHost, type LabPlan } from './plan.js';
import { disableIpv6, HOST_BOOT_DIR, renderNetworkBootScript } from './manager-boot.js';
import { SYSTEMCTL_STANDIN_PATH } from './systemctl-standin.js';
import { CONFIGFS_DIR, isRoce } from './rdma-emulation.js';
import { PID1_COMM_PATH } from './emulation.js';
import { IPOIB_MTU } from './rdma-emulation.js';
import { DEFAULT_ROOTS_DIR, suiteRoot } from './suites.js';

export const HOOK_PATH_ENV = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** Root namespace, one `ip -batch`: every namespace and veth, each end created in its own namespace. */
export function renderCreateBatch(plan: LabPlan): string {
  const sw = plan.switchNamespace;
  const lines = [`netns add ${sw}`, ...plan.hosts.map((h) => `netns add ${h.namespace}`)];
  lines.push(`link add ${MGMT_BRIDGE} netns ${sw} type bridge`, `link add ${FABRIC_BRIDGE} netns ${sw} type bridge`);
  for (const h of plan.hosts) {
    lines.push(`link add ${MGMT_IFACE} netns ${h.namespace} type veth peer name ${h.mgmtPort} netns ${sw}`);
    // NIC 2 before NIC 1: systemd-networkd 252 configures links in descending ifindex order, so on
    // netplan hosts NIC 1's subnet route then comes first in main — as on the seeds' machines.
    // IPoIB in datagram mode carries 2044 bytes (a 2048-byte IB MTU less its 4-byte header).
    const mtu = h.rdma !== false ? ` mtu ${IPOIB_MTU.datagram}` : '';
    for (const n of [...h.nics].reverse())
      lines.push(`link add ${n.iface} netns ${h.namespace}${mtu} type veth peer name ${n.port} netns ${sw}${mtu}`);
  }
  // Created last and only once the switch exists: the pair's far end lives in the switch namespace,
  // so deleting that namespace removes this link from the machine too.
  lines.push(`link add ${plan.rootLink} type veth peer name ${SWITCH_UPLINK} netns ${sw}`);
  return `${lines.join('\n')}\n`;
}

/**
 * A switch forwards frames without running them through the machine's firewall. Where the kernel
 * has br_netfilter (built in here; Docker loads it), every bridge calls arptables and iptables for
 * each frame on each port it leaves by, unless told not to in its namespace: an ARP broadcast is a
 * copy for each of the fabric's ports (800 at 100 hosts × 8 NICs), and a 100 × 8 rail verify right
 * after a deploy took 118 s of the machine's CPU with those calls, 102 s without. The hosts' own
 * ARP and ICMP handling is untouched.
 */
export const SWITCH_WITHOUT_FIREWALL =
  'if [ -d /proc/sys/net/bridge ]; then for t in arptables iptables ip6tables; do echo 0 > "/proc/sys/net/bridge/bridge-nf-call-$t"; done; fi';

/** Inside the switch namespace: no IPv6 chatter on ~3 ports per host, no firewall calls, bridges and ports up. */
export function renderSwitchScript(plan: LabPlan): string {
  const batch = [
    `link set ${MGMT_BRIDGE} up`,
    `link set ${FABRIC_BRIDGE} up`,
    `link set ${SWITCH_UPLINK} master ${MGMT_BRIDGE} up`,
  ];
  for (const h of plan.hosts) {
    batch.push(`link set ${h.mgmtPort} master ${MGMT_BRIDGE} up`);
    for (const n of h.nics) batch.push(`link set ${n.port} master ${FABRIC_BRIDGE} up`);
  }
  return `set -eu
${disableIpv6()}
${SWITCH_WITHOUT_FIREWALL}
ip -batch - <<'EOF'
${batch.join('\n')}
EOF
`;
}

/** Root namespace: the controller's /32 and the one route to the management subnet. */
export function renderRootLinkBatch(plan: LabPlan): string {
  return [
    `address add ${plan.controllerAddress}/32 dev ${plan.rootLink}`,
    `link set ${plan.rootLink} up`,
    `route add ${plan.mgmtSubnet} dev ${plan.rootLink} src ${plan.controllerAddress}`,
    '',
  ].join('\n');
}

/**
 * Runs in the root namespace and brings one host up: its host key (written before the overlay is
 * mounted — an upper layer is never written behind a mounted overlay's back), its mount and UTS
 * namespaces, then its boot inside them.
 */
export function renderHostStartScript(plan: LabPlan, host: LabHost, sshd: string): string {
  const p = hostPaths(plan.name, host.id);
  const key = `${p.upper}${HOST_KEY_VIEW_PATH}`;
  return `set -eu
ssh-keygen -q -t ed25519 -N '' -C ${shellQuote(`root@${host.name}`)} -f ${shellQuote(key)}
unshare ${shellQuote(`--mount=${p.mountNs}`)} ${shellQuote(`--uts=${p.utsNs}`)} --propagation private sh -euc ${shellQuote(renderMountScript(plan, host))}
${shellCommand(enterArgs(plan.name, host.id))} sh -euc ${shellQuote(renderBootScript(plan, host, host.suite !== undefined ? SUITE_SSHD : sshd))}
`;
}

/** Where Debian's openssh-server puts sshd, in every suite's root. */
const SUITE_SSHD = '/usr/sbin/sshd';

/** `nsenter` into a host: its mount, UTS and network namespaces. */
export function enterArgs(lab: string, id: number): string[] {
  const p = hostPaths(lab, id);
  return ['nsenter', `--mount=${p.mountNs}`, `--uts=${p.utsNs}`, `--net=${p.netNs}`, '--'];
}

/**
 * Inside the host's new mount namespace (still the machine's network). It first drops its copies
 * of namespace files — other hosts' and other labs' — since a copy keeps that namespace, and with it
 * a lab's links and routes, alive after `lab down`. Then /etc becomes an overlay whose network-
 * manager trees hold only this host's files, and /root, /run and node_exporter's textfile
 * directory become the host's own. A host on a suite gets its whole root instead (suiteMounts).
 */
export function renderMountScript(plan: LabPlan, host: LabHost): string {
  const p = hostPaths(plan.name, host.id);
  if (host.suite !== undefined) return suiteMounts(plan, host);
  return `up=${shellQuote(p.upper)}
awk ${shellQuote(namespaceFileMounts())} /proc/self/mountinfo | xargs -r umount -l 2>/dev/null || true
echo ${shellQuote(host.name)} > /proc/sys/kernel/hostname
mount -t overlay ibfleet-lab -o ${shellQuote(`lowerdir=/etc,upperdir=${p.upper}/etc,workdir=${p.work}`)} /etc
${PRUNE}
prune_trees ''
mount --bind ${shellQuote(p.root)} /root
# node_exporter's textfile directory (Debian's prometheus-node-exporter) is the host's own, where the
# machine has one: what a host writes there (ibfleet's monitor: prometheus) never reaches the machine.
if [ -d /var/lib/prometheus ]; then
	mount -t tmpfs -o mode=0755,size=1m ibfleet-lab-prometheus /var/lib/prometheus
	mkdir -m 0755 /var/lib/prometheus/node-exporter
fi
${labBinMount(plan, host, '')}${nmStateMount(plan, host, '')}${renderSystemdMounts(p.run, host)}# Last: the lab's paths under the machine's /run are out of sight after it.
mount --bind ${shellQuote(p.run)} /run
`;
}

/**
 * A host on a Debian suite: an overlay of the suite's cached root (read-only below, the host's own
 * directory above — the same upper layer that holds its /etc files) becomes the host's `/` by
 * pivot_root, and the machine's tree is detached from the namespace altogether, so every program
 * the host runs — its managers, sshd, python3, mount — is the suite's. The lab's pieces are laid in
 * before the pivot, while the machine's paths are still in sight.
 */
function suiteMounts(plan: LabPlan, host: LabHost): string {
  const p = hostPaths(plan.name, host.id);
  // A plain absolute path (roots.ts checks $IBFLEET_LAB_ROOTS): safe inside the quotes below.
  const root = suiteRoot(plan.rootsDir ?? DEFAULT_ROOTS_DIR, host.suite!);
  return `up=${shellQuote(p.upper)}
R=${shellQuote(p.newRoot)}
echo ${shellQuote(host.name)} > /proc/sys/kernel/hostname
mount -t overlay ibfleet-lab-root -o "lowerdir=${root},upperdir=$up,workdir=${p.work}" "$R"
${PRUNE}
prune_trees "$R"
mount --bind ${shellQuote(p.root)} "$R/root"
mount -t proc proc "$R/proc"
mount --rbind /dev "$R/dev"
${labBinMount(plan, host, '"$R"')}${nmStateMount(plan, host, '"$R"')}mount --bind ${shellQuote(p.run)} "$R/run"
# The suite's tree becomes / (put_old on top of it, then detached: nothing of the machine stays).
cd "$R"
pivot_root . .
umount -l .
cd /
${renderSystemdMounts('/run', host)}`;
}

/** Removes, under the root $1, whatever of MANAGED_TREES and the host keys the host's upper layer does not hold. */
const PRUNE = `# Keep only what the upper layer (this host's files) holds.
prune() {
	if [ ! -e "$up\${1#"$R"}" ] && [ ! -L "$up\${1#"$R"}" ]; then rm -rf -- "$1"; return 0; fi
	if [ -d "$1" ] && [ ! -L "$1" ]; then
		for f in "$1"/* "$1"/.[!.]* "$1"/..?*; do
			if [ -e "$f" ] || [ -L "$f" ]; then prune "$f"; fi
		done
	fi
	return 0
}
prune_trees() {
	R=$1
	for t in ${MANAGED_TREES.map((t) => `"$R"${shellQuote(t)}`).join(' ')} "$R"/etc/ssh/ssh_host_*; do
		if [ -e "$t" ] || [ -L "$t" ]; then prune "$t"; fi
	done
}`;

/**
 * The host's /usr/bin as the lab shapes it, an overlay over the real one: rping and ibv_devinfo, the
 * lab's stand-ins, on the PATH of an RDMA host alone; and tools the host lacks hidden by whiteouts
 * (character devices 0/0, which overlayfs honours in any lower layer) — python3 on a host brought up
 * --without-python3, and fping on every host but those --with-fping (most machines do not have it):
 * what verify's prober finds is what the host would have.
 */
function labBinMount(plan: LabPlan, host: LabHost, root: string): string {
  const hidden = [...(host.python3 === false ? ['python3', 'python3.*'] : []), ...(host.fping ? [] : ['fping'])];
  const hideDir = `${hostPaths(plan.name, host.id).dir}/hidden-bin`;
  const layers = [...(hidden.length ? [hideDir] : []), ...(host.rdma !== false ? [`${plan.dir}/bin`] : [])];
  if (layers.length === 0) return '';
  const whiteouts = hidden.length
    ? `mkdir -p ${shellQuote(hideDir)}
# shellcheck disable=SC2043
for f in ${hidden.map((name) => `${root}/usr/bin/${name}`).join(' ')}; do
	if [ -e "$f" ] || [ -L "$f" ]; then [ -e ${shellQuote(hideDir)}/"\${f##*/}" ] || mknod ${shellQuote(hideDir)}/"\${f##*/}" c 0 0; fi
done
`
    : '';
  return `# /usr/bin as this host has it: the lab's stand-ins (src/lab/rping-standin.py, ibv-devinfo-standin.ts) on an RDMA host, tools it lacks hidden.
${whiteouts}mount -t overlay ibfleet-lab-bin -o "ro,lowerdir=${layers.join(':')}:${root}/usr/bin" ${root}/usr/bin
`;
}

/** NetworkManager's state (timestamps, secret key) is the host's own. */
function nmStateMount(plan: LabPlan, host: LabHost, root: string): string {
  if (host.manager !== 'networkmanager' || !plan.networkDaemons) return '';
  return `mount --bind ${shellQuote(hostPaths(plan.name, host.id).nmState)} ${root}/var/lib/NetworkManager
`;
}

/**
 * Whether systemd runs, as the host shows it (docs/lab-internals.md: the stand-ins): a host that emulates systemd
 * gets the lab's systemctl over the real one (after the /usr/bin overlay, or that would hide it),
 * and its network boot makes /run/systemd/system as systemd does; a host without gets a PID 1 that
 * is not systemd, whatever the machine's PID 1 is, and keeps the real systemctl, which answers
 * `offline`.
 */
function renderSystemdMounts(run: string, host: LabHost): string {
  const onMachine = (viewPath: string) => shellQuote(`${run}${viewPath.slice('/run'.length)}`);
  if (!runsSystemd(host)) return `mount --bind ${onMachine(PID1_COMM_PATH)} /proc/1/comm\n`;
  return `mount --bind ${onMachine(SYSTEMCTL_STANDIN_PATH)} "$(readlink -f "$(command -v systemctl)")"\n`;
}

/**
 * An awk program printing the mounts to detach from a new host's mount namespace: /run/netns and
 * every lab's private bind as whole trees, plus any other namespace file. Whole trees, because each
 * unmount waits for an RCU grace period: one per tree keeps booting 254 hosts linear, where one per
 * namespace file (~255 per host) made it quadratic.
 */
function namespaceFileMounts(): string {
  return `{ for (i = 7; i <= NF; i++) if ($i == "-") { n++; mp[n] = $5; fs[n] = $(i + 1); mounted[$5] = 1; break } }
END {
	for (k = 1; k <= n; k++) {
		m = mp[k]
		if (m == "${NETNS_DIR}" || m ~ "^${LAB_ROOT}/[^/]+$") { print m; continue }
		if (fs[k] != "nsfs") continue
		if (m ~ "^${NETNS_DIR}/" && mounted["${NETNS_DIR}"]) continue
		if (m ~ "^${LAB_ROOT}/[^/]+/") { split(m, part, "/"); if (mounted["${LAB_ROOT}/" part[4]]) continue }
		print m
	}
}`;
}

/**
 * Inside all of the host's namespaces, once at `lab up`: its own sysfs (read-only, so NetworkManager
 * and systemd-networkd treat udev as absent instead of waiting for it to initialise every device;
 * and mounted in the host's network namespace, so /sys/class/net lists the host's links), the
 * management link the lab configures itself (no manager touches it), sshd, then the network boot.
 */
export function renderBootScript(plan: LabPlan, host: LabHost, sshd: string): string {
  const batch = [
    'link set lo up',
    `address add ${host.address}/${plan.mgmtPrefixLength} dev ${MGMT_IFACE}`,
    `link set ${MGMT_IFACE} up`,
    `route add ${plan.controllerAddress}/32 dev ${MGMT_IFACE}`,
  ];
  // The emulated RDMA devices (rdma-emulation.ts) lie over it, read-only as well.
  const rdma =
    host.rdma !== false ? `\nmount -t overlay ibfleet-lab-sys -o ro,lowerdir=${HOST_BOOT_DIR}/sys:/sys /sys` : '';
  // A RoCE host's RDMA CM configfs, writable (default_roce_mode), over the read-only sysfs.
  const configfs =
    host.rdma !== false && isRoce(host) ? `\nmount --bind ${HOST_BOOT_DIR}/${CONFIGFS_DIR} /sys/kernel/config` : '';
  return `mount -t sysfs -o ro,nosuid,nodev,noexec sysfs /sys${rdma}${configfs}
${disableIpv6()}
ip -batch - <<'EOF'
${batch.join('\n')}
EOF
${shellQuote(sshd)} -f /etc/ssh/sshd_config -E /run/sshd.log
${renderNetworkBootScript(plan, host)}`;
}

/** Lists a hook directory as `name uid gid mode type` lines, following symlinks as the dispatchers do. */
export function renderListHooksScript(dir: string): string {
  return `[ -d ${shellQuote(dir)} ] || exit 0
find -L ${shellQuote(dir)} -mindepth 1 -maxdepth 1 -printf '%f\\t%U\\t%G\\t%m\\t%y\\n'
`;
}
