# shellcheck shell=sh
# The rping servers' script (src/render/verify-scripts.ts renderRpingServerScript): waiting for a
# server to listen, and ending the servers. $dir, show: verify.sh's.

# listening PID FILE: until server PID listens (rping -d says `rdma_listen` in FILE) or has ended,
# within 200 ticks of 50 ms: a loaded host starts slowly.
listening() {
	n=0; while [ "$n" -lt 200 ] && kill -0 "$1" 2>/dev/null && ! grep -q rdma_listen "$2"; do sleep 0.05; n=$((n + 1)); done
}

# end_servers PID...: every server listening, so the clients may dial; then, once the controller
# says stop or its connection (and with it this input) goes, each server still running given a
# second to end by itself, then ended.
end_servers() {
	echo @@rping-ready
	read -r _ || true
	n=0
	while [ "$n" -lt 10 ] && running "$@"; do sleep 0.1; n=$((n + 1)); done
	kill "$@" 2>/dev/null
}

# running PID...: whether any of them still runs.
running() {
	for pid in "$@"; do kill -0 "$pid" 2>/dev/null && return 0; done
	return 1
}
