# shellcheck shell=sh
# host/functions/links.sh — the links step's functions in the change scripts ibfleet sends: a
# script that calls one of them gets its definition (src/script/host-functions.ts), never a copy
# written into TypeScript. They read and set the change script's `status` (0 until a step failed).
# shellcheck disable=SC2317 # the functions are called from the change scripts, not from this file

# await_address IFACE ADDR: until the network manager has put ADDR on IFACE and the link is up
# (NetworkManager, networkd and ifupdown's hooks apply asynchronously), at most 30 s.
await_address() {
	poll_until 150 address_up "$@" && return 0
	echo "ibfleet: $1: the network manager did not put $2 on it within 30 s" >&2
	return 1
}

# address_up IFACE ADDR: await_address's look: ADDR is on IFACE and the link is up.
address_up() {
	ip -4 -o addr show dev "$1" 2>/dev/null | grep -q -F " inet $2/" &&
		ip -o link show dev "$1" 2>/dev/null | grep -q -E '[<,]UP[,>]'
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

# network_file IFACE: the .network file systemd-networkd applies to IFACE, as networkctl says it
# ("n/a" for a NIC it does not manage; empty where networkctl cannot say). networkd 247 goes on
# naming the file a NIC had after the file is gone and the NIC unmanaged (`State: off
# (unmanaged)`): such a NIC has none.
network_file() {
	networkctl status "$1" 2>/dev/null | awk '
		/^ *Network File: / { sub(/^ *Network File: /, ""); file = $0 }
		/^ *State: .*\(unmanaged\)/ { unmanaged = 1 }
		END { if (file != "") print (unmanaged ? "n/a" : file) }'
}

# netplan_reload IFACE...: networkd told of netplan's regenerated files. `networkctl reload`
# configures every NIC whose .network file it switches (an unmanaged NIC taking netplan's new file:
# so on networkd 247, 252 and 257 alike); only the others — netplan's file for the NIC already, new
# contents — are reconfigured after it. Reconfiguring a NIC the reload is configuring drops and
# re-adds its addresses while the change goes on, and with an address the kernel drops every route
# that has it as its source: the routing the change adds next failed or was gone. `networkctl
# reload` returns before networkd has switched any file (it asks the kernel for each link and
# switches on the answer), so which NICs the reload switches is told from the file before it, and
# the change waits until networkd names the new one: until then the NIC is not yet being configured.
# Returns 1, having changed nothing, where networkd has no reload (before 244).
netplan_reload() {
	nr_before=";"
	for nr_iface; do nr_before="$nr_before$nr_iface=$(network_file "$nr_iface");"; done
	networkctl reload 2>/dev/null || return 1
	nr_count=$#
	for nr_iface; do
		case "$nr_before" in
		*";$nr_iface="*"/10-netplan-$nr_iface.network;"*) set -- "$@" "$nr_iface" ;;
		# Not switched within 20 s (another file of the host's matches the NIC first): reconfigured, as before.
		*) poll_until 100 network_file_switched "$nr_iface" "$nr_before" || set -- "$@" "$nr_iface" ;;
		esac
	done
	shift "$nr_count"
	if [ "$#" -eq 0 ]; then
		echo 'ibfleet: networkctl reload'
	else
		tell "networkctl reload, networkctl reconfigure $*" "networkctl reconfigure $*" networkctl reconfigure "$@"
	fi
	return 0
}

# network_file_switched IFACE BEFORE: netplan_reload's look: networkctl names a .network file for
# IFACE other than the one BEFORE (`;IFACE=FILE;…`) says it had before the reload.
network_file_switched() {
	case "$2" in
	*";$1=$(network_file "$1");"*) return 1 ;;
	esac
	return 0
}

