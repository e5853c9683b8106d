# shellcheck shell=sh
# The start of every script verify sends a host (src/render/verify-scripts.ts): $dir, a directory
# of its own, gone when the script ends, where each job writes its output; and how a job is run and
# shown. What they print, src/plan/verify-output.ts reads.
set -u
export LC_ALL=C PATH=/usr/sbin:/usr/bin:/sbin:/bin
dir=$(mktemp -d "${TMPDIR:-/tmp}/ibfleet-verify.XXXXXX") || exit 70
trap 'rm -rf "$dir"' EXIT

# job ID COMMAND...: COMMAND's output into $dir/ID, its exit status into $dir/ID.rc.
job() {
	id=$1
	shift
	"$@" >"$dir/$id" 2>&1
	echo $? >"$dir/$id.rc"
}

# show ID...: each job's exit status and output, between its marks, so that jobs run at once never
# interleave.
show() {
	for id in "$@"; do printf '@@cell %s %s\n' "$id" "$(cat "$dir/$id.rc")"; cat "$dir/$id"; echo; echo @@cell-end; done
}
