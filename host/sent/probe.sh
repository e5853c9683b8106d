# shellcheck shell=sh
# The read-only probe's parts that are the same on every host (src/render/probe-script.ts sends
# them, then calls them inside its `probe_output=$(...)` with the host's words): how a section
# starts, how files are read, and the sections whose commands name no NIC of the host. What it
# prints, src/facts/ parses.
#
# Every process the probe starts costs the host a fork and an exec (about a millisecond), and the
# shell's own `read` takes a file one byte per read() call, with an open, dup2, fcntl and close for
# each `<file` (dash: 4 000 calls for a deployed host's files and sysfs values, most of the probe's
# 15 ms of CPU). So the probe queues what it reads of files (rd_later and the helpers below) and one
# awk reads all of it at the end (rd_flush, from probe_runtime): the sections it prints are the
# same, only later in the output (the parser keys them by name). Where awk fails (missing, or a
# file that errors when read: mawk then stops), the shell reads the whole queue again the old way,
# and its sections, printed last, are the ones the parser keeps.

# s NAME...: a section starts.
s() { printf '@@ibfleet %s\n' "$*"; }

rd_q='' rd_qq='' rd_c=0
rd_nl='
'
rd_tab='	'
# rd_later OP TEXT PATH: queue a reading for rd_flush, one a line `OP<tab>TEXT<tab>PATH` (TEXT holds
# no tab and no newline, PATH no newline: ibfleet's own paths, /proc and /sys; rd_line and the
# netplan files are checked). OP:
#   Ln  the line TEXT (a section mark), then PATH's first n lines (0: all), each behind | so that no
#       line of a file can pass for one of the probe's own, a last line without newline ended too;
#   V   TEXT and PATH's first line as one line, the value trimmed of blanks as `read` leaves it
#       (empty where it cannot be read); W the same without ending the line; S as V, only where
#       the line could be read;
#   G   the line `TEXT PATH`, then the file whole;
#   E, R  a table of an RDMA port (PATH: `PORT<tab>INDEX...`): `TEXT INDEX VALUE` for each entry in
#       use, E of its P_Keys (not 0x0000), R of its GIDs (not the zero GID) with each one's type.
# A value (V, W, S, E, R) is one line of at most 4 096 characters, as a sysfs attribute is one page
# at most: a longer one is read as none (empty; S, E and R leave it out), so a hostile file cannot
# make the probe print more than the controller reads (a 2 MB GID entry: the probe was cut).
# The shell copies a string to append to it: the queue grows in a short string, moved to the long
# one every 32 readings, so that a 16-NIC host's 400 cost no more each than the lab's 100.
rd_later() {
	rd_q="$rd_q$1$rd_tab$2$rd_tab$3$rd_nl"
	rd_c=$((rd_c + 1))
	[ "$rd_c" -lt 32 ] || { rd_qq=$rd_qq$rd_q rd_q='' rd_c=0; }
}
# rd_mark NAME...: a queued section starts. rd_line TEXT: a line of the probe's own (left out where
# a name the kernel gave puts a newline in it).
rd_mark() { rd_later L0 "@@ibfleet $*" -; }
rd_line() { case $1 in *"$rd_nl"*) ;; *) rd_later L0 "$1" - ;; esac; }
# rd_whole NAME PATH: the section NAME, with PATH whole where it is a regular file.
rd_whole() { if [ -f "$2" ]; then rd_later L0 "@@ibfleet $1" "$2"; else rd_mark "$1"; fi; }
# rd_value TEXT PATH, rd_part TEXT PATH: V and W.
rd_value() { rd_later V "$1" "$2"; }
rd_part() { rd_later W "$1" "$2"; }
# rd_table E|R TEXT PORT: E or R over PORT's pkeys/ or gids/, the entries in the order ls shows them.
rd_table() {
	rd_tl=
	if [ "$1" = E ]; then set -- "$@" "$3"/pkeys/*; else set -- "$@" "$3"/gids/*; fi
	rd_to=$1 rd_tt=$2 rd_tp=$3
	shift 3
	for k; do rd_tl="$rd_tl ${k##*/}"; done
	rd_later "$rd_to" "$rd_tt" "$rd_tp$rd_tab$rd_tl"
}

