/**
 * The read-only probe: one POSIX sh script that prints, in marked sections, everything deploy,
 * status and rollback decide from — OS release, interfaces and addresses, rules, the fabric
 * tables, `ip route get` per NIC, sysctls, ibfleet's files, and the evidence of which network
 * manager configures the fabric NICs. Parsing lives in src/plan/facts.ts.
 */
import { deriveNicAddress } from '../inventory/derive.js';
import { MANAGERS, type Fleet, type Host } from '../inventory/model.js';
import { HOOK_PATHS, ROUTING_SCRIPT_PATH, SYSCTL_PATH } from './paths.js';
import { SYSCTL_KEYS } from './routing-script.js';
import { shellQuote } from './shell.js';

export const SECTION_MARK = '@@ibfleet';

/** Every path whose state ibfleet tracks on a host: its own files and every manager's hook. */
export const TRACKED_PATHS: readonly string[] = [ROUTING_SCRIPT_PATH, ...MANAGERS.map((m) => HOOK_PATHS[m]), SYSCTL_PATH];

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

export function renderProbeBody(host: Host, fleet: Fleet): string {
  const tables = host.nics.map((n) => `s route ${n.table}; ip -4 route show table ${n.table} 2>/dev/null`);
  const routeGets = host.nics.map(
    (n) => `s route-get ${shellQuote(n.iface)}; ip -4 route get ${probePeerAddress(fleet, host, n.index)} from ${n.address} 2>&1`,
  );
  const sysctls = ['all', 'default', ...host.nics.map((n) => n.iface)].map(
    (iface) =>
      `s sysctl ${shellQuote(iface)}; for k in ${SYSCTL_KEYS.join(' ')}; do printf '%s=%s\\n' "$k" "$(cat /proc/sys/net/ipv4/conf/${shellQuote(iface)}/"$k" 2>/dev/null)"; done`,
  );
  const files = TRACKED_PATHS.map((p) => `s file ${shellQuote(p)}; filefact ${shellQuote(p)}`);
  return [
    `s() { printf '${SECTION_MARK} %s\\n' "$*"; }`,
    'filefact() {',
    '\tif [ -f "$1" ]; then',
    '\t\tprintf \'%s %s\\n\' "$(stat -c \'%a %u\' "$1")" "$(sha256sum <"$1" | cut -d\' \' -f1)"',
    '\telse',
    '\t\techo missing',
    '\tfi',
    '}',
    's probe 1',
    's uid; id -u',
    's os; cat /etc/os-release 2>/dev/null',
    's links; ip -o link show',
    's addrs; ip -o -4 addr show',
    's rules; ip -4 rule show',
    's route main; ip -4 route show table main',
    ...tables,
    ...routeGets,
    ...sysctls,
    ...files,
    "s netplan; for f in /lib/netplan/*.yaml /etc/netplan/*.yaml /run/netplan/*.yaml; do [ -f \"$f\" ] && printf '#file %s\\n' \"$f\" && cat \"$f\"; done",
    "s nm-connections; grep -s -H -E '^[[:space:]]*interface-name[[:space:]]*=' /etc/NetworkManager/system-connections/* /run/NetworkManager/system-connections/*",
    "s ifcfg; grep -s -H -E '^DEVICE=' /etc/sysconfig/network-scripts/ifcfg-*",
    "s ifupdown; for f in /etc/network/interfaces /etc/network/interfaces.d/*; do [ -f \"$f\" ] && grep -H -E '^[[:space:]]*(auto|allow-[a-z-]+|iface)[[:space:]]' \"$f\"; done",
    `s runtime; for d in ${EVIDENCE_DIRS.join(' ')}; do [ -d "$d" ] && echo "dir $d"; done; for f in /run/network/ifstate*; do [ -f "$f" ] && echo "ifstate $f $(tr '\\n' ' ' <"$f")"; done`,
    's tools; for t in flock sha256sum stat networkd-dispatcher NetworkManager nmcli ifup; do command -v "$t" >/dev/null 2>&1 && echo "$t"; done',
    's end',
  ].join('\n');
}

/** The probe as a standalone script. */
export function renderProbeScript(host: Host, fleet: Fleet): string {
  return ['set -u', 'export LC_ALL=C PATH=/usr/sbin:/usr/bin:/sbin:/bin', renderProbeBody(host, fleet), ''].join('\n');
}
