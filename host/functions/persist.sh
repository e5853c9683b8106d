# shellcheck shell=sh
# host/functions/persist.sh — the persist step's functions in the change scripts ibfleet sends (a
# script that calls one gets its definition: src/script/host-functions.ts). The waits: NetworkManager
# and systemd-networkd apply asynchronously, and the probe that follows a change must see what
# they did. They read and set the change script's `status`.
# shellcheck disable=SC2317 # the functions are called from the change scripts, not from this file

# await_routing IFACE ADDR TABLE PRIORITY: until the manager's rule and table route are there,
# with the NIC's address (NetworkManager and networkd apply asynchronously), at most 20 s.
# Seen twice in a row: networkd, told to reload and then to reconfigure, may put everything in
# place once and take it away again to configure the NIC a second time.
await_routing() {
	routing_seen=0
	poll_until 100 routing_held "$@" && return 0
	echo "ibfleet: $1: the network manager did not put the rule, table $3 and address $2 in place within 20 s" >&2
	return 1
}

# routing_held IFACE ADDR TABLE PRIORITY: await_routing's look: the rule, the table's route through
# IFACE and the address are there now and were at the look before (routing_seen counts the looks).
routing_held() {
	if rules_flat | grep -q -x -F -e "$4: from $2 lookup $3" -e "$4: from $2 lookup $3 proto static" &&
		ip -4 route show table "$3" 2>/dev/null | grep -q -F " dev $1 " &&
		ip -4 -o addr show dev "$1" 2>/dev/null | grep -q -F " inet $2/"; then
		routing_seen=$((routing_seen + 1))
		[ "$routing_seen" -ge 2 ]
		return
	fi
	routing_seen=0
	return 1
}

# await_gone IFACE ADDR TABLE PRIORITY: until systemd-networkd has taken away the rule and table
# route it made from ibfleet's netplan file and carries the NIC's address again (reconfiguring a
# link, it drops its addresses, routes and rules first and adds back what its configuration says),
# at most 20 s. `networkctl reload` and `reconfigure` return before networkd has done it (it asks the
# kernel for the link first and reconfigures on the answer): a look that came too early would let the
# routing script put the hook's routing in place just before networkd drops the address, and the
# kernel the table route with it.
await_gone() {
	poll_until 100 networkd_gone_address_back "$@" && return 0
	echo "ibfleet: $1: systemd-networkd did not finish configuring it without ibfleet's netplan file within 20 s" >&2
	return 1
}

# networkd_gone_address_back IFACE ADDR TABLE PRIORITY: await_gone's look: networkd's rule and
# table route are gone and the address is back.
networkd_gone_address_back() {
	! networkd_routing_there "$@" && ip -4 -o addr show dev "$1" 2>/dev/null | grep -q -F " inet $2/"
}

# await_rule_gone IFACE ADDR TABLE PRIORITY: until systemd-networkd has taken away the rule and
# table route it made from ibfleet's netplan file (the NIC keeps no address: nothing of the host's
# configures it), at most 20 s.
await_rule_gone() {
	poll_until 100 networkd_routing_gone "$@" && return 0
	echo "ibfleet: $1: systemd-networkd did not take its rule and table route away without ibfleet's netplan file within 20 s" >&2
	return 1
}

# networkd_routing_there IFACE ADDR TABLE PRIORITY: what systemd-networkd made from ibfleet's netplan
# file is in the kernel: its rule (`proto static` from networkd 248 on) or its table route through
# IFACE (`proto static` on every version; the hook's is `proto kernel`). networkd 247 (Debian 11)
# tags no rule and keeps it after a reconfigure: there only the route tells that networkd has not
# dropped the NIC's configuration yet.
networkd_routing_there() {
	rules_flat | grep -q -x -F "$4: from $2 lookup $3 proto static" ||
		[ -n "$(ip -4 route show table "$3" proto static dev "$1" 2>/dev/null)" ]
}

# networkd_routing_gone IFACE ADDR TABLE PRIORITY: await_rule_gone's look: neither is.
networkd_routing_gone() {
	! networkd_routing_there "$@"
}

# hand_over IFACE ADDR TABLE: a NIC the network manager takes over: every rule for its address or
# table and its table emptied, so nothing the hook made stays beside what the manager puts in place.
hand_over() {
	del_rules from "$2"
	del_rules lookup "$3"
	ip -4 route flush table "$3" 2>/dev/null
}
