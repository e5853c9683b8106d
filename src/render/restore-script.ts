/**
 * The restore a deploy sends when a host fails verification after its change (nmstate's
 * verify-and-rollback, netplan try): everything the change can touch goes back to what the probe
 * saw before it — the NICs' connection profiles where the change set them (native persistence),
 * their source rules, their tables, the fabric routes of the main table (in their order), their
 * sysctls, ibfleet's files (from the copies the change kept under
 * PREVIOUS_DIR, checked against the checksums probed before) and the directories the change
 * created. Every step is unconditional and idempotent: the restore needs no trust in what the
 * change left. Pure; the state comes as the text the probe read (plan/restore.ts), and since that
 * text comes from the host, every word of it is shell-quoted.
 */
import type { Fleet, Host } from '../inventory/model.js';
import { afterProbe, finishLine, renderPrelude } from './apply-script.js';
import { REPAIR_PATHS, REPAIR_TIMER_PATH } from './paths.js';
import { REPAIR_TIMER_UNIT } from './repair.js';
import { renderNativeSteps, TAKE_ROUTING_LOCK, type NativeSteps } from './native-apply.js';
import { receivedWhole, shellQuote } from './shell.js';

export interface RestoreSpec {
  /** Rules whose source is a NIC's address or whose table is a NIC's, as `ip rule` printed them before. */
  readonly rules: readonly { readonly priority: number; readonly text: string }[];
  /** Per NIC table: its routes before, as `ip route show table T` printed them. */
  readonly tables: readonly { readonly table: number; readonly routes: readonly string[] }[];
  /** Main-table routes to the fabric subnet through a fabric NIC, in the kernel's order before. */
  readonly mainRoutes: readonly string[];
  /** Per NIC: the sysctl values before (only those read as numbers). */
  readonly sysctls: readonly { readonly iface: string; readonly key: string; readonly value: string }[];
  /** ibfleet's tracked files: their state before (null: absent). */
  readonly files: readonly { readonly path: string; readonly before: { readonly mode: number; readonly sha256: string } | null }[];
  /** Directories the change created, parents first. */
  readonly createdDirs: readonly string[];
  /** What the network manager is told: the connection profiles the change changed, back as they were; networkd reloaded after a netplan file went back. */
  readonly native?: NativeSteps | undefined;
}

/** Words `ip` prints about a route or rule but does not take back as input. */
const PRINT_ONLY = new Set(['linkdown', 'dead', 'offload', 'trap', 'offload_failed', 'rt_offload', 'rt_trap', 'rt_offload_failed', 'pervasive', 'notify', '[detached]', 'unresolved']);

function words(text: string): string {
  return text
    .split(/\s+/)
    .filter((w) => w !== '' && !PRINT_ONLY.has(w))
    .map(shellQuote)
    .join(' ');
}

const FUNCTIONS = `# put_back PATH MODE SHA256: the file as it was, from the copy the change kept; staged one
# directory up (outside any dispatcher's directory) and renamed into place. A symbolic link was
# kept as the link (the probe hashed what it points to): the link goes back, and nothing is
# chmod-ed through one — chmod follows a link to its target.
put_back() {
	if sum=$(sha256sum <"$1" 2>/dev/null) && [ "\${sum%% *}" = "$3" ]; then
		[ -L "$1" ] || chmod "$2" "$1"
		return
	fi
	kept="$PREVIOUS$1"
	sum=$(sha256sum <"$kept" 2>/dev/null) || { echo "ibfleet: cannot restore $1: no copy kept in $PREVIOUS" >&2; return 1; }
	if [ "\${sum%% *}" != "$3" ]; then
		echo "ibfleet: cannot restore $1: the copy kept in $PREVIOUS is not the version probed before" >&2
		return 1
	fi
	dir=\${1%/*}
	staged="\${dir%/*}/.\${1##*/}.ibfleet-restore.$$"
	rm -f "$staged"
	if [ -L "$kept" ]; then
		cp -P "$kept" "$staged" && mv -f "$staged" "$1"
	else
		cp -p "$kept" "$staged" && chmod "$2" "$staged" && mv -f "$staged" "$1"
	fi || { rm -f "$staged"; return 1; }
	echo "ibfleet: restored $1"
	return 0
}

# set_back IFACE KEY VALUE
set_back() {
	printf '%s\\n' "$3" >"/proc/sys/net/ipv4/conf/$1/$2" || { echo "ibfleet: $1: cannot set $2 back to $3" >&2; return 1; }
}
`;

