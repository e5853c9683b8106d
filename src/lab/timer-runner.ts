/**
 * One of the lab's stand-ins (docs/lab-internals.md: the stand-ins): systemd's timers, for lab hosts that emulate a
 * systemd host (a network namespace has no init). ibfleet's periodic repair is a systemd timer; in
 * the lab this bash program runs the timers that are *active*, as systemd would: at boot it
 * activates what the host *enables* — timers linked in /etc/systemd/system/timers.target.wants or
 * named by a `Wants=` of a timers.target.d drop-in (how ibfleet enables its repair timer), as
 * timers.target starts them — and afterwards the host's `systemctl` (the lab's stand-in,
 * systemctl-standin.ts) starts, restarts and stops them by their marks in TIMER_STATE_DIR/active.
 * For each active timer it starts the service named by `Unit=` (or the timer's own name)
 * `OnBootSec=` after boot (at once when a (re)start comes later) and `OnUnitActiveSec=` after each
 * start, running its `ExecStart=` and logging to HOST_BOOT_DIR/timers.log. AccuracySec is taken as
 * the poll interval. Only what ibfleet's units use is read: a unit using more fails loudly in the
 * log. It forks nothing while idle (bash built-ins only), so it costs a host nothing between runs.
 * Hosts brought up without systemd (`lab up --without-systemd`) run no timer runner at all.
 */
import { HOST_BOOT_DIR } from './manager-boot.js';

/** How often the runner looks at the active timers: the lab's bound adds this to OnUnitActiveSec. */
export const TIMER_POLL_S = 1;
/** The runner's state: each timer's last start (a file named after the timer) and the active timers' marks (active/NAME). */
export const TIMER_STATE_DIR = `${HOST_BOOT_DIR}/timers`;

/** Where it keeps each timer's last start, its log, and how it waits a poll interval without forking `sleep`. */
const SETUP = `#!/bin/bash
# ibfleet lab: systemd's timers for a host that emulates systemd (see src/lab/timer-runner.ts).
set -u
units=/etc/systemd/system
wants=$units/timers.target.wants
dropins=$units/timers.target.d
state=${TIMER_STATE_DIR}
log=${HOST_BOOT_DIR}/timers.log
mkdir -p "$state/active"
rm -f "$state/.tick"
mkfifo "$state/.tick"
exec 3<>"$state/.tick"
printf -v booted '%(%s)T' -1

`;

/** say TEXT: a line in the timers' log, with the local time. */
const SAY = `say() {
	local now
	printf -v now '%(%F %T)T' -1
	printf '%s %s\\n' "$now" "$*" >>"$log"
}

`;

/** unit_key FILE KEY: systemd's unit files read as far as ibfleet's units need (the last KEY= wins). */
const UNIT_KEY = `# unit_key FILE KEY: the last KEY= value of FILE in REPLY ('' when absent).
unit_key() {
	local line value=
	while IFS= read -r line || [[ -n $line ]]; do
		[[ $line == "$2="* ]] && value=\${line#*=}
	done <"$1"
	REPLY=$value
}

`;

/** seconds SPAN: systemd's time spans, as far as ibfleet's units write them. */
const SECONDS = `# seconds SPAN: a systemd time span ("30", "30s", "1min 30s") in REPLY, or return 1.
seconds() {
	local rest=$1 n unit total=0
	[[ -n $rest ]] || return 1
	while [[ $rest =~ ^[[:space:]]*([0-9]+)[[:space:]]*([a-z]*)(.*)$ ]]; do
		n=\${BASH_REMATCH[1]} unit=\${BASH_REMATCH[2]} rest=\${BASH_REMATCH[3]}
		case $unit in
		'' | s | sec | second | seconds) ;;
		m | min | minute | minutes) n=$((n * 60)) ;;
		h | hr | hour | hours) n=$((n * 3600)) ;;
		*) return 1 ;;
		esac
		total=$((total + n))
	done
	[[ -z \${rest//[[:space:]]/} ]] || return 1
	REPLY=$total
}

`;

/** run TIMER NOW: systemd's decision for one timer — OnBootSec before its first start, OnUnitActiveSec after — and the start. */
const RUN_IF_DUE = `# run TIMER NOW: start the timer's service if it is due.
run() {
	local timer=$1 now=$2 name=\${1##*/} boot_after every unit last due exec
	unit_key "$timer" OnBootSec
	if seconds "$REPLY"; then boot_after=$REPLY; else boot_after=; fi
	unit_key "$timer" OnUnitActiveSec
	if seconds "$REPLY"; then every=$REPLY; else every=; fi
	unit_key "$timer" Unit
	unit=\${REPLY:-\${name%.timer}.service}
	if [[ -f $state/$name ]]; then
		read -r last <"$state/$name"
		[[ -n $every ]] || return 0
		due=$((last + every))
	else
		[[ -n $boot_after ]] || return 0
		due=$((booted + boot_after))
	fi
	((now >= due)) || return 0
	echo "$now" >"$state/$name"
	if [[ ! -f $units/$unit ]]; then
		say "$name: $unit not found"
		return 0
	fi
	unit_key "$units/$unit" ExecStart
	exec=\${REPLY#[-@+!]}
	if [[ -z $exec ]]; then
		say "$unit: no ExecStart="
		return 0
	fi
	say "$name: starting $unit ($exec)"
	local argv
	read -ra argv <<<"$exec"
	"\${argv[@]}" </dev/null >>"$log" 2>&1
	say "$unit: exit $?"
}

`;

/** enabled: what systemd would start at timers.target — timers linked in its .wants or named by a drop-in's Wants=. */
const ENABLED_TIMERS = `# enabled: the enabled timers' files, in ENABLED.
enabled() {
	local f line unit
	ENABLED=()
	for f in "$wants"/*.timer; do
		[[ -f $f ]] && ENABLED+=("$f")
	done
	for f in "$dropins"/*.conf; do
		[[ -f $f ]] || continue
		while IFS= read -r line || [[ -n $line ]]; do
			[[ $line == Wants=* ]] || continue
			# shellcheck disable=SC2086 # Wants= is a list of unit names
			for unit in \${line#Wants=}; do
				[[ $unit == *.timer && -f $units/$unit ]] && ENABLED+=("$units/$unit")
			done
		done <"$f"
	done
}

`;

/** At boot the enabled timers become active (systemctl, the stand-in, starts and stops them later). */
const AT_BOOT = `# At boot, timers.target starts the enabled timers.
enabled
for timer in "\${ENABLED[@]}"; do
	: >"$state/active/\${timer##*/}"
done

`;

/** The loop: every poll interval, each active timer that is due is started. */
const POLL_LOOP = `while :; do
	printf -v now '%(%s)T' -1
	for mark in "$state"/active/*.timer; do
		[[ -f $mark && -f $units/\${mark##*/} ]] && run "$units/\${mark##*/}" "$now"
	done
	read -rt ${TIMER_POLL_S} -u 3 || true
done
`;

/** The whole program, its parts in the order bash needs them: the functions before the code that calls them. */
export function renderTimerRunner(): string {
  return [SETUP, SAY, UNIT_KEY, SECONDS, RUN_IF_DUE, ENABLED_TIMERS, AT_BOOT, POLL_LOOP].join('');
}