# The queue's reader: one awk, the queue its argument. It never reads stdin (the shell's script may
# come on it), and closes each file: the same file may be read twice (the ownership record whole,
# and its head).
# shellcheck disable=SC2016 # awk's $ are awk's
rd_awk='function val(f, v) {
	v = ""; got = 0
	if (f != "-") { got = (getline v < f); close(f) }
	if (got <= 0 || length(v) > 4096) { got = 0; return "" }
	sub(/^[ \t]+/, "", v); sub(/[ \t]+$/, "", v)
	return v
}
BEGIN {
	z["0x0000"] = z["0000:0000:0000:0000:0000:0000:0000:0000"] = z[""] = 1
	n = split(ARGV[1], q, "\n")
	for (i = 1; i <= n; i++) {
		if (q[i] == "") continue
		a = index(q[i], "\t"); o = substr(q[i], 1, a - 1); r = substr(q[i], a + 1)
		a = index(r, "\t"); t = substr(r, 1, a - 1); f = substr(r, a + 1)
		if (o ~ /^L/ || o == "G") {
			print (o == "G" ? t " " f : t)
			if (f == "-") continue
			m = substr(o, 2) + 0; c = 0
			while ((m == 0 || c < m) && (getline l < f) > 0) { print "|" l; c++ }
			close(f)
		} else if (o == "E" || o == "R") {
			a = index(f, "\t"); p = substr(f, 1, a - 1); k = split(substr(f, a + 1), x, " ")
			for (j = 1; j <= k; j++) {
				v = val(p (o == "E" ? "/pkeys/" : "/gids/") x[j])
				if (v in z) continue
				print t " " x[j] " " v (o == "R" ? " " val(p "/gid_attrs/types/" x[j]) : "")
			}
		} else {
			v = val(f)
			if (o == "S" && got <= 0) continue
			printf "%s%s%s", t, v, (o == "W" ? "" : "\n")
		}
	}
	exit
}'

# rd_shell: what rd_awk prints, with the shell alone.
rd_shell() {
	IFS=$rd_nl
	set -f
	# shellcheck disable=SC2086 # one entry a line, each a word; set -f: no pattern
	set -- $rd_qq$rd_q
	IFS=' 	
'
	for e; do
		o=${e%%"$rd_tab"*} e=${e#*"$rd_tab"}
		t=${e%%"$rd_tab"*} f=${e#*"$rd_tab"}
		case $o in
		L* | G)
			if [ "$o" = G ]; then printf '%s %s\n' "$t" "$f"; else printf '%s\n' "$t"; fi
			m=${o#[LG]} c=0
			[ "$f" = - ] || while { [ "${m:-0}" -eq 0 ] || [ "$c" -lt "$m" ]; } && { IFS= read -r l || [ -n "$l" ]; }; do
				printf '|%s\n' "$l"
				c=$((c + 1))
			done 2>/dev/null <"$f"
			;;
		E | R)
			p=${f%%"$rd_tab"*}
			for x in ${f#*"$rd_tab"}; do
				v=
				if [ "$o" = E ]; then read -r v 2>/dev/null <"$p/pkeys/$x"; else read -r v 2>/dev/null <"$p/gids/$x"; fi
				[ "${#v}" -le 4096 ] || v=
				case $v in '' | 0x0000 | 0000:0000:0000:0000:0000:0000:0000:0000) continue ;; esac
				if [ "$o" = E ]; then printf '%s %s %s\n' "$t" "$x" "$v"; else
					y='' && read -r y 2>/dev/null <"$p/gid_attrs/types/$x"
					[ "${#y}" -le 4096 ] || y=
					printf '%s %s %s %s\n' "$t" "$x" "$v" "$y"
				fi
			done
			;;
		*)
			v='' r=1
			[ "$f" = - ] || { read -r v 2>/dev/null <"$f" && r=0; }
			[ "${#v}" -le 4096 ] || v='' r=1
			case $o:$r in S:1) ;; W:*) printf '%s%s' "$t" "$v" ;; *) printf '%s%s\n' "$t" "$v" ;; esac
			;;
		esac
	done
	set +f
}

# rd_flush: print what was queued, in one awk; or where awk is missing or fails, with the shell: its
# sections come after what awk printed, from a new line (awk may have stopped within one), and the
# parser keeps the last of each.
rd_flush() {
	[ -n "$rd_qq$rd_q" ] || return 0
	awk "$rd_awk" "$rd_qq$rd_q" </dev/null 2>/dev/null || { echo && rd_shell; }
	rd_q='' rd_qq='' rd_c=0
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
# owner, kind and SHA-256 in one stat and one sha256sum; then each one whole (HOW: content), its
# first LINES lines (HOW: head), behind |, or no more (HOW: sums, the probe closing a change).
probe_files() {
	how=$1 lines=$2
	shift 2
	for p in "$@"; do
		shift
		[ -f "$p" ] && set -- "$@" "$p"
	done
	s files; if [ "$#" -gt 0 ]; then stat -c '%a %u %F|%n' -- "$@"; sha256sum -- "$@"; fi
	[ "$how" != sums ] || return 0
	[ "$how" = content ] && lines=0
	for p in "$@"; do rd_later "L$lines" "@@ibfleet $how $p" "$p"; done
}

# probe_runtime: which of the managers' runtime directories (the runtime state of each) and hook
# directories are there (a change creates hook directories) and ifupdown's state of its interfaces
# (the links step's ifup changes it); then what was queued, and the probe's end.
probe_runtime() {
	s runtime; for d in /run/NetworkManager /run/systemd/netif /run/systemd/system /etc/networkd-dispatcher /etc/networkd-dispatcher/routable.d /etc/NetworkManager/dispatcher.d /etc/network/if-up.d; do [ -d "$d" ] && echo "dir $d"; done
	for f in /run/network/ifstate*; do [ -f "$f" ] || continue; v=; while IFS= read -r l || [ -n "$l" ]; do v="$v$l "; done <"$f"; echo "ifstate $f $v"; done
	rd_flush
	s end
}
