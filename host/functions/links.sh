# shellcheck shell=sh
# host/functions/links.sh — the links step's functions in the change scripts ibfleet sends: a
# script that calls one of them gets its definition (src/script/host-functions.ts), never a copy
# written into TypeScript. They read and set the change script's `status` (0 until a step failed).
# shellcheck disable=SC2317 # the functions are called from the change scripts, not from this file

# await_address IFACE ADDR: until the network manager has put ADDR on IFACE and the link is up
# (NetworkManager, networkd and ifupdown's hooks apply asynchronously), at most 30 s.
await_address() {
	n=0
	while [ "$n" -lt 150 ]; do
		if ip -4 -o addr show dev "$1" 2>/dev/null | grep -q -F " inet $2/" &&
			ip -o link show dev "$1" 2>/dev/null | grep -q -E '[<,]UP[,>]'; then
			return 0
		fi
		sleep 0.2
		n=$((n + 1))
	done
	echo "ibfleet: $1: the network manager did not put $2 on it within 30 s" >&2
	return 1
}

# tell DONE FAILED CMD...: run a network manager's command unless one failed before; say DONE
# when it succeeds, else FAILED and what the command said (its own words, on one line) on stderr.
# Once one failed nothing more is told (the restore puts back what was), and the host fails at
# once with the tool's own words — which the summary quotes — not after waiting for addresses
# that cannot come.
tell() {
	[ "$status" -eq 0 ] || return 1
	tell_done=$1 tell_failed=$2
	shift 2
	# Into a file, not a command substitution: that would wait for whatever the command left running with its output (ifup's hooks may).
	tell_log=$(mktemp) || { status=1; return 1; }
	"$@" >"$tell_log" 2>&1
	tell_rc=$?
	if [ "$tell_rc" -eq 0 ]; then
		rm -f "$tell_log"
		printf 'ibfleet: %s\n' "$tell_done"
		return 0
	fi
	status=1
	tell_out=$(tr -s '\n\t' '  ' <"$tell_log")
	rm -f "$tell_log"
	printf 'ibfleet: %s failed (exit %s): %s\n' "$tell_failed" "$tell_rc" "${tell_out:-it printed nothing}" >&2
	return 1
}

# new_keyfile PATH TEXT: a profile's keyfile, root's alone (NetworkManager ignores another's),
# staged under a hidden name (which NetworkManager skips) and renamed; never over a file that is
# there. NetworkManager before 1.42: nmcli gives no new profile the uuid asked.
new_keyfile() {
	if [ -e "$1" ] || [ -L "$1" ]; then
		echo "$1 is there already, and is no profile ibfleet knows" >&2
		return 1
	fi
	nk_staged="${1%/*}/.ibfleet-new.$$"
	if (umask 077 && printf '%s' "$2" >"$nk_staged") && mv -f "$nk_staged" "$1"; then return 0; fi
	rm -f "$nk_staged"
	return 1
}
