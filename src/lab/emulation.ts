/**
 * What each lab host's own `/etc`, `/run` and `/root` hold: the OS release and network-manager
 * configuration it emulates, its sshd, and the lab key. Pure: the same plan gives the same files
 * (the host key is generated separately by ssh-keygen).
 */
import { createHash } from 'node:crypto';
import type { Manager } from '../inventory/model.js';
import { OWNED_PATHS } from '../steps/registry.js';
import { VERSION } from '../version.js';
import { GID_FOLLOWER_PATH, HOST_BOOT_DIR, TIMER_RUNNER_PATH } from './manager-boot.js';
import { renderGidFollower } from './gid-follower.js';
import { isRoce } from './rdma-emulation.js';
import { renderSystemctlStandIn, SYSTEMCTL_STANDIN_PATH } from './systemctl-standin.js';
import { MGMT_IFACE } from './names.js';
import { renderTimerRunner } from './timer-runner.js';
import { runsSystemd, type LabHost, type LabNic, type LabPlan } from './plan.js';
import { configuredNics, isFresh } from './fresh.js';
import { SUITE_RELEASE, type Suite } from './suites.js';

export interface ViewFile {
  /** Path as the host sees it: under /etc, /run or /root. */
  readonly path: string;
  readonly mode: number;
  readonly content: string;
}

export interface ViewDir {
  readonly path: string;
  readonly mode: number;
}

export interface HostView {
  readonly dirs: readonly ViewDir[];
  readonly files: readonly ViewFile[];
}

interface OsRelease {
  readonly label: string;
  readonly osRelease: string;
  /** /etc/debian_version as that release ships it. */
  readonly debianVersion: string;
  readonly lsbRelease: string | undefined;
}

const ubuntu = (version: string, codename: string, nickname: string, debianVersion: string): OsRelease => ({
  label: `Ubuntu ${version.replace(/\.\d+ LTS$/, '')}`,
  osRelease: [
    'NAME="Ubuntu"',
    `VERSION="${version} (${nickname})"`,
    'ID=ubuntu',
    'ID_LIKE=debian',
    `PRETTY_NAME="Ubuntu ${version}"`,
    `VERSION_ID="${version.slice(0, 5)}"`,
    'HOME_URL="https://www.ubuntu.com/"',
    'SUPPORT_URL="https://help.ubuntu.com/"',
    'BUG_REPORT_URL="https://bugs.launchpad.net/ubuntu/"',
    'PRIVACY_POLICY_URL="https://www.ubuntu.com/legal/terms-and-policies/privacy-policy"',
    `VERSION_CODENAME=${codename}`,
    `UBUNTU_CODENAME=${codename}`,
    '',
  ].join('\n'),
  debianVersion: `${debianVersion}\n`,
  lsbRelease: [
    'DISTRIB_ID=Ubuntu',
    `DISTRIB_RELEASE=${version.slice(0, 5)}`,
    `DISTRIB_CODENAME=${codename}`,
    `DISTRIB_DESCRIPTION="Ubuntu ${version}"`,
    '',
  ].join('\n'),
});

/** The release each manager's host emulates: the seeds' two machines, and a plain Debian for ifupdown. */
export const EMULATED_OS: Readonly<Record<Manager, OsRelease>> = {
  netplan: ubuntu('18.04.6 LTS', 'bionic', 'Bionic Beaver', 'buster/sid'),
  networkmanager: ubuntu('20.04.6 LTS', 'focal', 'Focal Fossa', 'bullseye/sid'),
  ifupdown: {
    label: 'Debian 12',
    osRelease: [
      'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"',
      'NAME="Debian GNU/Linux"',
      'VERSION_ID="12"',
      'VERSION="12 (bookworm)"',
      'VERSION_CODENAME=bookworm',
      'ID=debian',
      'HOME_URL="https://www.debian.org/"',
      'SUPPORT_URL="https://www.debian.org/support"',
      'BUG_REPORT_URL="https://bugs.debian.org/"',
      '',
    ].join('\n'),
    debianVersion: '12.11\n',
    lsbRelease: undefined,
  },
};

/** `Ubuntu 18.04, netplan + networkd-dispatcher` — or, on a suite, the Debian release its root is. */
export function emulationLabel(manager: Manager, systemd = true, fresh = false, suite?: Suite): string {
  const what = { netplan: 'netplan + networkd-dispatcher', networkmanager: 'NetworkManager', ifupdown: 'ifupdown' }[
    manager
  ];
  const os = suite !== undefined ? `${SUITE_RELEASE[suite]} (${suite})` : EMULATED_OS[manager].label;
  return `${os}, ${what}${systemd ? '' : ', no systemd'}${fresh ? ', fresh (NICs unconfigured)' : ''}`;
}

