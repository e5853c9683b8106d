/**
 * The scripts deploy and rollback send to a host, each run in one SSH channel: take the host lock,
 * make the change, then print the probe sections again so verification reads the state the change
 * left. Files travel inside the script as quoted here-documents (byte-exact) and are written
 * atomically: staged next to their directory, then renamed over the old file, whose previous
 * version is kept non-executable under PREVIOUS_DIR. Pure string builders.
 */
import { createHash } from 'node:crypto';
import { BugError } from '../errors.js';
import type { Fleet, Host } from '../inventory/model.js';
import type { RenderedFile } from './files.js';
import { LOCK_PATH, PREVIOUS_DIR, ROUTING_SCRIPT_PATH } from './paths.js';
import { renderProbeBody, TRACKED_PATHS } from './probe-script.js';
import { SYSCTL_KEYS } from './routing-script.js';
import { shellQuote } from './shell.js';

/** Exit status when another ibfleet run holds the host lock (EX_TEMPFAIL). */
export const LOCKED_EXIT = 75;
/** Marks the start of the post-change probe in the output. */
export const AFTER_MARK = '@@ibfleet-after';

const PRELUDE = `set -u
export LC_ALL=C PATH=/usr/sbin:/usr/bin:/sbin:/bin
# Finish what was started even if the connection drops or the user presses Ctrl-C: a host is
# never left half-changed.
trap '' HUP INT TERM PIPE
mkdir -p ${shellQuote(LOCK_PATH.replace(/\/[^/]+$/, ''))}
exec 9>>${shellQuote(LOCK_PATH)} || exit 70
if ! flock -n 9; then
	echo "ibfleet: another ibfleet run is changing this host (lock ${LOCK_PATH} is held); try again when it has finished" >&2
	exit ${LOCKED_EXIT}
fi
PREVIOUS=${shellQuote(PREVIOUS_DIR)}

# keep PATH: copy the current version under $PREVIOUS, without execute bits so no dispatcher runs it.
keep() {
	[ -f "$1" ] || return 0
	mkdir -p "$PREVIOUS\${1%/*}" && cp -p "$1" "$PREVIOUS$1" && chmod a-x "$PREVIOUS$1"
}

# put PATH MODE STAGEDIR < content: write atomically (stage, chmod, rename over the old file).
put() {
	stage=$3/.ibfleet-staging
	mkdir -p "\${1%/*}" "$stage" || return 1
	tmp=$stage/\${1##*/}.$$
	cat >"$tmp" && chown 0:0 "$tmp" && chmod "$2" "$tmp" || { rm -f "$tmp"; return 1; }
	keep "$1" || { rm -f "$tmp"; return 1; }
	mv -f "$tmp" "$1" || { rm -f "$tmp"; return 1; }
	rmdir "$stage" 2>/dev/null
	echo "ibfleet: wrote $1"
}

# retire PATH: remove a file ibfleet installed, keeping its last version.
retire() {
	[ -f "$1" ] || return 0
	keep "$1" && rm -f "$1" && echo "ibfleet: removed $1"
}
`;

/**
 * Hooks are staged one directory up, outside the directory their runner scans, so a half-written
 * or not-yet-renamed file can never be executed; other files stage in their own directory.
 */
function stageDir(file: RenderedFile): string {
  const dir = file.path.replace(/\/[^/]+$/, '');
  return file.role === 'hook' ? dir.replace(/\/[^/]+$/, '') : dir;
}

function hereDoc(file: RenderedFile): string {
  const tag = `IBFLEET_EOF_${createHash('sha256').update(file.content).digest('hex').slice(0, 12)}`;
  if (file.content.split('\n').includes(tag)) throw new BugError(`here-document tag ${tag} occurs in ${file.path}`);
  if (!file.content.endsWith('\n')) throw new BugError(`${file.path} must end with a newline to travel in a here-document`);
  return `put ${shellQuote(file.path)} ${file.mode.toString(8).padStart(4, '0')} ${shellQuote(stageDir(file))} <<'${tag}' || status=1\n${file.content}${tag}`;
}

function afterProbe(host: Host, fleet: Fleet): string {
  return `echo ${AFTER_MARK}\n${renderProbeBody(host, fleet)}`;
}

export interface ApplyPlan {
  /** Files to (re)write; unchanged files are not sent. */
  readonly write: readonly RenderedFile[];
  /** Paths of stale files to remove (another manager's hook). */
  readonly remove: readonly string[];
}

export function renderApplyScript(host: Host, fleet: Fleet, plan: ApplyPlan): string {
  return [
    `# ibfleet deploy: host ${host.id} (${host.name})`,
    PRELUDE,
    'status=0',
    ...plan.write.map(hereDoc),
    ...plan.remove.map((p) => `retire ${shellQuote(p)} || status=1`),
    '# Apply now: the routing script sets sysctls, table routes and rules for every fabric NIC.',
    `if [ "$status" -eq 0 ]; then`,
    `\t${ROUTING_SCRIPT_PATH} || status=$?`,
    'fi',
    afterProbe(host, fleet),
    'exit "$status"',
    '',
  ].join('\n');
}

/**
 * Rollback: files removed (last versions kept), rules and fabric tables gone, the main-table
 * subnet routes back as the kernel adds them (NIC 1 first), per-interface sysctls back to the
 * kernel defaults a newly created interface gets (conf/default).
 */
export function renderRollbackScript(host: Host, fleet: Fleet): string {
  const subnet = shellQuote(fleet.fabric.subnetText);
  const nics = host.nics.map((n) => [n.iface, n.address, n.table].map(shellQuote).join(' '));
  return [
    `# ibfleet rollback: host ${host.id} (${host.name})`,
    PRELUDE,
    'status=0',
    ...TRACKED_PATHS.map((p) => `retire ${shellQuote(p)} || status=1`),
    'unroute() {',
    '\tiface=$1 addr=$2 table=$3',
    '\tn=0',
    '\twhile [ "$n" -lt 64 ] && ip -4 rule del from "$addr" 2>/dev/null; do n=$((n + 1)); done',
    '\tn=0',
    '\twhile [ "$n" -lt 64 ] && ip -4 rule del lookup "$table" 2>/dev/null; do n=$((n + 1)); done',
    '\tip -4 route flush table "$table" 2>/dev/null',
    `\tfor k in ${SYSCTL_KEYS.join(' ')}; do`,
    '\t\tcat "/proc/sys/net/ipv4/conf/default/$k" >"/proc/sys/net/ipv4/conf/$iface/$k" 2>/dev/null',
    '\tdone',
    '\techo "ibfleet: $iface: rules and table $table removed"',
    '}',
    ...host.nics.map((_, i) => `unroute ${nics[i]}`),
    '# Main-table routes in NIC order, as the kernel adds them when the addresses come up.',
    ...host.nics.map((n) => `ip -4 route del ${subnet} dev ${shellQuote(n.iface)} table main 2>/dev/null`),
    ...host.nics.map(
      (n) =>
        `if ip -4 -o addr show dev ${shellQuote(n.iface)} 2>/dev/null | grep -q ' inet ${n.address}/'; then ip -4 route append ${subnet} dev ${shellQuote(n.iface)} proto kernel scope link src ${n.address} && echo "ibfleet: ${n.iface}: main-table route restored"; fi`,
    ),
    ...host.nics.map((n) => `ip neigh flush dev ${shellQuote(n.iface)} 2>/dev/null`),
    afterProbe(host, fleet),
    'exit "$status"',
    '',
  ].join('\n');
}
