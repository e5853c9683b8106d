# shellcheck shell=sh
# The read-only probe's parts that are the same on every host (src/render/probe-script.ts sends
# them, then calls them inside its `probe_output=$(...)` with the host's words): how a section
# starts, how a file is printed, and the sections whose commands name no NIC of the host. Every
# process it starts costs the host a fork and an exec, so it reads files with the shell's own
# `read`. What it prints, src/facts/ parses.

# s NAME...: a section starts.
s() { printf '@@ibfleet %s\n' "$*"; }
# rd FILE: print a text file with the shell alone (no cat), ending its last line, each line behind
# | so that no line of the file can pass for one of the probe's own (a section mark, #file).
rd() {
	[ -f "$1" ] && [ -r "$1" ] || return 0
	while IFS= read -r l || [ -n "$l" ]; do printf '|%s\n' "$l"; done <"$1"
}

# probe_host VERSION: the probe's version, who runs it, the machine's own name (onboard writes it
# to the inventory unless told another) and its OS release.
probe_host() {
	s probe "$1"
	s uid; while read -r k _ e _; do [ "$k" = Uid: ] && { echo "$e"; break; }; done </proc/self/status
	s hostname; rd /proc/sys/kernel/hostname
	s os; rd /etc/os-release
}

# probe_ip ROUTE-GETS [IFACE PEER FROM]...: iproute2's links, addresses, rules, every table's routes
# and ROUTE-GETS (one `route get PEER from FROM` a line, per NIC) in one `ip -batch`, then which
# NIC each route get was for. A failed `route get` says why only on stderr, and fails the batch
# (-force runs the rest): then every one is asked again on its own, its reason kept, in a section
# that overrides it. The batch's own stderr is dropped: `Command failed -:6` for a NIC without its
# address yet (every fresh host) would otherwise be the last thing a change printed, quoted in
# place of a tool's words.
probe_ip() {
	s ip; ip -o -4 -force -batch - 2>/dev/null <<IBFLEET_IP
link show
addr show
rule show
route show table all
$1
IBFLEET_IP
	ip_status=$?
	shift
	s route-get-from; printf '%s %s %s\n' "$@"
	[ "$ip_status" -eq 0 ] && return 0
	while [ "$#" -ge 3 ]; do
		s route-get "$1"; ip -4 route get "$2" from "$3" 2>&1
		shift 3
	done
}

# probe_files HOW LINES PATH...: of ibfleet's files (the PATHs that are regular files) the mode,
# owner, kind and SHA-256 in one stat and one sha256sum; then each one whole (HOW: content) or its
# first LINES lines (HOW: head), behind |.
probe_files() {
	how=$1 lines=$2
	shift 2
	for p in "$@"; do
		shift
		[ -f "$p" ] && set -- "$@" "$p"
	done
	s files; if [ "$#" -gt 0 ]; then stat -c '%a %u %F|%n' -- "$@"; sha256sum -- "$@"; fi
	if [ "$how" = content ]; then
		for p in "$@"; do s content "$p"; rd "$p"; done
	else
		for p in "$@"; do s head "$p"; n=0; [ -r "$p" ] && while [ "$n" -lt "$lines" ] && IFS= read -r l; do printf '|%s\n' "$l"; n=$((n + 1)); done <"$p"; done
	fi
}

# probe_runtime: which of the managers' runtime directories (the runtime state of each) and hook
# directories are there, ifupdown's state of its interfaces, and the tools the host has; then the
# probe's end.
probe_runtime() {
	s runtime; for d in /run/NetworkManager /run/systemd/netif /run/systemd/system /etc/networkd-dispatcher /etc/networkd-dispatcher/routable.d /etc/NetworkManager/dispatcher.d /etc/network/if-up.d; do [ -d "$d" ] && echo "dir $d"; done
	for f in /run/network/ifstate*; do [ -f "$f" ] || continue; v=; while IFS= read -r l || [ -n "$l" ]; do v="$v$l "; done <"$f"; echo "ifstate $f $v"; done
	s tools; for t in flock sha256sum stat networkd-dispatcher NetworkManager nmcli ifup netplan networkctl ping rping; do command -v "$t" >/dev/null 2>&1 && echo "$t"; done
	s end
}
