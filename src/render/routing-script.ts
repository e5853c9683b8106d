/**
 * The routing script: one idempotent POSIX sh program per host that gives each fabric NIC its own
 * table and source rule. Deploy runs it once; the hooks and the repair timer run it for the NICs
 * that are up. The program's frame — options, the lock that makes runs take turns, the loop over
 * the NICs, and per NIC the checks that it is there with its address — is here; what it sets is
 * the playbook's steps' parts (ScriptPart), and a step the playbook leaves out says what its
 * absence leaves. Pure.
 */
import type { Playbook } from '../playbook/playbook.js';
import { renderHeader } from '../script/header.js';
import { LOCK_DIR, ROUTES_LOCK_PATH, ROUTING_SCRIPT_PATH } from '../script/paths.js';
import { shellQuote } from '../script/shell.js';
import { STEPS } from '../steps/registry.js';
import type { RenderContext, ScriptPart } from '../steps/step.js';

type Parts = { readonly [K in keyof ScriptPart]-?: readonly string[] };

/** Every step's part, in the playbook's order, then what the steps it leaves out leave. */
export function scriptParts(playbook: Playbook, ctx: RenderContext): Parts {
  const named = new Set(playbook.steps.map((s) => s.module.name));
  const parts = [...playbook.steps.flatMap((s) => (s.step.script ? [s.step.script(ctx)] : [])), ...STEPS.filter((m) => !named.has(m.name) && m.skipped).map((m) => m.skipped!)];
  const all = (key: keyof ScriptPart) => parts.flatMap((p) => p[key] ?? []);
  return { variables: all('variables'), functions: all('functions'), nicSettings: all('nicSettings'), nicRouting: all('nicRouting'), beforeNics: all('beforeNics') };
}

/** The script's head: what it is for, how it is called, its settings and helpers. */
function head(ctx: RenderContext, parts: Parts): string {
  const { host, fleet, playbook } = ctx;
  return `#!/bin/sh
${renderHeader(host, playbook, ROUTING_SCRIPT_PATH)}
#
# Each fabric NIC gets its own routing table holding the subnet route, and one source rule sends
# traffic from that NIC's address to its table. Without this the kernel keeps one subnet route per
# NIC in the main table and only ever uses the first, so traffic from NIC 2 leaves through NIC 1
# and the peer rejects it (rping: RDMA_CM_EVENT_REJECTED; ping fails under strict rp_filter).
#
# Usage: ibfleet-routes [--up-only] [--quiet] [IFACE...]   (no IFACE: every fabric NIC of this host)
#   --up-only  skip, without failing, a NIC that is not up with its address yet: the hooks and the
#              repair timer run it while NICs come up one by one at boot
#   --quiet    print only what changed
# Idempotent: it changes only what differs, so running it any number of times leaves one rule per
# address. Exit status: 0 when every named NIC (with --up-only: every one that is up) is in the
# desired state, 1 otherwise.
set -u
PATH=/usr/sbin:/usr/bin:/sbin:/bin
export PATH

SUBNET=${shellQuote(fleet.fabric.subnetText)}
${parts.variables.map((v) => `${v}\n`).join('')}UP_ONLY=0
QUIET=0
while [ "$#" -gt 0 ]; do
	case $1 in
	--up-only) UP_ONLY=1 ;;
	--quiet) QUIET=1 ;;
	--) shift; break ;;
	-*) printf 'ibfleet-routes: unknown option %s (known: --up-only, --quiet)\n' "$1" >&2; exit 2 ;;
	*) break ;;
	esac
	shift
done

say() {
	printf 'ibfleet-routes: %s\\n' "$*"
}

# Collapse runs of blanks and drop trailing ones: iproute2 versions differ in both.
normalize() {
	sed -e 's/[[:space:]][[:space:]]*/ /g' -e 's/ linkdown//' -e 's/ $//'
}

`;
}

/** `configure IFACE ADDRESS TABLE PRIORITY`: one NIC, checked to be there with its address, then the steps' settings and routing. */
function configure(parts: Parts): string {
  return `# configure IFACE ADDRESS TABLE PRIORITY
configure() {
	iface=$1 addr=$2 table=$3 prio=$4
	nic_changed=0
	if [ "$UP_ONLY" -eq 1 ] && ! ip -4 -o addr show dev "$iface" up 2>/dev/null | grep -q " inet $addr/"; then
		[ "$QUIET" -eq 1 ] || say "$iface: not up with $addr yet; left for its own up event"
		return 0
	fi
	if ! ip link show dev "$iface" >/dev/null 2>&1; then
		say "$iface: no such interface"
		return 1
	fi
	if ! ip -4 -o addr show dev "$iface" | grep -q " inet $addr/"; then
		say "$iface: does not carry $addr (is it up, with the address the inventory derives?)"
		return 1
	fi
${parts.nicSettings.join('\n')}

${parts.nicRouting.join('\n\n')}

	# Neighbour entries learnt before the change may point at the other NIC; left alone they keep
	# NIC 2 traffic broken until they expire (30-45 s).
	if [ "$nic_changed" -eq 1 ]; then
		ip neigh flush dev "$iface" 2>/dev/null
		say "$iface: configured"
	elif [ "$QUIET" -eq 0 ]; then
		say "$iface: unchanged"
	fi
	return 0
}

`;
}

/** One run at a time, then every NIC named (or all of the host's). */
function loop(ctx: RenderContext, parts: Parts): string {
  const ifaces = ctx.host.nics.map((n) => shellQuote(n.iface));
  const nicCases = ctx.host.nics
    .map((n) => `\t\t${shellQuote(n.iface)}) configure ${[n.iface, n.address, n.table, n.priority].map(shellQuote).join(' ')} || status=1 ;;`)
    .join('\n');
  return `# One run at a time: a hook, the repair timer and a deploy can start this script together, and two
# runs that both find a rule missing would both add it (the second fails: File exists). The wait is
# bounded, so a stuck run never blocks boot; flock is util-linux's, and without it runs overlap.
if command -v flock >/dev/null 2>&1; then
	# A run started at the same moment may make the directory first: test it again, whoever made it.
	[ -d ${shellQuote(LOCK_DIR)} ] || mkdir -m 0700 ${shellQuote(LOCK_DIR)} 2>/dev/null
	if [ -d ${shellQuote(LOCK_DIR)} ] && [ -w ${shellQuote(LOCK_DIR)} ]; then
		exec 8>>${shellQuote(ROUTES_LOCK_PATH)}
		flock -w 30 8 || say "another run still holds ${ROUTES_LOCK_PATH} after 30 s; going on"
	fi
fi

${parts.beforeNics.map((l) => `${l}\n`).join('')}[ "$#" -gt 0 ] || set -- ${ifaces.join(' ')}
status=0
for iface in "$@"; do
	case $iface in
${nicCases}
		*) say "$iface: not a fabric NIC of this host, nothing to do" ;;
	esac
done
exit "$status"
`;
}

export function renderRoutingScript(ctx: RenderContext, parts: Parts): string {
  return `${head(ctx, parts)}${parts.functions.join('')}${configure(parts)}${loop(ctx, parts)}`;
}
