# shellcheck shell=sh
# host/functions/policy-routing.sh — the policy-routing step's functions in rollback and the restore
# (src/script/host-functions.ts gives a script the definitions it calls). The routing program has
# its own per-NIC work (nic_routing); these put the kernel's own state back.
# shellcheck disable=SC2317 # the functions are called from the scripts, not from this file

# del_main_routes SUBNET IFACE: the main-table routes to SUBNET through IFACE deleted, up to 16 (the
# kernel adds one per address; a manager fighting back never holds the script).
del_main_routes() {
	n=0
	while [ "$n" -lt 16 ] && ip -4 route del "$1" dev "$2" table main 2>/dev/null; do n=$((n + 1)); done
}

# main_route_back SUBNET IFACE ADDRESS: where IFACE carries ADDRESS, the main-table route to SUBNET
# through it appended, as the kernel adds it when the address comes up (appended: NIC order holds).
main_route_back() {
	if ip -4 -o addr show dev "$2" 2>/dev/null | grep -q " inet $3/"; then
		ip -4 route append "$1" dev "$2" proto kernel scope link src "$3" && echo "ibfleet: $2: main-table route restored"
	fi
}
