#!/bin/bash
# A stand-in for LBNL NHC's driver (`nhc`), which Debian does not package: it gives check files
# NHC's documented calling convention (NHC's README, "Writing Checks"; the `nhc` script) and nothing
# more, so ibfleet's /etc/nhc/scripts/ibfleet.nhc is tested as NHC would run it:
#   - every $INCDIR/*.nhc file is sourced into one bash (INCDIR=/etc/nhc/scripts);
#   - the variables NHC sets for checks: HOSTNAME, HOSTNAME_S, NAME, CONFDIR, INCDIR, TIMEOUT,
#     NHC_RM (empty: run by hand), DEBUG, SILENT, CHECK_DIED, FAIL_CNT;
#   - log MSG (printed unless SILENT), dbg MSG (with DEBUG=1), die RET MSG: the check failed —
#     "ERROR:  nhc:  Health check failed:  MSG" and NHC ends with RET (NHC would also mark the node
#     offline through the resource manager: here there is none);
#   - nhc.conf lines `TARGET || CHECK`, run in order for a target of * or this host's name; a check
#     that returns non-zero without calling die fails the run as NHC's fallback does.
# Usage: nhc-harness.sh [CONFFILE]   (default /etc/nhc/nhc.conf); exit 0 when every check passed.
set -u
NAME=nhc
CONFDIR=/etc/nhc
INCDIR=$CONFDIR/scripts
CONFFILE=${1:-$CONFDIR/nhc.conf}
TIMEOUT=30
NHC_RM=
DEBUG=0
SILENT=0
CHECK_DIED=0
FAIL_CNT=0
read -r HOSTNAME </proc/sys/kernel/hostname
HOSTNAME_S=${HOSTNAME%%.*}
export NAME CONFDIR INCDIR HOSTNAME HOSTNAME_S TIMEOUT NHC_RM DEBUG SILENT

log() { [[ $SILENT == 1 ]] || echo "$*"; }
dbg() { [[ $DEBUG != 1 ]] || echo "DEBUG:  $*"; }
die() {
	local RET=$1
	shift
	CHECK_DIED=1
	log "ERROR:  $NAME:  Health check failed:  $*"
	exit "$RET"
}

for f in "$INCDIR"/*.nhc; do
	[[ -e $f ]] || continue
	# shellcheck disable=SC1090
	. "$f"
done

while IFS= read -r line || [[ -n $line ]]; do
	line=${line%%#*}
	[[ $line == *'||'* ]] || continue
	target=${line%%||*}
	target=${target//[[:space:]]/}
	check=${line#*||}
	[[ $target == '*' || $target == "$HOSTNAME" || $target == "$HOSTNAME_S" ]] || continue
	CHECK_DIED=0
	eval "$check"
	ret=$?
	if [[ $ret -ne 0 && $CHECK_DIED -eq 0 ]]; then
		die "$ret" "Check $check returned $ret"
	fi
done <"$CONFFILE"
log "Node Health Check completed successfully."
exit 0
