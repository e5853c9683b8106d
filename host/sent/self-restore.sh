# shellcheck shell=sh
# A deploy's change that fails puts back what it changed, here and now: the controller may be gone
# (cut off, timed out, killed), and the host must end as it was or fully applied either way.
# src/render/apply-script.ts sends this, and restore_change: the restore's lines for this change.

# self_restore: when the change failed ($status not 0), restore_change run; what the change says
# before and after is what the controller reads the outcome by. The exit status stays the failure's.
# What the restore says on stderr goes to stdout, after the line that says it began: the message
# quotes the change's own failure from stderr, never the restore's (a netplan generate that fails
# again there, on the host's own file that made the change fail).
self_restore() {
	[ "$status" -ne 0 ] || return 0
	failed=$status
	status=0
	echo 'ibfleet: the change failed; putting the host back as it was'
	restore_change 2>&1
	if [ "$status" -eq 0 ]; then echo 'ibfleet: the change failed and put the host back as it was'; else echo 'ibfleet: putting the host back did not finish' >&2; fi
	status=$failed
}
