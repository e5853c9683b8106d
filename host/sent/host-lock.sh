# shellcheck shell=sh
# The host lock, as a script ibfleet sends defines it (src/render/host-lock.ts calls it): one
# `flock` on /run/ibfleet/lock, held on the shell's fd 9, so two ibfleet runs never change one host
# at once. Its directory is root's alone (0700), so only root can hold it; whoever holds it is named
# only as far as this can tell: an ibfleet run writes its kind, shell pid and run id into the lock
# file, and a holder that did not (a process of root's) is not blamed on ibfleet.

# take_host_lock KIND WAIT RUN_ID — the lock for a run of KIND (deploy, rollback, restore), waiting
# at most WAIT whole seconds (0: not at all) for its holder; exit 75 (EX_TEMPFAIL) when it stays
# held, 70 when its directory is not root's. Reopening fd 9 would drop a lock the shell already
# holds, so where it is held (a change continuing the probe that took it) nothing is done.
take_host_lock() {
	[ "${__ibfleet_lock_held:-}" != 1 ] || return 0
	[ -d /run/ibfleet ] || mkdir -m 0700 /run/ibfleet 2>/dev/null
	if [ -L /run/ibfleet ] || [ ! -d /run/ibfleet ] || [ ! -O /run/ibfleet ]; then
		echo "ibfleet: /run/ibfleet is not a directory of root's; refusing to use the lock in it" >&2
		exit 70
	fi
	exec 9>>/run/ibfleet/lock || exit 70
	if ! flock -n 9; then
		if [ "$2" -eq 0 ]; then
			host_lock_refused 'try again when it is free'
		fi
		echo '@@ibfleet-lock waiting'
		flock -w "$2" 9 || host_lock_refused "waited $2 s for it (--timeout); nothing was changed"
		echo '@@ibfleet-lock taken'
	fi
	printf 'ibfleet %s %s %s\n' "$1" "$$" "$3" >/run/ibfleet/lock
	__ibfleet_lock_held=1
}

# host_lock_refused WHY — the lock stays held: say by whom, as far as the lock file tells, and stop.
host_lock_refused() {
	holder=
	IFS=' ' read -r tag what pid _ </run/ibfleet/lock 2>/dev/null || true
	[ "${tag:-}" = ibfleet ] && [ -n "${pid:-}" ] && [ -d "/proc/${pid}" ] && holder="another ibfleet ${what} (its shell is pid ${pid})"
	echo "ibfleet: the host lock /run/ibfleet/lock is held by ${holder:-a process that is not an ibfleet run (find it with: fuser -v /run/ibfleet/lock)}; $1" >&2
	exit 75
}
