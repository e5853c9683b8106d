/**
 * One of the lab's stand-ins (docs/lab-internals.md: the stand-ins): `systemctl` for a lab host that emulates a
 * systemd host. A network namespace has no init, so such a host's "systemd" is the lab's timer runner
 * (timer-runner.ts), and its `systemctl` — this bash program, bind-mounted over the real one in the
 * host's own mount namespace — answers what ibfleet asks of systemd, by the runner's state:
 *
 * - `is-system-running`: `running` (the host runs "systemd");
 * - `daemon-reload`: accepted and logged (the runner reads unit files at every poll);
 * - `start`, `restart`, `stop`, `is-active [--quiet]` of timers: a timer is active while its mark
 *   is in HOST_BOOT_DIR/timers/active (the runner marks the enabled ones at boot, as timers.target
 *   starts them); `start`/`restart` of a timer whose unit file is missing fail as systemd's do, and a
 *   (re)start makes the runner start the service once OnBootSec has passed — at once, later in a
 *   boot — as systemd does with a monotonic timer whose time is already past.
 *
 * Anything else fails loudly (exit 1, "not emulated"), so a test never passes on an answer systemd
 * would not have given. A host brought up with `lab up --without-systemd` keeps the real systemctl,
 * which answers `offline` there.
 */
import { HOST_BOOT_DIR } from './manager-boot.js';
import { TIMER_STATE_DIR } from './timer-runner.js';

export const SYSTEMCTL_STANDIN_PATH = `${HOST_BOOT_DIR}/systemctl`;

export function renderSystemctlStandIn(): string {
  return `#!/bin/bash
# ibfleet lab: systemctl for a host whose systemd is the lab's timer runner (see src/lab/systemctl-standin.ts).
set -u
units=/etc/systemd/system
state=${TIMER_STATE_DIR}
log=${HOST_BOOT_DIR}/timers.log

say() {
	local now
	printf -v now '%(%F %T)T' -1
	printf '%s systemctl %s\\n' "$now" "$*" >>"$log"
}

not_emulated() {
	printf 'systemctl (ibfleet lab stand-in): %s is not emulated\\n' "$*" >&2
	exit 1
}

quiet=0
args=()
for a in "$@"; do
	case $a in
	-q | --quiet) quiet=1 ;;
	--no-pager | --no-block | --no-ask-password) ;;
	-*) not_emulated "option $a" ;;
	*) args+=("$a") ;;
	esac
done
verb=\${args[0]:-}
names=("\${args[@]:1}")

# Only timers are emulated; each name is checked before anything changes.
for name in "\${names[@]}"; do
	[[ $name == *.timer && $name != */* ]] || not_emulated "$verb $name"
done

mkdir -p "$state/active"
case $verb in
is-system-running)
	[[ $quiet -eq 1 ]] || echo running
	;;
daemon-reload)
	say daemon-reload
	;;
is-active)
	status=0
	for name in "\${names[@]}"; do
		if [[ -f $state/active/$name ]]; then answer=active; else answer=inactive status=3; fi
		[[ $quiet -eq 1 ]] || echo "$answer"
	done
	exit "$status"
	;;
start | restart)
	for name in "\${names[@]}"; do
		if [[ ! -f $units/$name ]]; then
			printf 'Failed to %s %s: Unit %s not found.\\n' "$verb" "$name" "$name" >&2
			exit 5
		fi
		# A start of an active timer changes nothing; a restart, or a start of a stopped one, arms it anew.
		[[ $verb == start && -f $state/active/$name ]] && continue
		rm -f "$state/$name"
		: >"$state/active/$name"
		say "$verb $name"
	done
	;;
stop)
	for name in "\${names[@]}"; do
		rm -f "$state/active/$name" "$state/$name"
		say "stop $name"
	done
	;;
*) not_emulated "$verb" ;;
esac
exit 0
`;
}
