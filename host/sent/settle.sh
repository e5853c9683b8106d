# shellcheck shell=sh
# After a change was cut off from the controller (the connection lost, its output cut, its shell
# killed), the change goes on on the host by itself. src/render/settle-script.ts sends this on a
# new connection, then the probe: read-only, it waits until that change has ended.

# settle_wait RUN_ID SECONDS — returns once change RUN_ID has ended: /run/ibfleet/finished holds
# its id (it ran to its end), or the lock is free while the lock file still names it (it started
# and died). A change that has not taken the lock yet (its script still arriving) is waited for
# too, up to SECONDS; then exit 75 (EX_TEMPFAIL). Creates nothing.
settle_wait() {
	n=0
	while :; do
		finished=; read -r finished </run/ibfleet/finished 2>/dev/null || true
		[ "$finished" = "$1" ] && break
		# A shared lock on a read-only descriptor: granted once no change holds the lock; nothing is created.
		if [ -f /run/ibfleet/lock ]; then
			exec 9</run/ibfleet/lock
			# Waits up to a second while a change holds it; free, it names the last change that took it.
			if flock -s -w 1 9; then
				holder=; IFS=' ' read -r _ _ _ holder </run/ibfleet/lock || true
				if [ "$holder" = "$1" ]; then echo "ibfleet: change $1 ended before it finished" >&2; break; fi
				sleep 1
			fi
			exec 9<&-
		else
			sleep 1
		fi
		n=$((n + 1))
		if [ "$n" -ge "$2" ]; then echo "ibfleet: change $1 has not ended after $2 s" >&2; exit 75; fi
	done
}
