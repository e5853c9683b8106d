# shellcheck shell=sh
# What a restore after a failed verification (src/render/restore-script.ts), or a change that
# failed, puts ibfleet's files back with. $PREVIOUS and $REPLACED: change.sh's.

# put_back PATH MODE SHA256: the file as it was, from the copy the change kept; staged one
# directory up (outside any dispatcher's directory) and renamed into place. A symbolic link was
# kept as the link (the probe hashed what it points to): the link goes back, and nothing is
# chmod-ed through one — chmod follows a link to its target. Once the path is the admin's link again,
# its copies go (forget_copies): left recorded under $REPLACED it would come back at a later
# rollback over whatever the admin put there since; a first deploy that failed leaves nothing.
put_back() {
	if sum=$(sha256sum <"$1" 2>/dev/null) && [ "${sum%% *}" = "$3" ]; then
		if [ ! -L "$1" ]; then chmod "$2" "$1" || return 1; fi
		forget_copies "$1"
		return
	fi
	kept="$PREVIOUS$1"
	sum=$(sha256sum <"$kept" 2>/dev/null) || { echo "ibfleet: cannot restore $1: no copy kept in $PREVIOUS" >&2; return 1; }
	if [ "${sum%% *}" != "$3" ]; then
		echo "ibfleet: cannot restore $1: the copy kept in $PREVIOUS is not the version probed before" >&2
		return 1
	fi
	dir=${1%/*}
	staged="${dir%/*}/.${1##*/}.ibfleet-restore.$$"
	rm -f "$staged"
	if [ -L "$kept" ]; then
		cp -P "$kept" "$staged" && mv -fT "$staged" "$1"
	else
		cp -p "$kept" "$staged" && chmod "$2" "$staged" && mv -fT "$staged" "$1"
	fi || { rm -f "$staged"; return 1; }
	echo "ibfleet: restored $1"
	forget_copies "$1"
}

# remove_new PATH: a file the probe found absent, gone again (a link too), said when it was there.
remove_new() {
	if [ -e "$1" ] || [ -L "$1" ]; then
		rm -f "$1" || return 1
		echo "ibfleet: removed $1"
	fi
}

# forget_copies PATH: where PATH is the admin's link again, the copies this change kept of it
# (keep: under $PREVIOUS and $REPLACED) removed. A file there is ibfleet's own, from an earlier
# deploy: its copy under $PREVIOUS stays as it was before this change (the restore puts the host
# back, ibfleet's kept versions included), and so does the record of the link that deploy replaced.
forget_copies() {
	[ -L "$1" ] || return 0
	rm -f "$PREVIOUS$1" "$REPLACED$1"
}
