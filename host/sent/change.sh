# shellcheck shell=sh
# The start of every change script ibfleet sends (deploy, rollback, restore; src/render/apply-script.ts
# renderPrelude), before it takes the host lock: finish whatever happens, and the helpers that keep
# the versions a change replaces. Every change runs as root.
set -u
export LC_ALL=C PATH=/usr/sbin:/usr/bin:/sbin:/bin
# Finish what was started even if the connection drops or the user presses Ctrl-C: a host is
# never left half-changed. Once the controller is gone every echo fails; no step's success may
# depend on one.
trap '' HUP INT TERM PIPE
# shellcheck disable=SC2034 # put_back and give_back (their own files) read them too
PREVIOUS=/etc/ibfleet/previous
# shellcheck disable=SC2034
REPLACED=/etc/ibfleet/replaced

# keep PATH...: copy the current versions under $PREVIOUS, without execute bits so no dispatcher runs them.
# A symbolic link is kept as the link itself (cp -P), never as a copy of what it points to, and
# its mode is left alone (chmod follows a link). The earlier copy is removed first: cp writes
# through a link it finds at its destination. A link is an admin's (ibfleet writes only files): it
# is also kept under $REPLACED, which no later deploy overwrites, for rollback to put back.
keep() {
	for f in "$@"; do
		[ -f "$f" ] || [ -L "$f" ] || continue
		mkdir -p "$PREVIOUS${f%/*}" && rm -f "$PREVIOUS$f" || return 1
		if [ -L "$f" ]; then
			cp -P "$f" "$PREVIOUS$f" || return 1
			mkdir -p "$REPLACED${f%/*}" && rm -f "$REPLACED$f" && cp -P "$f" "$REPLACED$f" || return 1
		elif ! { cp -p "$f" "$PREVIOUS$f" && chmod a-x "$PREVIOUS$f"; }; then return 1; fi
	done
}

# retire PATH: remove a file ibfleet installed (or a link in its place), keeping its last version.
retire() {
	[ -f "$1" ] || [ -L "$1" ] || return 0
	keep "$1" && rm -f "$1" || return 1
	echo "ibfleet: removed $1"
	return 0
}
