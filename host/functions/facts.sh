# shellcheck shell=sh
# host/functions/facts.sh — what more than one step's fact reads in the probe (src/script/host-functions.ts
# gives a script the definitions it calls). `s` is the probe's section mark (render/probe-script.ts).
# shellcheck disable=SC2317 # the functions are called from the probe, not from this file

# rd_section SECTION MAX PATH: where PATH is a readable file, the section SECTION with its first MAX
# lines, each behind | (src/facts/probe-format.ts CONTENT_PREFIX): a record ibfleet wrote, whose
# length a host cannot make the probe print more of. Queued: the probe's rd_flush prints it
# (host/sent/probe.sh).
rd_section() {
	[ -f "$3" ] && [ -r "$3" ] || return 0
	rd_later "L$2" "@@ibfleet $1" "$3"
}
