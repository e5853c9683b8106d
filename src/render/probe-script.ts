/**
 * The read-only probe: one POSIX sh script that prints, in marked sections, everything deploy,
 * status and rollback decide from — OS release, interfaces and addresses, rules, the fabric
 * tables, `ip route get` per NIC, sysctls, ibfleet's files, the evidence of which network
 * manager configures the fabric NICs, and where NetworkManager runs, its version and the active
 * connection profile of each fabric NIC with its routing properties. Parsing lives in src/plan/facts.ts.
 */
import { deriveNicAddress } from '../inventory/derive.js';
import { MANAGERS, type Fleet, type Host } from '../inventory/model.js';
import { renderNmProbe } from './native-nm.js';
import { HOOK_PATHS, NETPLAN_FILE_PATH, OWNED_PATH, REPAIR_PATHS, ROUTING_SCRIPT_PATH, SYSCTL_PATH } from './paths.js';
import { renderRdmaProbe } from './probe-rdma.js';
import { REPAIR_TIMER_UNIT } from './repair.js';
import { SYSCTL_KEYS } from './routing-script.js';
import { renderTakeLock, type LockKind } from './host-lock.js';
import { receivedWhole, shellQuote } from './shell.js';
import { SYSTEMD_RUNS_FUNCTION } from './systemd.js';

export const SECTION_MARK = '@@ibfleet';
/** The probe's last line: once it is out, the facts are complete and a change can be decided. */
export const PROBE_END = `${SECTION_MARK} end`;
/** Probe output format: 3 prints file contents line by line behind CONTENT_PREFIX. */
export const PROBE_VERSION = 3;
/** The neighbour table's garbage-collection thresholds (net.ipv4.neigh.default.*), read by the probe. */
export const NEIGH_KEYS = ['gc_thresh1', 'gc_thresh2', 'gc_thresh3'] as const;
/** Marks a line of a file's content in the probe's output (version 3 on). */
export const CONTENT_PREFIX = '|';

/** Every path whose state ibfleet tracks on a host: its own files and every manager's hook. */
export const TRACKED_PATHS: readonly string[] = [ROUTING_SCRIPT_PATH, ...MANAGERS.map((m) => HOOK_PATHS[m]), ...REPAIR_PATHS, NETPLAN_FILE_PATH, SYSCTL_PATH, OWNED_PATH];

/** A fabric address that is not this host's, for `ip route get` (no packet is sent). */
export function probePeerAddress(fleet: Fleet, host: Host, nicIndex: number): string {
  return deriveNicAddress(fleet.fabric.subnet, host.id === 1 ? 2 : 1, nicIndex);
}

/** Evidence dirs: runtime state of each manager, and the dirs their hooks live in. */
export const EVIDENCE_DIRS = [
  '/run/NetworkManager',
  '/run/systemd/netif',
  '/run/systemd/system',
  '/etc/networkd-dispatcher',
  '/etc/networkd-dispatcher/routable.d',
  '/etc/NetworkManager/dispatcher.d',
  '/etc/network/if-up.d',
] as const;

/**
 * Every process the probe starts costs the host a fork and an exec (about a millisecond each on a
 * small machine, and a fleet command pays it per host), so the probe reads files and sysctls with
 * the shell's own `read`, asks iproute2 everything in one `ip -batch`, checksums the files in one
 * `sha256sum`, and greps every manager's configuration in one `grep`. Its output is collected and
 * written at once: one SSH packet instead of one per line.
 */
export interface ProbeOptions {
  /**
   * Netplan files and the managers' configuration, read to decide which manager a host uses. The
   * probe an apply script runs after its change leaves them out: the change does not touch them,
   * and verification does not read them.
   */
  readonly managerEvidence: boolean;
  /**
   * The sysctls of every interface the host has, not only of the inventory's names for its NICs:
   * onboard probes a machine before it knows what its interfaces are called, and plans the deploy
   * from that same probe.
   */
  readonly everyInterface?: boolean;
  /**
   * The whole text of ibfleet's files on the host, for `status --diff` / `render --diff`. Without
   * it the probe reads only each file's first lines: the header names the host and the ibfleet
   * version it was generated for, which tells a renamed host's file from a hand edit.
   */
  readonly fileContents?: boolean;
  /**
   * The fabric's RDMA ports (fabric-health) and the neighbour table limits. Default true; the probe
   * closing a change leaves them out: a change touches neither.
   */
  readonly fabric?: boolean;
}

