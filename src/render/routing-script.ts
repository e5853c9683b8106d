/**
 * The routing script: one idempotent POSIX sh program per host that gives each fabric NIC its own
 * table and source rule. Deploy runs it once; the hooks and the repair timer run it for the NICs
 * that are up. The program's frame — options, the lock that makes runs take turns, the loop over
 * the NICs, and per NIC the checks that it is there with its address — is here; what it sets is
 * the playbook's steps' parts (ScriptPart), and a step the playbook leaves out says what its
 * absence leaves.
 *
 * The same program answers `--check`: it changes nothing and says, one line per reason, where the
 * host is not as deployed — each NIC (there and up with its address, then what each step's part
 * checks in place of changing it), then ibfleet's files (their checksums and modes, rendered into
 * the script: check-files.ts) and what the steps check once per host — phrased as `ibfleet status`
 * phrases the same findings. Exit 0 when nothing was found, 1 otherwise. It is what NHC and
 * Ansible run on the host (`--preflight` asks only whether each NIC is there, up, with its
 * address: whether the host can take the routing at all). Pure.
 */
import { probePeerAddress } from './probe-script.js';
import type { Playbook } from '../playbook/playbook.js';
import { renderHeader } from '../script/header.js';
import { LOCK_DIR, ROUTES_LOCK_PATH, ROUTING_SCRIPT_PATH } from '../script/paths.js';
import { shellQuote } from '../script/shell.js';
import { STEPS } from '../steps/registry.js';
import type { RenderContext, ScriptPart } from '../steps/step.js';
import { fileCheckFunctions, renderFileChecks, type FileCheck } from './check-files.js';

type Parts = { readonly [K in keyof ScriptPart]-?: readonly string[] };

const PART_KEYS: readonly (keyof ScriptPart)[] = [
  'variables',
  'functions',
  'nicSettings',
  'nicRouting',
  'nicChecks',
  'beforeNics',
  'afterNics',
  'checks',
  'snapshot',
];

/** Every step's part, in the playbook's order, then what the steps it leaves out leave. */
export function scriptParts(playbook: Playbook, ctx: RenderContext): Parts {
  const named = new Set(playbook.steps.map((s) => s.module.name));
  const parts = [
    ...playbook.steps.flatMap((s) => (s.step.script ? [s.step.script(ctx)] : [])),
    ...STEPS.filter((m) => !named.has(m.name) && m.skipped).map((m) => m.skipped!),
  ];
  return Object.fromEntries(PART_KEYS.map((key) => [key, parts.flatMap((p) => p[key] ?? [])])) as unknown as Parts;
}

/** The script's head: what it is for, how it is called, its settings. */
function head(ctx: RenderContext, parts: Parts, usesNamed: boolean): string {
  const { host, fleet, playbook } = ctx;
  return `#!/bin/sh
${renderHeader(host, playbook, ROUTING_SCRIPT_PATH)}
#
# Each fabric NIC gets its own routing table holding the subnet route, and one source rule sends
# traffic from that NIC's address to its table. Without this the kernel keeps one subnet route per
# NIC in the main table and only ever uses the first, so traffic from NIC 2 leaves through NIC 1
# and the peer rejects it (rping: RDMA_CM_EVENT_REJECTED; ping fails under strict rp_filter).
#
# Usage: ibfleet-routes [--up-only] [--quiet] [--check | --preflight] [IFACE...]
#                                         (no IFACE: every fabric NIC of this host)
#   --up-only    skip, without failing, a NIC that is not up with its address yet: the hooks and the
#                repair timer run it while NICs come up one by one at boot
#   --quiet      print only what changed
#   --check      change nothing; print one line per way the host is not as deployed (the reasons
#                ibfleet status gives) and exit 1 if there is any: what NHC and Ansible run
#   --preflight  change nothing; exit 1, saying why, unless every NIC is there and up with its address
#   --snapshot [PATH | DIR/]...
#                change nothing; print a script that puts back what a run changes, as it is now,
#                and the files named (a DIR/ not there now is removed again if empty)
# Idempotent: it changes only what differs, so running it any number of times leaves one rule per
# address. Exit status: 0 when every named NIC (with --up-only: every one that is up) is in the
# desired state, 1 otherwise; 2 for an unknown option.
set -u
PATH=/usr/sbin:/usr/bin:/sbin:/bin
export PATH

SUBNET=${shellQuote(fleet.fabric.subnetText)}
HOST_ID=${host.id}
${parts.variables.map((v) => `${v}\n`).join('')}UP_ONLY=0
QUIET=0
CHECK=0
PREFLIGHT=0
SNAPSHOT=0
while [ "$#" -gt 0 ]; do
	case $1 in
	--up-only) UP_ONLY=1 ;;
	--quiet) QUIET=1 ;;
	--check) CHECK=1 ;;
	--preflight) CHECK=1 PREFLIGHT=1 ;;
	--snapshot) CHECK=1 SNAPSHOT=1 ;;
	--) shift; break ;;
	-*) printf 'ibfleet-routes: unknown option %s (known: --up-only, --quiet, --check, --preflight, --snapshot)\\n' "$1" >&2; exit 2 ;;
	*) break ;;
	esac
	shift
done
${usesNamed ? 'NAMED=0\n[ "$#" -eq 0 ] || NAMED=1\n' : ''}
`;
}