# netplan_ipoib_mode: whether this host's netplan and systemd-networkd can set an IPoIB mode; says
# why not on stderr. netplan's `infiniband-mode` came with 0.105 (its `infiniband` feature, which
# `netplan info` lists; an older netplan refuses the key) and becomes networkd's `[IPoIB] Mode=`,
# which systemd-networkd reads from 250 (an older one ignores the section: the mode stays as it is,
# as on Ubuntu 22.04's netplan 0.106 with systemd 249).
netplan_ipoib_mode() {
	if ! netplan info 2>/dev/null | grep -q -x ' *- infiniband'; then
		echo "ibfleet: this host's netplan has no infiniband-mode (it came with netplan 0.105), so it cannot set an IPoIB mode; leave mode out of the links settings for this host; nothing was changed" >&2
		return 1
	fi
	nim_systemd=$(networkctl --version 2>/dev/null | sed -n '1s/^systemd \([0-9][0-9]*\).*/\1/p')
	if [ "${nim_systemd:-0}" -lt 250 ]; then
		echo "ibfleet: this host's systemd-networkd ${nim_systemd:-(version unknown)} ignores netplan's infiniband-mode (networkd's [IPoIB] Mode= came with systemd 250), so it cannot set an IPoIB mode; leave mode out of the links settings for this host; nothing was changed" >&2
		return 1
	fi
	return 0
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

# links_sys --all | IFACE...: the probe's section `links sys`: each interface's kernel type, IPoIB
# mode, hardware address and P_Key as sysfs has them (`if IFACE|TYPE|MODE|ADDRESS|PKEY`): the NICs'
# queued for the probe's one awk (rd_part, rd_value: host/sent/probe.sh); --all: every interface
# (onboard, before it knows which are the NICs), read at once with the shell — a host of containers
# has hundreds, and the queue is made for a host's NICs.
links_sys() {
	if [ "${1:-}" = --all ]; then
		s links sys
		for n in /sys/class/net/*; do
			[ -d "$n" ] || continue
			t='' m='' a='' k=''
			read -r t 2>/dev/null <"$n/type"
			read -r m 2>/dev/null <"$n/mode"
			read -r a 2>/dev/null <"$n/address"
			read -r k 2>/dev/null <"$n/pkey"
			printf 'if %s|%s|%s|%s|%s\n' "${n##*/}" "$t" "$m" "$a" "$k"
		done
		return 0
	fi
	rd_mark links sys
	for i in "$@"; do
		n=/sys/class/net/$i
		[ -d "$n" ] || continue
		rd_part "if $i|" "$n/type"
		rd_part '|' "$n/mode"
		rd_part '|' "$n/address"
		rd_value '|' "$n/pkey"
	done
}

# links_nm FIELDS OLDER-FIELDS: the probe's section `links nm`, where NetworkManager runs: every
# profile's uuid and file (`/run/…`: in memory only), then their properties — FIELDS, or
# OLDER-FIELDS from an nmcli that refuses a field it does not know (match came with 1.14). The
# FILENAME column came with 1.12 (Ubuntu 18.04 has 1.10), and nmcli refuses the whole listing for a
# column it does not know: there the uuids alone, and no profile is told in memory only.
links_nm() {
	[ -d /run/NetworkManager ] && command -v nmcli >/dev/null 2>&1 || return 0
	u=$(nmcli -t -f UUID,FILENAME connection show 2>/dev/null) || u=$(nmcli -t -f UUID connection show 2>/dev/null) || return 0
	s links nm
	nm_fields=$1 nm_older=$2
	set --
	while IFS=: read -r v f; do [ -n "$v" ] && echo "file $v $f" && set -- "$@" uuid "$v"; done <<IBFLEET_NM
$u
IBFLEET_NM
	[ "$#" -eq 0 ] || nmcli -t -f "$nm_fields" connection show "$@" 2>/dev/null || nmcli -t -f "$nm_older" connection show "$@" 2>/dev/null
}

# links_source: the probe's section `links source`: the source lines of /etc/network/interfaces,
# each behind | (src/facts/probe-format.ts CONTENT_PREFIX), read with the shell alone.
links_source() {
	s links source
	[ -r /etc/network/interfaces ] || return 0
	while IFS= read -r l || [ -n "$l" ]; do
		case $l in source* | [[:space:]]*source*) printf '|%s\n' "$l" ;; esac
	done </etc/network/interfaces
}

# links_roce: the probe's section `links roce`: each RDMA port's default_roce_mode (the RDMA CM's configfs).
links_roce() {
	s links roce
	for f in /sys/kernel/config/rdma_cm/*/ports/*/default_roce_mode; do [ -f "$f" ] && { v=; read -r v <"$f"; echo "$f $v"; }; done
}