/** Lines of each file's header the probe reads (path, generator line, warning). */
export const HEADER_LINES = 4;
/**
 * The ownership record is read whole, not only its header: what it lists is what the next deploy
 * removes. Ibfleet writes a dozen lines or so; beyond this many a file is no record of ibfleet's
 * (its checksum says so), and a host cannot make the probe print more of it.
 */
export const OWNED_MAX_LINES = 64;

export function renderProbeBody(host: Host, fleet: Fleet, options: ProbeOptions = { managerEvidence: true }): string {
  const gets = host.nics.map((n) => ({ iface: n.iface, peer: probePeerAddress(fleet, host, n.index), from: n.address }));
  const batch = ['link show', 'addr show', 'rule show', 'route show table all', ...gets.map((g) => `route get ${g.peer} from ${g.from}`)];
  // A failed `route get` says why only on stderr, and fails the batch (-force runs the rest): then
  // every `route get` is asked again on its own, its reason kept, in a section that overrides it.
  const routeGetRetries = gets.map((g) => `\t\ts route-get ${shellQuote(g.iface)}; ip -4 route get ${g.peer} from ${g.from} 2>&1`);
  const sysctls = options.everyInterface
    ? [`\tfor d in /proc/sys/net/ipv4/conf/*; do s sysctl "\${d##*/}"; for k in ${SYSCTL_KEYS.join(' ')}; do v=; read -r v 2>/dev/null <"$d/$k"; printf '%s=%s\\n' "$k" "$v"; done; done`]
    : ['all', 'default', ...host.nics.map((n) => n.iface)].map(
        (iface) =>
          `\ts sysctl ${shellQuote(iface)}; for k in ${SYSCTL_KEYS.join(' ')}; do v=; read -r v 2>/dev/null <${shellQuote(`/proc/sys/net/ipv4/conf/${iface}/`)}"$k"; printf '%s=%s\\n' "$k" "$v"; done`,
      );
  const configFiles = [
    '/etc/NetworkManager/system-connections/*',
    '/run/NetworkManager/system-connections/*',
    '/etc/sysconfig/network-scripts/ifcfg-*',
    '/etc/network/interfaces',
    '/etc/network/interfaces.d/*',
  ];
  return [
    `s() { printf '${SECTION_MARK} %s\\n' "$*"; }`,
    '# rd FILE [MAX]: print a text file (its first MAX lines) with the shell alone (no cat), ending its last',
    `# line, each line behind ${CONTENT_PREFIX} so that no line of the file can pass for one of the probe's own (a section mark, #file).`,
    'rd() {',
    '\t[ -f "$1" ] && [ -r "$1" ] || return 0',
    '\tn=0',
    `\twhile [ "$n" -lt "\${2:-1000000000}" ] && { IFS= read -r l || [ -n "$l" ]; }; do printf '${CONTENT_PREFIX}%s\\n' "$l"; n=$((n + 1)); done <"$1"`,
    '}',
    SYSTEMD_RUNS_FUNCTION,
    'probe_output=$(',
    `\ts probe ${PROBE_VERSION}`,
    '\ts uid; while read -r k _ e _; do [ "$k" = Uid: ] && { echo "$e"; break; }; done </proc/self/status',
    // The machine's own name: onboard writes it to the inventory unless told another.
    `\ts hostname; rd /proc/sys/kernel/hostname`,
    '\ts os; rd /etc/os-release',
    '\ts ip; ip -o -4 -force -batch - <<\'IBFLEET_IP\'',
    ...batch,
    'IBFLEET_IP',
    '\tip_status=$?',
    `\ts route-get-from; printf '%s\\n' ${gets.map((g) => shellQuote(`${g.iface} ${g.peer} ${g.from}`)).join(' ')}`,
    '\tif [ "$ip_status" -ne 0 ]; then',
    ...routeGetRetries,
    '\tfi',
    ...sysctls,
    ...(options.fabric === false ? [] : [
    // One grep: the shell's read takes a byte at a time, and /proc/sys answers only the first.
    `\ts neigh; grep -s -H . ${NEIGH_KEYS.map((k) => `/proc/sys/net/ipv4/neigh/default/${k}`).join(' ')}`,
    ...renderRdmaProbe(host, options.everyInterface ? undefined : host.nics.map((n) => n.iface))]),
    '\tset --',
    `\tfor p in ${TRACKED_PATHS.map(shellQuote).join(' ')}; do [ -f "$p" ] && set -- "$@" "$p"; done`,
    '\ts files; if [ "$#" -gt 0 ]; then stat -c \'%a %u %n\' -- "$@"; sha256sum -- "$@"; fi',
    options.fileContents
      ? '\tfor p in "$@"; do s content "$p"; rd "$p"; done'
      : `\tfor p in "$@"; do if [ "$p" = ${shellQuote(OWNED_PATH)} ]; then s content "$p"; rd "$p" ${OWNED_MAX_LINES}; else s head "$p"; rd "$p" ${HEADER_LINES}; fi; done`,
    ...(options.managerEvidence
      ? [
          '\ts netplan; for f in /lib/netplan/*.yaml /etc/netplan/*.yaml /run/netplan/*.yaml; do [ -f "$f" ] && printf \'#file %s\\n\' "$f" && rd "$f"; done',
          '\tset --',
          `\tfor f in ${configFiles.join(' ')}; do [ -f "$f" ] && set -- "$@" "$f"; done`,
          "\ts config; if [ \"$#\" -gt 0 ]; then grep -s -H -E '^[[:space:]]*interface-name[[:space:]]*=|^DEVICE=|^[[:space:]]*(auto|allow-[a-z-]+|iface)[[:space:]]' -- \"$@\"; fi",
        ]
      : []),
    ...renderNmProbe(host),
    `\ts runtime; for d in ${EVIDENCE_DIRS.join(' ')}; do [ -d "$d" ] && echo "dir $d"; done`,
    // Whether systemd runs (render/systemd.ts), and only where it does, whether the repair timer is active.
    `\tif systemd_runs; then echo 'systemd yes'; echo "repair-timer $(systemctl is-active ${REPAIR_TIMER_UNIT} 2>/dev/null)"; else echo 'systemd no'; fi`,
    '\tfor f in /run/network/ifstate*; do [ -f "$f" ] || continue; v=; while IFS= read -r l || [ -n "$l" ]; do v="$v$l "; done <"$f"; echo "ifstate $f $v"; done',
    '\ts tools; for t in flock sha256sum stat networkd-dispatcher NetworkManager nmcli ifup netplan networkctl ping rping; do command -v "$t" >/dev/null 2>&1 && echo "$t"; done',
    '\ts end',
    ')',
    'printf \'%s\\n\' "$probe_output"',
  ].join('\n');
}

/**
 * The probe as a standalone script (run whole or not at all). With `lock` it first takes the host
 * lock, waiting that long for another run to finish, and the shell keeps it for the change that
 * follows in the same conversation (deploy, rollback); status and dry runs take no lock.
 */
export function renderProbeScript(host: Host, fleet: Fleet, options: Partial<ProbeOptions> & { lock?: { kind: LockKind; waitSeconds: number; runId: string } } = {}): string {
  const { lock, ...probe } = options;
  const takeLock = lock === undefined ? [] : [renderTakeLock(lock.kind, lock.waitSeconds, lock.runId)];
  return receivedWhole('__ibfleet_probe_main', ['set -u', 'export LC_ALL=C PATH=/usr/sbin:/usr/bin:/sbin:/bin', ...takeLock, renderProbeBody(host, fleet, { managerEvidence: true, ...probe })].join('\n'));
}