/**
 * The OS files of a host: on a suite its root's own os-release stays (the host is that release), and
 * it gets a machine-id of its own — mmdebstrap leaves the file empty, systemd-networkd 257 refuses
 * to run without one, and on a real fleet no two machines share one. Elsewhere: the release the
 * host's manager emulates.
 */
function osFiles(plan: LabPlan, host: LabHost): ViewFile[] {
  if (host.suite !== undefined) {
    const id = createHash('sha256').update(`ibfleet-lab/${plan.name}/${host.id}`).digest('hex').slice(0, 32);
    return [{ path: '/etc/machine-id', mode: 0o444, content: `${id}\n` }];
  }
  const os = EMULATED_OS[host.manager];
  return [
    { path: '/etc/os-release', mode: 0o644, content: os.osRelease },
    { path: '/etc/debian_version', mode: 0o644, content: os.debianVersion },
    ...(os.lsbRelease ? [{ path: '/etc/lsb-release', mode: 0o644, content: os.lsbRelease }] : []),
  ];
}

/**
 * What PID 1 is called (/proc/1/comm) on a lab host that runs no systemd. Lab hosts share the
 * machine's PID namespace, whose PID 1 may well be systemd; on such a host the lab lays this file
 * over /proc/1/comm, so the host reads as the container it emulates.
 */
export const NO_SYSTEMD_PID1 = 'init';
export const PID1_COMM_PATH = `${HOST_BOOT_DIR}/pid1-comm`;

/** The files that make a host one systemd runs (its systemctl and its timers) or one it does not (its PID 1). */
function systemdFiles(host: LabHost): ViewFile[] {
  if (!runsSystemd(host)) return [{ path: PID1_COMM_PATH, mode: 0o444, content: `${NO_SYSTEMD_PID1}\n` }];
  return [
    { path: TIMER_RUNNER_PATH, mode: 0o755, content: renderTimerRunner() },
    { path: SYSTEMCTL_STANDIN_PATH, mode: 0o755, content: renderSystemctlStandIn() },
  ];
}

/**
 * Trees of the machine's /etc that belong to network managers (or to an earlier ibfleet): inside a
 * host's view they hold exactly what this module renders, nothing of the machine's — a hook or
 * interface stanza of the machine would otherwise run on, or confuse manager detection for, every
 * lab host. Deleting through the overlay leaves whiteouts; the machine's /etc is not touched.
 */
export const MANAGED_TREES: readonly string[] = [
  '/etc/network',
  '/etc/netplan',
  '/etc/NetworkManager',
  '/etc/networkd-dispatcher',
  '/etc/systemd/network',
  // The machine's enabled timers (apt-daily, ...) are not the host's: the lab's timer runner starts
  // what a host enables here, and nothing else.
  '/etc/systemd/system/timers.target.wants',
  '/etc/systemd/system/timers.target.d',
  '/etc/ibfleet',
  // Every file ibfleet may install (the steps' own: repair units, sysctl file, …).
  ...OWNED_PATHS,
];

export const NETWORKD_LAB_UNMANAGED_PATH = `/etc/systemd/network/00-ibfleet-lab-${MGMT_IFACE}.network`;

/** The machine's own SSH host keys: the lab host has its own, generated by `lab up`. */
export const HOST_KEY_VIEW_PATH = '/etc/ssh/ssh_host_ed25519_key';

const NETWORKD_DISPATCHER_STATES = [
  'carrier.d',
  'configured.d',
  'configuring.d',
  'degraded.d',
  'dormant.d',
  'no-carrier.d',
  'off.d',
  'routable.d',
];

function generatedBy(plan: LabPlan, what: string): string {
  return `# ${what}\n# Emulated by ibfleet ${VERSION} lab ${plan.name}; removed by \`ibfleet lab down\`.\n`;
}

