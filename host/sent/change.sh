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

# perl_renames: whether rename_staged renames with perl, which then also gives the staged files their
# modes; where it does not, the change runs chmod itself before (src/render/apply-script.ts).
perl_renames() { command -v perl >/dev/null 2>&1; }

# rename_staged MODE STAGED PATH [MODE STAGED PATH]...: each staged file renamed over its path as
# `mv -fT` does it (rename(2): a directory at the path fails it, a link there is replaced, not
# followed), each one written said; 1 when any failed, the others renamed all the same. Where the
# host has perl (perl-base is essential on Debian and Ubuntu) one perl first gives each staged file
# its MODE (octal; - leaves it), nothing renamed unless every one took it, as the chmod it saves
# does; then renames them all: every process costs each host of a fleet, and a change writes up to
# ten files. Without perl MODE is left alone: perl_renames told the change to chmod. perl is told
# nothing by the environment, and says what it wrote unbuffered (syswrite): once the controller is
# gone the writes fail, and its exit status must stay the renames' (print's failed flush at exit
# would make it 1).
rename_staged() {
	if perl_renames; then
		unset PERL5OPT PERL5LIB PERLLIB
		perl -e 'my ($s, @r) = 0; while (my ($mode, $from, $to) = splice @ARGV, 0, 3) { push @r, $from, $to; next if $mode eq "-" || chmod oct($mode), $from; syswrite STDERR, "ibfleet: cannot set mode $mode of $from: $!\n"; $s = 1 } exit 1 if $s; while (my ($from, $to) = splice @r, 0, 2) { if (rename $from, $to) { syswrite STDOUT, "ibfleet: wrote $to\n" } else { syswrite STDERR, "ibfleet: cannot rename $from to $to: $!\n"; $s = 1 } } exit $s' -- "$@"
		return
	fi
	renamed=0
	while [ "$#" -ge 3 ]; do
		if mv -fT "$2" "$3"; then echo "ibfleet: wrote $3"; else renamed=1; fi
		shift 3
	done
	return "$renamed"
}
