/**
 * The routing script: one idempotent POSIX sh program per host that gives each fabric NIC its own
 * table and source rule. Deploy runs it once; the hooks run it for one interface at a time.
 */
import type { Fleet, Host } from '../inventory/model.js';
import type { Playbook } from '../playbook/playbook.js';
import { renderHeader } from './header.js';
import { LOCK_DIR, ROUTES_LOCK_PATH, ROUTING_SCRIPT_PATH } from './paths.js';
import { shellQuote } from './shell.js';
import { raisedNeighThresholds } from './neigh.js';

/** Sysctl keys in the order they are applied and persisted. */
export const SYSCTL_KEYS = ['arp_ignore', 'arp_announce', 'rp_filter', 'accept_local'] as const;

/** Only emitted when the playbook sets sysctls: an uncalled function is dead code to shellcheck (SC2317). */
const SET_SYSCTL_FUNCTION = `# set_sysctl IFACE KEY VALUE — written through /proc so interface names with dots work.
set_sysctl() {
	file=/proc/sys/net/ipv4/conf/$1/$2
	current=$(cat "$file" 2>/dev/null) || { say "$1: cannot read $file"; return 1; }
	[ "$current" = "$3" ] && return 0
	if ! printf '%s\\n' "$3" >"$file"; then
		say "$1: cannot set $2=$3"
		return 1
	fi
	say "$1: $2 $current -> $3"
	nic_changed=1
}

`;

/**
 * Only for a fleet whose neighbour table must exceed the kernel's defaults: /proc/sys answers a
 * byte-at-a-time read with its first byte only, hence cat. A limit already higher (an admin's, the
 * lab's) stays; a host whose network namespace has no such file (a container) is left alone.
 */
const RAISE_NEIGH_FUNCTION = `# raise_neigh KEY VALUE — the neighbour table limit raised to what the fleet needs, never lowered.
raise_neigh() {
	file=/proc/sys/net/ipv4/neigh/default/$1
	current=$(cat "$file" 2>/dev/null) || return 0
	[ "$current" -ge "$2" ] 2>/dev/null && return 0
	printf '%s\\n' "$2" >"$file" 2>/dev/null && say "neighbour table: $1 $current -> $2"
	return 0
}

`;

export function renderRoutingScript(host: Host, fleet: Fleet, playbook: Playbook): string {
  const sysctl = playbook.fabricSysctl;
  const neigh = sysctl ? raisedNeighThresholds(fleet) : undefined;
  const raiseNeigh = neigh ? `${(['gc_thresh3', 'gc_thresh2', 'gc_thresh1'] as const).map((k) => `raise_neigh ${k} ${neigh[k]}`).join('\n')}\n` : '';
  const ifaces = host.nics.map((n) => shellQuote(n.iface));
  const nicCases = host.nics
    .map((n) => `\t\t${shellQuote(n.iface)}) configure ${[n.iface, n.address, n.table, n.priority].map(shellQuote).join(' ')} || status=1 ;;`)
    .join('\n');
  const sysctlLines = sysctl
    ? SYSCTL_KEYS.map((key) => `\tset_sysctl "$iface" ${key} ${sysctl[key]} || return 1`).join('\n')
    : '\t# the playbook has no fabric-sysctl step: kernel settings are left alone';

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
MAIN_ROUTES=${playbook.policyRouting.mainRoutes}
UP_ONLY=0
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

${sysctl ? SET_SYSCTL_FUNCTION : ''}${neigh ? RAISE_NEIGH_FUNCTION : ''}# configure IFACE ADDRESS TABLE PRIORITY
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
${sysctlLines}

	# The table holds exactly the subnet route through this NIC, with this NIC's source address.
	want_route="$SUBNET dev $iface proto kernel scope link src $addr"
	have_route=$(ip -4 route show table "$table" 2>/dev/null | normalize)
	if [ "$have_route" != "$want_route" ]; then
		ip -4 route flush table "$table" 2>/dev/null
		if ! ip -4 route add "$SUBNET" dev "$iface" proto kernel scope link src "$addr" table "$table"; then
			say "$iface: cannot add the subnet route to table $table"
			return 1
		fi
		say "$iface: table $table routes $SUBNET via $iface"
		nic_changed=1
	fi

	# Exactly one rule for this address and this table, at a fixed priority. Anything else that
	# mentions either (a duplicate from an older hand-made hook, a stale priority) is removed first.
	addr_re=$(printf '%s' "$addr" | sed 's/\\./\\\\./g')
	want_rule="$prio: from $addr lookup $table"
	have_rule=$(ip -4 rule show | normalize | grep -E "^[0-9]+: from $addr_re lookup |^[0-9]+: .* lookup $table\$")
	if [ "$have_rule" != "$want_rule" ]; then
		n=0
		while [ "$n" -lt 64 ] && ip -4 rule del from "$addr" 2>/dev/null; do n=$((n + 1)); done
		n=0
		while [ "$n" -lt 64 ] && ip -4 rule del lookup "$table" 2>/dev/null; do n=$((n + 1)); done
		if ! ip -4 rule add from "$addr" lookup "$table" priority "$prio"; then
			say "$iface: cannot add rule from $addr lookup $table"
			return 1
		fi
		say "$iface: rule $want_rule"
		nic_changed=1
	fi

	# The kernel re-adds a main-table subnet route whenever the address is (re)configured; a route
	# that is already gone is the desired state, not an error.
	if [ "$MAIN_ROUTES" = remove ]; then
		n=0
		while [ "$n" -lt 16 ] && ip -4 route del "$SUBNET" dev "$iface" table main 2>/dev/null; do
			n=$((n + 1))
			say "$iface: removed main-table route to $SUBNET"
			nic_changed=1
		done
	fi

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

# One run at a time: a hook, the repair timer and a deploy can start this script together, and two
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

${raiseNeigh}[ "$#" -gt 0 ] || set -- ${ifaces.join(' ')}
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
