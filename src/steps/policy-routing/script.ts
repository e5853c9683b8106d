/**
 * policy-routing's part of the routing script: per NIC, the table holding exactly the subnet route
 * through the NIC, exactly one rule for its address at a fixed priority, and — with
 * `mainRoutes: remove` — the kernel's main-table route through the NIC taken away. Pure.
 */
import type { ScriptPart } from '../step.js';

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

export function routingScriptPart(mainRoutes: 'remove' | 'keep'): ScriptPart {
  return { variables: [`MAIN_ROUTES=${mainRoutes}`], nicRouting: [NIC_ROUTING] };
}
