# shellcheck shell=sh
# host/functions/poll.sh — what the steps' waits share in the change scripts ibfleet sends (a script
# that calls a wait gets these too: src/script/host-functions.ts follows calls). NetworkManager,
# systemd-networkd and ifupdown's hooks apply asynchronously; a wait looks again every 0.2 s.
# shellcheck disable=SC2317 # the functions are called from the change scripts, not from this file

# poll_until TRIES CMD...: run CMD until it succeeds, at most TRIES times with 0.2 s after each
# failure (TRIES 100: 20 s); fails when the last try did. A wait says itself what it waited for.
poll_until() {
	pu_left=$1
	shift
	while [ "$pu_left" -gt 0 ]; do
		"$@" && return 0
		sleep 0.2
		pu_left=$((pu_left - 1))
	done
	return 1
}

# rules_flat: `ip -4 rule show` with each run of blanks one space and no blank at the end of a line,
# so a rule can be matched as one whole line (`grep -x -F`) whatever spacing the iproute2 release prints.
rules_flat() {
	ip -4 rule show | sed 's/[[:space:]][[:space:]]*/ /g; s/ $//'
}