/** Helpers every script has: saying what it did, what it found, and iproute2's output made comparable. */
const HELPERS = `say() {
	printf 'ibfleet-routes: %s\\n' "$*"
}

# drift REASON — under --check: one way the host is not as deployed, said as ibfleet status says it.
drifted=0
drift() {
	printf '%s\\n' "$*"
	drifted=1
	nic_drift=1
}

# Collapse runs of blanks and drop trailing ones: iproute2 versions differ in both.
normalize() {
	sed -e 's/[[:space:]][[:space:]]*/ /g' -e 's/ linkdown//' -e 's/ $//'
}

# joined SEPARATOR: the lines of stdin as one line.
joined() {
	awk -v s="$1" 'NR > 1 { printf "%s", s } { printf "%s", $0 }'
}

`;

/**
 * Under --check, why a NIC is not there, up, with its address — the words status uses for what
 * keeps deploy from a host (plan/assess.ts nicBlockers). Returns 1 when it found something.
 */
const NIC_PRESENT = `# nic_present: under --check, is the NIC there and up with its address? (status's words when not)
nic_present() {
	link=$(ip -o link show dev "$iface" 2>/dev/null)
	if [ -z "$link" ]; then
		known=$(ip -o link show 2>/dev/null | sed -n 's/^[0-9]*: *\\([^:@ ]*\\).*/\\1/p' | grep -vx lo | joined ', ')
		drift "interface $iface (NIC $index) not found; the host has \${known:-no interfaces}"
		return 1
	fi
	flags=\${link#*<}
	flags=\${flags%%>*}
	case ",$flags," in *,UP,*) up=1 ;; *) up=0 ;; esac
	here=$(ip -4 -o addr show dev "$iface" 2>/dev/null | awk '{ print $4 }')
	exact=$(printf '%s\\n' "$here" | awk -v a="$addr" '{ split($0, p, "/"); if (p[1] == a) { print; exit } }')
	if [ -n "$exact" ] && [ "\${exact#*/}" != "\${SUBNET#*/}" ]; then
		drift "$iface carries $exact, but the fabric is $SUBNET"
	elif [ -n "$exact" ] && [ "$up" -eq 0 ]; then
		drift "$iface is down (it carries $addr, but the link is not up)"
	elif [ -z "$exact" ]; then
		elsewhere=$(ip -4 -o addr show 2>/dev/null | awk -v a="$addr" '{ split($4, p, "/"); if (p[1] == a) { sub(/@.*/, "", $2); print $2; exit } }')
		if [ -n "$elsewhere" ]; then
			drift "$addr (NIC $index) is on $elsewhere, not $iface: are the interfaces swapped in the inventory?"
		elif [ "$up" -eq 0 ]; then
			drift "$iface is down (no $addr)"
		else
			drift "$iface carries $(printf '%s\\n' "$here" | grep . | joined ', ' | grep . || echo 'no IPv4 address'), but the convention gives NIC $index of host $HOST_ID $addr/\${SUBNET#*/}"
		fi
	else
		return 0
	fi
	return 1
}

`;

/**
 * `snapshot [PATH | DIR/]...`: a script that puts back, as it is now, the files named — content
 * and mode, a link as the link, a file not there removed —, removes again, if empty, a DIR/ that is
 * not there now, and then what the steps' parts change (their snapshot lines print that, systemd
 * told last). What an exported Ansible role keeps before its change, for a host that then fails
 * verification, as deploy's restore puts back what its probe saw.
 */