export function renderRestoreScript(host: Host, fleet: Fleet, spec: RestoreSpec, runId: string): string {
  const subnet = shellQuote(fleet.fabric.subnetText);
  const lines: string[] = [`# ibfleet restore after a failed verification: host ${host.id} (${host.name})`, renderPrelude('restore', runId), FUNCTIONS, 'status=0'];
  // Files first, then the manager's configuration, then the kernel state: a manager applying its
  // configuration afterwards (networkd drops every rule it did not make) would undo what is put back.
  lines.push('', "# ibfleet's files: as they were, or gone if they were not there.");
  for (const f of spec.files) {
    if (f.before === null) lines.push(`if [ -e ${shellQuote(f.path)} ] || [ -L ${shellQuote(f.path)} ]; then if rm -f ${shellQuote(f.path)}; then echo ${shellQuote(`ibfleet: removed ${f.path}`)}; else status=1; fi; fi`);
    else lines.push(`put_back ${shellQuote(f.path)} ${f.before.mode.toString(8).padStart(4, '0')} ${shellQuote(f.before.sha256)} || status=1`);
  }
  // A manager told something below dispatches an event, and a hook put back above then runs the
  // routing script; it holds a lock on itself, held here until the state is read, so it runs after
  // and finds nothing to change.
  lines.push(TAKE_ROUTING_LOCK);
  if (spec.native) lines.push('', "# The manager's configuration as it was: connection profiles, netplan reloaded into networkd.", ...renderNativeSteps(spec.native, fleet.fabric.subnetText));
  lines.push('', '# Source rules of the fabric NICs: all removed, then the ones found before put back.');
  for (const nic of host.nics) {
    const [addr, table] = [shellQuote(nic.address), shellQuote(nic.table)];
    lines.push(`n=0; while [ "$n" -lt 64 ] && ip -4 rule del from ${addr} 2>/dev/null; do n=$((n + 1)); done`);
    lines.push(`n=0; while [ "$n" -lt 64 ] && ip -4 rule del lookup ${table} 2>/dev/null; do n=$((n + 1)); done`);
  }
  for (const rule of spec.rules) lines.push(`ip -4 rule add ${words(rule.text)} priority ${rule.priority} || status=1`);
  lines.push('', '# The NIC tables, as they were.');
  for (const t of spec.tables) {
    lines.push(`ip -4 route flush table ${t.table} 2>/dev/null`);
    for (const route of t.routes) lines.push(`ip -4 route append ${words(route)} table ${t.table} || status=1`);
  }
  lines.push('', '# Main-table routes to the fabric subnet, in their order before (the kernel uses the first).');
  for (const nic of host.nics) {
    lines.push(`n=0; while [ "$n" -lt 16 ] && ip -4 route del ${subnet} dev ${shellQuote(nic.iface)} table main 2>/dev/null; do n=$((n + 1)); done`);
  }
  for (const route of spec.mainRoutes) lines.push(`ip -4 route append ${words(route)} || status=1`);
  lines.push('', '# Per-interface sysctls, then neighbour entries learnt under the changed routing.');
  for (const s of spec.sysctls) lines.push(`set_back ${shellQuote(s.iface)} ${shellQuote(s.key)} ${shellQuote(s.value)} || status=1`);
  for (const nic of host.nics) lines.push(`ip neigh flush dev ${shellQuote(nic.iface)} 2>/dev/null`);
  // Deepest first; one that is not empty (someone else's files) stays.
  if (spec.createdDirs.length) lines.push(`rmdir ${[...spec.createdDirs].reverse().map(shellQuote).join(' ')} 2>/dev/null`);
  if (spec.files.some((f) => REPAIR_PATHS.includes(f.path))) lines.push(...repairUnitsAsRestored());
  lines.push(afterProbe(host, fleet), finishLine(runId), 'exit "$status"', '');
  return receivedWhole('__ibfleet_restore_main', lines.join('\n'));
}

/**
 * systemd reads unit files only when told (where it runs: /run/systemd/system, as sd_booted checks),
 * so after the repair units went back it must reload them, and the timer must run exactly when its
 * file is there again: restarted from the restored file, or stopped when the change had added it.
 */
function repairUnitsAsRestored(): string[] {
  const timer = shellQuote(REPAIR_TIMER_UNIT);
  return [
    '',
    '# The repair timer as the restored unit files say.',
    'if [ -d /run/systemd/system ]; then',
    '\tsystemctl daemon-reload || status=1',
    `\tif [ -f ${shellQuote(REPAIR_TIMER_PATH)} ]; then systemctl restart ${timer} || status=1; else systemctl stop ${timer} 2>/dev/null; fi`,
    'fi',
  ];
}