/** A stable UUID-shaped id, as NetworkManager writes into keyfiles. */
export function connectionUuid(plan: LabPlan, host: LabHost, nic: LabNic): string {
  const hex = createHash('sha256').update(`${plan.name}/${host.id}/${nic.iface}`).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-8${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/**
 * The server's netplan file lists its management NIC too, as an installer writes it; the lab drops
 * the .network file `netplan generate` makes for it, so systemd-networkd leaves the lab's
 * management link (and with it SSH) alone.
 */
export function renderNetplanNetworkd(plan: LabPlan, host: LabHost): string {
  const ethernets = [
    `    ${MGMT_IFACE}:\n      addresses: [${host.address}/${plan.mgmtPrefixLength}]\n`,
    ...configuredNics(host).map((n) => `    ${n.iface}:\n      addresses: [${n.address}/${n.prefixLength}]\n`),
  ].join('');
  return `${generatedBy(plan, 'Ubuntu 18.04 server: netplan with the networkd renderer configures the IPoIB NICs.')}network:\n  version: 2\n  renderer: networkd\n  ethernets:\n${ethernets}`;
}

/**
 * systemd-networkd applies the first .network file (in lexical order across its directories) that
 * matches a link: this one keeps it away from the management link — the lab's SSH path — whatever
 * a later `netplan generate` writes for that link from the host's netplan file.
 */
export function renderNetworkdLabUnmanaged(plan: LabPlan): string {
  return `${generatedBy(plan, `Lab host: systemd-networkd leaves the management link ${MGMT_IFACE} to the lab.`)}[Match]\nName=${MGMT_IFACE}\n\n[Link]\nUnmanaged=yes\n`;
}

export function renderNetplanNetworkManager(): string {
  return '# Let NetworkManager manage all devices on this system\nnetwork:\n  version: 2\n  renderer: NetworkManager\n';
}

/**
 * A keyfile as Ubuntu's installer and nmcli write one for a static address. The lab's NICs are
 * veth pairs, so the profile is an ethernet one (NetworkManager activates an infiniband profile only
 * on an IPoIB device); what ibfleet cares about — the manager configuring the address and its own
 * main-table route, and dispatching up/down/reapply — is the same for both.
 */
export function renderNmKeyfile(plan: LabPlan, host: LabHost, nic: LabNic): string {
  return [
    '[connection]',
    `id=${nic.iface}`,
    `uuid=${connectionUuid(plan, host, nic)}`,
    'type=ethernet',
    `interface-name=${nic.iface}`,
    'permissions=',
    '',
    '[ethernet]',
    'mac-address-blacklist=',
    '',
    '[ipv4]',
    `address1=${nic.address}/${nic.prefixLength}`,
    'dns-search=',
    'method=manual',
    '',
    '[ipv6]',
    'addr-gen-mode=stable-privacy',
    'dns-search=',
    'method=ignore',
    '',
    '[proxy]',
    '',
  ].join('\n');
}

/** Ubuntu 20.04's /etc/NetworkManager/NetworkManager.conf, byte for byte. */
export function renderNetworkManagerConf(): string {
  return '[main]\nplugins=ifupdown,keyfile\n\n[ifupdown]\nmanaged=false\n\n[device]\nwifi.scan-rand-mac-address=no\n';
}

/**
 * The lab's one addition to NetworkManager's configuration: it manages the fabric NICs only, so the
 * management link (the lab's SSH path) is never touched, and it leaves /etc/resolv.conf alone.
 */
export function renderNetworkManagerLabConf(plan: LabPlan, host: LabHost): string {
  const except = host.nics.map((n) => `except:interface-name:${n.iface}`).join(';');
  // no-auto-default: NetworkManager makes no "Wired connection" for a device without a profile of
  // its own. It makes none for InfiniBand devices anyway; the lab's NICs are veths (Ethernet to it),
  // so without this a fresh host's NICs would be configured by DHCP behind everyone's back.
  return `${generatedBy(plan, `NetworkManager of lab host ${host.id}: manage the fabric NICs, not the management link ${MGMT_IFACE}.`)}[main]\ndns=none\nno-auto-default=*\n\n[keyfile]\nunmanaged-devices=${except}\n`;
}

export function renderInterfaces(plan: LabPlan, host: LabHost): string {
  const stanzas = configuredNics(host).map(
    (n) => `auto ${n.iface}\niface ${n.iface} inet static\n\taddress ${n.address}/${n.prefixLength}\n`,
  );
  return [
    '# interfaces(5) file used by ifup(8) and ifdown(8)',
    generatedBy(
      plan,
      `Debian 12: ifupdown configures ${isFresh(host) ? 'nothing of the IPoIB NICs yet' : 'the IPoIB NICs'}.`,
    ),
    // Debian's own first line: interfaces.d is where packages and tools put their stanzas.
    'source /etc/network/interfaces.d/*\n',
    'auto lo\niface lo inet loopback\n',
    ...stanzas,
  ].join('\n');
}

/**
 * One sshd per host on its management address, key-only root login for the lab key. MaxSessions
 * leaves room for the runner's channels (at most 10 per connection); the log goes to /run so
 * benchmarks can count logins; no PAM, motd or lastlog, so a login costs what sshd itself costs.
 */
export function renderSshdConfig(plan: LabPlan, host: LabHost): string {
  return `${generatedBy(plan, `sshd of lab host ${host.id} (${host.name}).`)}ListenAddress ${host.address}
Port 22
HostKey ${HOST_KEY_VIEW_PATH}
PidFile /run/sshd.pid
LogLevel INFO
PermitRootLogin prohibit-password
PubkeyAuthentication yes
AuthorizedKeysFile .ssh/authorized_keys
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
PrintMotd no
PrintLastLog no
UseDNS no
X11Forwarding no
MaxSessions 32
MaxStartups 64:30:256
LoginGraceTime 30
Subsystem sftp internal-sftp
`;
}

export function renderHostView(plan: LabPlan, host: LabHost, labPublicKey: string): HostView {
  const dirs: ViewDir[] = [
    { path: '/etc/ssh', mode: 0o755 },
    { path: '/root/.ssh', mode: 0o700 },
    { path: '/run/sshd', mode: 0o755 },
    { path: '/run/lock', mode: 0o1777 },
    { path: '/run/network', mode: 0o755 },
    { path: HOST_BOOT_DIR, mode: 0o755 },
  ];
  const files: ViewFile[] = [
    ...osFiles(plan, host),
    { path: '/etc/hostname', mode: 0o644, content: `${host.name}\n` },
    {
      path: '/etc/hosts',
      mode: 0o644,
      content: `127.0.0.1\tlocalhost\n127.0.1.1\t${host.name}\n${host.address}\t${host.name}\n`,
    },
    { path: '/etc/ssh/sshd_config', mode: 0o644, content: renderSshdConfig(plan, host) },
    {
      path: '/root/.ssh/authorized_keys',
      mode: 0o600,
      content: labPublicKey.endsWith('\n') ? labPublicKey : `${labPublicKey}\n`,
    },
    ...systemdFiles(host),
    ...(host.rdma !== false && isRoce(host)
      ? [{ path: GID_FOLLOWER_PATH, mode: 0o755, content: renderGidFollower(host) }]
      : []),
  ];
  switch (host.manager) {
    case 'netplan':
      dirs.push({ path: '/etc/netplan', mode: 0o755 }, { path: '/etc/networkd-dispatcher', mode: 0o755 });
      dirs.push(...NETWORKD_DISPATCHER_STATES.map((d) => ({ path: `/etc/networkd-dispatcher/${d}`, mode: 0o755 })));
      dirs.push({ path: '/etc/systemd/network', mode: 0o755 });
      files.push(
        { path: '/etc/netplan/99-netcfg.yaml', mode: 0o644, content: renderNetplanNetworkd(plan, host) },
        { path: NETWORKD_LAB_UNMANAGED_PATH, mode: 0o644, content: renderNetworkdLabUnmanaged(plan) },
      );
      break;
    case 'networkmanager':
      dirs.push({ path: '/etc/netplan', mode: 0o755 }, { path: '/etc/NetworkManager', mode: 0o755 });
      dirs.push(
        ...[
          'conf.d',
          'dispatcher.d',
          'dispatcher.d/pre-up.d',
          'dispatcher.d/pre-down.d',
          'dispatcher.d/no-wait.d',
          'system-connections',
        ].map((d) => ({ path: `/etc/NetworkManager/${d}`, mode: 0o755 })),
      );
      files.push(
        { path: '/etc/netplan/01-network-manager-all.yaml', mode: 0o644, content: renderNetplanNetworkManager() },
        { path: '/etc/NetworkManager/NetworkManager.conf', mode: 0o644, content: renderNetworkManagerConf() },
        {
          path: '/etc/NetworkManager/conf.d/90-ibfleet-lab.conf',
          mode: 0o644,
          content: renderNetworkManagerLabConf(plan, host),
        },
        ...configuredNics(host).map((n) => ({
          path: `/etc/NetworkManager/system-connections/${n.iface}.nmconnection`,
          mode: 0o600,
          content: renderNmKeyfile(plan, host, n),
        })),
      );
      break;
    case 'ifupdown':
      dirs.push({ path: '/etc/network', mode: 0o755 });
      dirs.push(
        ...['if-pre-up.d', 'if-up.d', 'if-down.d', 'if-post-down.d', 'interfaces.d'].map((d) => ({
          path: `/etc/network/${d}`,
          mode: 0o755,
        })),
      );
      files.push({ path: '/etc/network/interfaces', mode: 0o644, content: renderInterfaces(plan, host) });
      break;
  }
  return { dirs, files };
}
