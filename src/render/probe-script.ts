/**
 * The read-only probe: one POSIX sh script that prints, in marked sections, everything deploy,
 * status and rollback decide from — OS release, interfaces and addresses, rules, the fabric
 * tables, `ip route get` per NIC, sysctls, ibfleet's files, the evidence of which network
 * manager configures the fabric NICs, and where NetworkManager runs, its version and the active
 * connection profile of each fabric NIC with its routing properties — and the facts the steps declare
 * (src/steps/registry.ts). Parsing lives in src/facts/.
 */
import type { ProbeOptions } from '../facts/fact.js';
import { renderNmProbe } from '../facts/nm-facts.js';
import { CONTENT_PREFIX, HEADER_LINES, PROBE_VERSION, SECTION_MARK } from '../facts/probe-format.js';
import { renderRdmaProbe } from '../facts/rdma-probe.js';
import { deriveNicAddress } from '../inventory/derive.js';
import type { Fleet, Host } from '../inventory/model.js';
import { hostScript } from '../script/host-functions.js';
import { shellQuote } from '../script/shell.js';
import { OWNED_PATHS, STEP_FACTS } from '../steps/registry.js';
import { obstacleProbe, type WriteTargets } from '../facts/obstacles.js';
import { renderTakeLock, type LockKind } from './host-lock.js';

export { PROBE_END } from '../facts/probe-format.js';
export type { ProbeOptions } from '../facts/fact.js';

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
 * Where ibfleet may write, whatever the playbook: its files, and the directories they and their
 * staged copies (a hook's, one directory up) live in — the probe says what stands in the way there.
 */
const parent = (p: string) => p.replace(/\/[^/]+$/, '');
export const WRITE_TARGETS: WriteTargets = {
  files: OWNED_PATHS,
  dirs: [...new Set(OWNED_PATHS.flatMap((p) => [parent(p), parent(parent(p))]))].sort(),
};

/**
 * Every process the probe starts costs the host a fork and an exec (about a millisecond each on a
 * small machine, and a fleet command pays it per host), so the probe reads files and sysctls with
 * the shell's own `read`, asks iproute2 everything in one `ip -batch`, checksums the files in one
 * `sha256sum`, and greps every manager's configuration in one `grep`. Its output is collected and
 * written at once: one SSH packet instead of one per line.
 */
export function renderProbeBody(host: Host, fleet: Fleet, options: ProbeOptions = { managerEvidence: true }): string {
  const gets = host.nics.map((n) => ({
    iface: n.iface,
    peer: probePeerAddress(fleet, host, n.index),
    from: n.address,
  }));
  const batch = [
    'link show',
    'addr show',
    'rule show',
    'route show table all',
    ...gets.map((g) => `route get ${g.peer} from ${g.from}`),
  ];
  // A failed `route get` says why only on stderr, and fails the batch (-force runs the rest): then
  // every `route get` is asked again on its own, its reason kept, in a section that overrides it.
  // The batch's own stderr is dropped: `Command failed -:6` for a NIC without its address yet (every
  // fresh host) would otherwise be the last thing a change printed, quoted in place of a tool's words.
  const routeGetRetries = gets.map(
    (g) => `\t\ts route-get ${shellQuote(g.iface)}; ip -4 route get ${g.peer} from ${g.from} 2>&1`,
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
    '# rd FILE: print a text file with the shell alone (no cat), ending its last line, each line behind',
    `# ${CONTENT_PREFIX} so that no line of the file can pass for one of the probe's own (a section mark, #file).`,
    'rd() {',
    '\t[ -f "$1" ] && [ -r "$1" ] || return 0',
    `\twhile IFS= read -r l || [ -n "$l" ]; do printf '${CONTENT_PREFIX}%s\\n' "$l"; done <"$1"`,
    '}',
    'probe_output=$(',
    `\ts probe ${PROBE_VERSION}`,
    '\ts uid; while read -r k _ e _; do [ "$k" = Uid: ] && { echo "$e"; break; }; done </proc/self/status',
    // The machine's own name: onboard writes it to the inventory unless told another.
    `\ts hostname; rd /proc/sys/kernel/hostname`,
    '\ts os; rd /etc/os-release',
    "\ts ip; ip -o -4 -force -batch - 2>/dev/null <<'IBFLEET_IP'",
    ...batch,
    'IBFLEET_IP',
    '\tip_status=$?',
    `\ts route-get-from; printf '%s\\n' ${gets.map((g) => shellQuote(`${g.iface} ${g.peer} ${g.from}`)).join(' ')}`,
    '\tif [ "$ip_status" -ne 0 ]; then',
    ...routeGetRetries,
    '\tfi',
    ...STEP_FACTS.flatMap((fact) => fact.probe(host, options)),
    ...(options.fabric === false
      ? []
      : renderRdmaProbe(host, options.everyInterface ? undefined : host.nics.map((n) => n.iface))),
    '\tset --',
    `\tfor p in ${OWNED_PATHS.map(shellQuote).join(' ')}; do [ -f "$p" ] && set -- "$@" "$p"; done`,
    ...obstacleProbe(WRITE_TARGETS),
    '\ts files; if [ "$#" -gt 0 ]; then stat -c \'%a %u %F|%n\' -- "$@"; sha256sum -- "$@"; fi',
    options.fileContents
      ? '\tfor p in "$@"; do s content "$p"; rd "$p"; done'
      : `\tfor p in "$@"; do s head "$p"; n=0; [ -r "$p" ] && while [ "$n" -lt ${HEADER_LINES} ] && IFS= read -r l; do printf '${CONTENT_PREFIX}%s\\n' "$l"; n=$((n + 1)); done <"$p"; done`,
    ...(options.managerEvidence
      ? [
          '\ts netplan; for f in /lib/netplan/*.yaml /etc/netplan/*.yaml /run/netplan/*.yaml; do [ -f "$f" ] && printf \'#file %s\\n\' "$f" && rd "$f"; done',
          '\tset --',
          `\tfor f in ${configFiles.join(' ')}; do [ -f "$f" ] && set -- "$@" "$f"; done`,
          '\ts config; if [ "$#" -gt 0 ]; then grep -s -H -E \'^[[:space:]]*interface-name[[:space:]]*=|^DEVICE=|^[[:space:]]*(auto|allow-[a-z-]+|iface)[[:space:]]\' -- "$@"; fi',
        ]
      : []),
    ...renderNmProbe(host),
    `\ts runtime; for d in ${EVIDENCE_DIRS.join(' ')}; do [ -d "$d" ] && echo "dir $d"; done`,
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
export function renderProbeScript(
  host: Host,
  fleet: Fleet,
  options: Partial<ProbeOptions> & { lock?: { kind: LockKind; waitSeconds: number; runId: string } } = {},
): string {
  const { lock, ...probe } = options;
  const takeLock = lock === undefined ? [] : [renderTakeLock(lock.kind, lock.waitSeconds, lock.runId)];
  return hostScript(
    '__ibfleet_probe_main',
    [
      'set -u',
      'export LC_ALL=C PATH=/usr/sbin:/usr/bin:/sbin:/bin',
      ...takeLock,
      renderProbeBody(host, fleet, { managerEvidence: true, ...probe }),
    ].join('\n'),
  );
}