function snapshotFunction(parts: Parts): string {
  const q = String.raw`# q WORD: WORD single-quoted for the shell that runs the snapshot.
q() {
	printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\''/g")"
}

`;
  return `${q}# snapshot [PATH | DIR/]... — what a run changes and the files named, as they are now, as a script.
# What it prints is the other script's text: its $words are not this shell's (SC2016).
# shellcheck disable=SC2016
snapshot() {
	echo 'status=0'
	for p in "$@"; do
		case $p in
		*/) [ -d "$p" ] || echo "rmdir $(q "\${p%/}") 2>/dev/null" ;;
		*)
			staged="\${p%/*}/.\${p##*/}.ibfleet-restore"
			if [ -L "$p" ]; then
				echo "rm -f $(q "$p") && ln -s $(q "$(readlink "$p")") $(q "$p") || status=1"
			elif [ -f "$p" ]; then
				echo "(umask 077 && printf '%s' $(q "$(base64 -w 0 <"$p")") | base64 -d >$(q "$staged")) && mv -fT $(q "$staged") $(q "$p") && chmod $(stat -c %a "$p") $(q "$p") || status=1"
			else
				echo "rm -f $(q "$p") || status=1"
			fi
			;;
		esac
	done
${parts.snapshot.map((l) => `\t${l.replace(/\n(?=.)/g, '\n\t')}`).join('\n')}
	echo 'exit "$status"'
}

`;
}

/** `configure IFACE ADDRESS TABLE PRIORITY INDEX PEER`: one NIC, checked to be there with its address, then the steps' settings and routing. */
function configure(parts: Parts): string {
  // Only a script whose steps read it after the NICs (was_ok) keeps what each NIC was found as.
  const found = (line: string) => (parts.afterNics.length ? line : '');
  return `# configure IFACE ADDRESS TABLE PRIORITY INDEX PEER — one NIC; under --check, only looked at.
configure() {
	# shellcheck disable=SC2034 # $peer is there for the steps' checks; a playbook may have none.
	iface=$1 addr=$2 table=$3 prio=$4 index=$5 peer=$6
	nic_changed=0
	nic_drift=0
${found('\tnic_ok=0\n')}	if [ "$UP_ONLY" -eq 1 ] && ! ip -4 -o addr show dev "$iface" up 2>/dev/null | grep -q " inet $addr/"; then
		[ "$QUIET" -eq 1 ] || [ "$CHECK" -eq 1 ] || say "$iface: not up with $addr yet; left for its own up event"
		return 0
	fi
	if [ "$CHECK" -eq 1 ]; then
		nic_present
		[ "$PREFLIGHT" -eq 0 ] || return "$nic_drift"
	elif ! ip link show dev "$iface" >/dev/null 2>&1; then
		say "$iface: no such interface"
		return 1
	elif ! ip -4 -o addr show dev "$iface" | grep -q " inet $addr/"; then
		say "$iface: does not carry $addr (is it up, with the address the inventory derives?)"
		return 1
	fi
${parts.nicSettings.join('\n')}

${parts.nicRouting.join('\n\n')}

	if [ "$CHECK" -eq 1 ]; then
${parts.nicChecks.length ? parts.nicChecks.map((l) => l.replace(/^(?=.)/gm, '\t')).join('\n') : '\t\t:'}
		return "$nic_drift"
	fi

	# Neighbour entries learnt before the change may point at the other NIC; left alone they keep
	# NIC 2 traffic broken until they expire (30-45 s).
	if [ "$nic_changed" -eq 1 ]; then
		ip neigh flush dev "$iface" 2>/dev/null
		say "$iface: configured"
	else
${found('\t\tnic_ok=1\n')}		[ "$QUIET" -eq 1 ] || say "$iface: unchanged"
	fi
	return 0
}

`;
}

/**
 * One run at a time (a check waits for a run under way, and takes the lock shared, creating
 * nothing), then every NIC named (or all of the host's), then what the steps do after the NICs
 * or, under --check, check once per host.
 */
