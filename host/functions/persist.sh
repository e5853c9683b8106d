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
	n=0
	seen=0
	while [ "$n" -lt 100 ]; do
		if ip -4 rule show | sed 's/[[:space:]][[:space:]]*/ /g; s/ $//' | grep -q -x -F -e "$4: from $2 lookup $3" -e "$4: from $2 lookup $3 proto static" &&
			ip -4 route show table "$3" 2>/dev/null | grep -q -F " dev $1 " &&
			ip -4 -o addr show dev "$1" 2>/dev/null | grep -q -F " inet $2/"; then
			seen=$((seen + 1))
			[ "$seen" -ge 2 ] && return 0
		else
			seen=0
		fi
		sleep 0.2
		n=$((n + 1))
	done
	echo "ibfleet: $1: the network manager did not put the rule, table $3 and address $2 in place within 20 s" >&2
	return 1
}

# await_gone IFACE ADDR TABLE PRIORITY: until systemd-networkd has taken away the rule it made from
# ibfleet's netplan file and carries the NIC's address again (reconfiguring a link, it drops its
# addresses and rules first and adds back what its configuration says), at most 20 s.
await_gone() {
	n=0
	while [ "$n" -lt 100 ]; do
		if ! ip -4 rule show | sed 's/[[:space:]][[:space:]]*/ /g; s/ $//' | grep -q -x -F "$4: from $2 lookup $3 proto static" &&
			ip -4 -o addr show dev "$1" 2>/dev/null | grep -q -F " inet $2/"; then
			return 0
		fi
		sleep 0.2
		n=$((n + 1))
	done
	echo "ibfleet: $1: systemd-networkd did not finish configuring it without ibfleet's netplan file within 20 s" >&2
	return 1
}

# await_rule_gone IFACE ADDR TABLE PRIORITY: until systemd-networkd has taken away the rule it
# made from ibfleet's netplan file (the NIC keeps no address: nothing of the host's configures it), at most 20 s.
await_rule_gone() {
	n=0
	while [ "$n" -lt 100 ]; do
		ip -4 rule show | sed 's/[[:space:]][[:space:]]*/ /g; s/ $//' | grep -q -x -F "$4: from $2 lookup $3 proto static" || return 0
		sleep 0.2
		n=$((n + 1))
	done
	echo "ibfleet: $1: systemd-networkd did not take its rule away without ibfleet's netplan file within 20 s" >&2
	return 1
}

# hand_over IFACE ADDR TABLE: a NIC the network manager takes over: every rule for its address or
# table and its table emptied, so nothing the hook made stays beside what the manager puts in place.
hand_over() {
	del_rules from "$2"
	del_rules lookup "$3"
	ip -4 route flush table "$3" 2>/dev/null
}
