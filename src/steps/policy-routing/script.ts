/**
 * policy-routing's part of the routing script: per NIC, the table holding exactly the subnet route
 * through the NIC, exactly one rule for its address at a fixed priority, and — with
 * `mainRoutes: remove` — the kernel's main-table route through the NIC taken away. Pure.
 */
import { printLine, shellQuote } from '../../script/shell.js';
import type { RenderContext, ScriptPart } from '../step.js';

/**
 * Inside `configure` (render/routing-script.ts): $iface, $addr, $table, $prio; sets nic_changed.
 * Under --check each difference is said as status says it (policy-routing/index.ts), nothing changed.
 */
const NIC_ROUTING = `	# The table holds exactly the subnet route through this NIC, with this NIC's source address.
	want_route="$SUBNET dev $iface proto kernel scope link src $addr"
	have_route=$(ip -4 route show table "$table" 2>/dev/null | normalize)
	if [ "$have_route" = "$want_route" ]; then
		:
	elif [ "$CHECK" -eq 1 ]; then
		if [ -z "$have_route" ]; then
			drift "$iface: table $table is empty (missing table route)"
		else
			drift "$iface: table $table holds $(printf '%s\\n' "$have_route" | joined '; ')"
		fi
	else
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
	want_rule="$prio: from $addr lookup $table"
	have_rule=$(ip -4 rule show | normalize | awk -v a="$addr" -v t="$table" '{ f = "all"; l = ""; for (i = 2; i < NF; i++) { if ($i == "from" && f == "all") f = $(i + 1); if (($i == "lookup" || $i == "table") && l == "") l = $(i + 1) } if (f == a || l == t) print }')
	if [ "$have_rule" = "$want_rule" ]; then
		:
	elif [ "$CHECK" -eq 1 ]; then
		drift "$(printf '%s\\n' "$have_rule" | awk -v a="$addr" -v t="$table" -v i="$iface" '
			NF { n++; p = $1; sub(/:$/, "", p); pr = pr (n > 1 ? ", " : "") p; all = all (n > 1 ? "; " : "") $0
				f = ""; l = ""; for (k = 2; k < NF; k++) { if ($k == "from" && f == "") f = $(k + 1); if (($k == "lookup" || $k == "table") && l == "") l = $(k + 1) }
				if (f != a || l != t) odd = 1 }
			END { if (n == 0) print i ": rule from " a " is missing"; else if (n > 1 && !odd) print i ": " n " duplicate rules from " a " (" pr ")"; else print i ": rules for " a " / table " t " are " all }')"
	else
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
	if [ "$MAIN_ROUTES" != remove ]; then
		:
	elif [ "$CHECK" -eq 1 ]; then
		[ -z "$(ip -4 route show table main exact "$SUBNET" dev "$iface" 2>/dev/null)" ] || drift "$iface: main-table route to $SUBNET is back"
	else
		n=0
		while [ "$n" -lt 16 ] && ip -4 route del "$SUBNET" dev "$iface" table main 2>/dev/null; do
			n=$((n + 1))
			say "$iface: removed main-table route to $SUBNET"
			nic_changed=1
		done
	fi`;

/**
 * awk that prints each route or rule line of its input as `ip -4 PREFIX <words> SUFFIX || status=1`:
 * the words `ip` prints but does not take back left out (as undo.ts does), each single-quoted
 * (\047), a rule's leading `PRIORITY:` moved to `priority PRIORITY`.
 */
const REPLAY = String.raw`awk -v pre="$1" -v post="$2" 'BEGIN { n = split("linkdown dead offload trap offload_failed rt_offload rt_trap rt_offload_failed pervasive notify [detached] unresolved", w, " "); for (i = 1; i <= n; i++) skip[w[i]] = 1 }
	function q(s) { gsub(/\047/, "\047\\\047\047", s); return "\047" s "\047" }
	NF { out = ""; prio = ""; for (i = 1; i <= NF; i++) { if (i == 1 && $1 ~ /^[0-9]+:$/) { prio = substr($1, 1, length($1) - 1); continue } if (!($i in skip)) out = out " " q($i) } print "ip -4 " pre out (prio == "" ? "" : " priority " prio) post " || status=1" }'`;

/** Under --snapshot: the fabric NICs' rules, tables and main-table routes put back as they are now (undo.ts's restore, on the host). */
function snapshotPart(ctx: RenderContext): string[] {
  const { host, fleet } = ctx;
  const subnet = shellQuote(fleet.fabric.subnetText);
  const say = printLine;
  const addrs = host.nics.map((n) => n.address);
  const tables = host.nics.map((n) => String(n.table));
  return [
    `# replay PREFIX SUFFIX: each line of stdin as an ip command that adds it back.
replay() {
	${REPLAY}
}`,
    say('# Source rules of the fabric NICs: all removed, then the ones there before put back.'),
    ...host.nics.flatMap((n) => [
      say(`n=0; while [ "$n" -lt 64 ] && ip -4 rule del from ${n.address} 2>/dev/null; do n=$((n + 1)); done`),
      say(`n=0; while [ "$n" -lt 64 ] && ip -4 rule del lookup ${n.table} 2>/dev/null; do n=$((n + 1)); done`),
    ]),
    `ip -4 rule show | normalize | awk -v a=${shellQuote(` ${addrs.join(' ')} `)} -v t=${shellQuote(` ${tables.join(' ')} `)} '{ f = "all"; l = ""; for (i = 2; i < NF; i++) { if ($i == "from" && f == "all") f = $(i + 1); if (($i == "lookup" || $i == "table") && l == "") l = $(i + 1) } if (index(a, " " f " ") || index(t, " " l " ")) print }' | replay 'rule add' ''`,
    say('# The NIC tables, as they were.'),
    ...host.nics.flatMap((n) => [
      say(`ip -4 route flush table ${n.table} 2>/dev/null`),
      `ip -4 route show table ${n.table} 2>/dev/null | normalize | replay 'route append' ' table ${n.table}'`,
    ]),
    say('# Main-table routes to the fabric subnet, in their order before (the kernel uses the first).'),
    ...host.nics.map((n) =>
      say(
        `n=0; while [ "$n" -lt 16 ] && ip -4 route del ${fleet.fabric.subnetText} dev ${shellQuote(n.iface)} table main 2>/dev/null; do n=$((n + 1)); done`,
      ),
    ),
    `ip -4 route show table main exact ${subnet} | normalize | awk ${host.nics.map((n) => `-v d${n.index}=${shellQuote(n.iface)}`).join(' ')} '{ for (i = 1; i < NF; i++) if ($i == "dev" && (${host.nics.map((n) => `$(i + 1) == d${n.index}`).join(' || ')})) { print; next } }' | replay 'route append' ''`,
    ...host.nics.map((n) => say(`ip neigh flush dev ${shellQuote(n.iface)} 2>/dev/null`)),
  ];
}

export function routingScriptPart(mainRoutes: 'remove' | 'keep', ctx: RenderContext): ScriptPart {
  return { variables: [`MAIN_ROUTES=${mainRoutes}`], nicRouting: [NIC_ROUTING], snapshot: snapshotPart(ctx) };
}