function lock(): string {
  return `# One run at a time: a hook, the repair timer and a deploy can start this script together, and two
# runs that both find a rule missing would both add it (the second fails: File exists). The wait is
# bounded, so a stuck run never blocks boot; flock is util-linux's, and without it runs overlap. A
# check waits for a run under way (it would see half a change), sharing the lock with other checks.
if ! command -v flock >/dev/null 2>&1; then
	:
elif [ "$CHECK" -eq 1 ]; then
	if [ -r ${shellQuote(ROUTES_LOCK_PATH)} ]; then
		exec 8<${shellQuote(ROUTES_LOCK_PATH)}
		flock -s -w 10 8 || true
	fi
else
	# A run started at the same moment may make the directory first: test it again, whoever made it.
	[ -d ${shellQuote(LOCK_DIR)} ] || mkdir -m 0700 ${shellQuote(LOCK_DIR)} 2>/dev/null
	if [ -d ${shellQuote(LOCK_DIR)} ] && [ -w ${shellQuote(LOCK_DIR)} ]; then
		exec 8>>${shellQuote(ROUTES_LOCK_PATH)}
		flock -w 30 8 || say "another run still holds ${ROUTES_LOCK_PATH} after 30 s; going on"
	fi
fi

`;
}

/** `nic IFACE`: configure one of this host's fabric NICs by its name. */
function nicDispatch(ctx: RenderContext): string {
  const cases = ctx.host.nics
    .map(
      (n) =>
        `\t${shellQuote(n.iface)}) configure ${[n.iface, n.address, n.table, n.priority, n.index, probePeerAddress(ctx.fleet, ctx.host, n.index)].map(shellQuote).join(' ')} ;;`,
    )
    .join('\n');
  return `# nic IFACE — one of this host's fabric NICs, by its name.
nic() {
	case $1 in
${cases}
	*) say "$1: not a fabric NIC of this host, nothing to do" ;;
	esac
}

`;
}

function loop(ctx: RenderContext, parts: Parts, files: readonly FileCheck[]): string {
  const ifaces = ctx.host.nics.map((n) => shellQuote(n.iface));
  const wasOk = parts.afterNics.length
    ? `# was_ok IFACE: 1 when this run found the NIC as deployed (nothing to change), else 0.
was_ok() {
	case " $found " in *" $1=1 "*) echo 1 ;; *) echo 0 ;; esac
}

`
    : '';
  const fileChecks = renderFileChecks(files);
  const hostChecks = [...fileChecks, ...parts.checks];
  return `${wasOk}[ "$SNAPSHOT" -eq 0 ] || { snapshot "$@"; exit "$?"; }
${parts.beforeNics.map((l) => `${l}\n`).join('')}[ "$#" -gt 0 ] || set -- ${ifaces.join(' ')}
status=0
${parts.afterNics.length ? 'changed=0\nfound=\n' : ''}for iface in "$@"; do
${parts.afterNics.length ? '\tif nic "$iface"; then found="$found $iface=$nic_ok"; else status=1; found="$found $iface=0"; fi\n\t[ "$nic_changed" -eq 0 ] || changed=1' : '\tnic "$iface" || status=1'}
done
if [ "$CHECK" -eq 1 ]; then
${hostChecks.length ? `\tif [ "$PREFLIGHT" -eq 0 ] && [ "$NAMED" -eq 0 ]; then\n${hostChecks.map((l) => `\t\t${l.replace(/\n(?=.)/g, '\n\t\t')}`).join('\n')}\n\tfi\n` : ''}	[ "$drifted" -eq 0 ] || status=1
${parts.afterNics.length ? `else\n${parts.afterNics.map((l) => `\t${l.replace(/\n(?=.)/g, '\n\t')}`).join('\n')}\n` : ''}fi
exit "$status"
`;
}

/** The routing script; `files`: ibfleet's other files on the host, which --check compares with what was rendered. */
export function renderRoutingScript(ctx: RenderContext, parts: Parts, files: readonly FileCheck[] = []): string {
  const usesNamed = files.length > 0 || parts.checks.length > 0 || parts.afterNics.length > 0;
  return `${head(ctx, parts, usesNamed)}${HELPERS}${NIC_PRESENT}${fileCheckFunctions(files)}${snapshotFunction(parts)}${parts.functions.join('')}${configure(parts)}${nicDispatch(ctx)}${lock()}${loop(ctx, parts, files)}`;
}
