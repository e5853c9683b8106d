/**
 * The route watcher: on a NetworkManager host where neither a dispatcher event nor a timer follows
 * `nmcli device reapply`. NetworkManager before 1.42 runs no dispatcher script for a reapply (1.42's
 * NEWS adds the `reapply` action; 1.30 was seen to run none at all), yet the reapply puts the
 * kernel's subnet route back in the main table; where systemd runs, the repair timer clears it
 * within repairEvery + 1 s, but a host without systemd has no timer, so nothing would. There
 * ibfleet installs this small program: it follows the kernel's route changes (`ip -4 monitor
 * route`, no polling) and runs the routing script when a route to the fabric subnet appears in the
 * main table — within a second, not at the next boot. One runs per host (a lock); deploy and the
 * dispatcher hook (at every `up`, so after a boot too) start it, rollback and a restore stop it.
 * Pure string builders.
 */
import { versionAtLeast } from '../../facts/nm-facts.js';
import { formatCidr } from '../../inventory/ipv4.js';
import type { Fleet, Host } from '../../inventory/model.js';
import { renderHeader } from '../../script/header.js';
import { LOCK_DIR, ROUTING_SCRIPT_PATH } from '../../script/paths.js';
import { shellQuote } from '../../script/shell.js';
import type { RenderContext } from '../step.js';
import { factOf } from '../../facts/host-facts.js';
import { REPAIR_COMMAND } from './repair.js';
import { SYSTEMD_FACT } from './systemd.js';

/** The watcher program; present only on the hosts that need it (NetworkManager before 1.42, no systemd). */
export const WATCH_PATH = '/etc/ibfleet/ibfleet-routes-watch';
/**
 * The running watcher's process group (it leads its own session): what --stop kills. KILL, not
 * TERM: started by a change, it inherits the change's ignored TERM, HUP and INT, which a shell
 * cannot undo; it keeps no state that a kill could leave half-written.
 */
const WATCH_PID_PATH = `${LOCK_DIR}/watch.pid`;
/** Held by the running watcher: a second one started at the same time exits. */
const WATCH_LOCK_PATH = `${LOCK_DIR}/watch.lock`;

/** NetworkManager sends the `reapply` dispatcher event from this version on (its NEWS for 1.42). */
export const NM_REAPPLY_EVENT_SINCE = '1.42';

/** Start the watcher where it is installed (idempotent: one that runs is left running). */
export const WATCH_START = `[ ! -x ${WATCH_PATH} ] || ${WATCH_PATH} --start`;
/** Stop a running watcher, whether or not its program is still there. */
export const WATCH_STOP = `if [ -x ${WATCH_PATH} ]; then ${WATCH_PATH} --stop; elif [ -f ${WATCH_PID_PATH} ]; then read -r pid <${WATCH_PID_PATH} && [ -n "$pid" ] && grep -q ibfleet-routes-watch "/proc/$pid/cmdline" 2>/dev/null && kill -s KILL -- "-$pid" 2>/dev/null; rm -f ${WATCH_PID_PATH}; fi`;

/**
 * Whether the host gets the watcher: the routing script persists the routing, NetworkManager runs
 * it at a version before NM_REAPPLY_EVENT_SINCE, and the probe found no systemd for the timer.
 */
export function needsWatch(ctx: RenderContext): boolean {
  const { facts } = ctx;
  return (
    ctx.manager === 'networkmanager' &&
    ctx.persistence.kind === 'script' &&
    facts?.nm !== undefined &&
    !versionAtLeast(facts.nm.version, NM_REAPPLY_EVENT_SINCE) &&
    factOf(facts, SYSTEMD_FACT).runs === false
  );
}

export function renderWatch(host: Host, fleet: Fleet, playbook: string): string {
  const subnet = formatCidr(fleet.fabric.subnet);
  return `#!/bin/sh
${renderHeader(host, playbook, WATCH_PATH)}
#
# NetworkManager before ${NM_REAPPLY_EVENT_SINCE} runs no dispatcher script for \`nmcli device reapply\`, which
# puts the kernel's route to ${subnet} back in the main table, and this host runs no systemd for
# the repair timer. This watcher follows the kernel's route changes and runs the routing script
# when such a route appears in main. Usage: ibfleet-routes-watch --start | --stop | --run
set -u
export LC_ALL=C PATH=/usr/sbin:/usr/bin:/sbin:/bin
PIDFILE=${shellQuote(WATCH_PID_PATH)}

# running: the watcher's pid is in $PIDFILE and that process is the watcher (not a reused pid).
running() {
	[ -f "$PIDFILE" ] && read -r pid <"$PIDFILE" && [ -n "$pid" ] &&
		grep -q ibfleet-routes-watch "/proc/$pid/cmdline" 2>/dev/null
}

case \${1:-} in
--start)
	running && exit 0
	[ -d ${shellQuote(LOCK_DIR)} ] || mkdir -m 0700 ${shellQuote(LOCK_DIR)} || exit 1
	# Its own session, every descriptor of the caller closed: the locks a deploy holds (7, 8, 9) are
	# not kept held, and an SSH channel or a dispatcher does not wait for it.
	setsid "$0" --run </dev/null >/dev/null 2>&1 7>&- 8>&- 9>&- &
	exit 0
	;;
--stop)
	if running; then kill -s KILL -- "-$pid" 2>/dev/null; fi
	rm -f "$PIDFILE"
	exit 0
	;;
--run) ;;
*)
	echo 'usage: ibfleet-routes-watch --start | --stop | --run' >&2
	exit 2
	;;
esac

exec 6>>${shellQuote(WATCH_LOCK_PATH)} || exit 1
flock -n 6 || exit 0
echo "$$" >"$PIDFILE"
# A route in main prints without "table"; the routing script's own, in its tables, with one. What
# the loop starts does not hold the lock (6>&-): only the watcher's shells do.
ip -4 monitor route 2>/dev/null 6>&- | while IFS= read -r line; do
	# Rolled back meanwhile: the watcher ends at the next route change (rollback's own, at the latest).
	[ -x ${ROUTING_SCRIPT_PATH} ] || exit 0
	case $line in
	${shellQuote(`${subnet} dev `)}*' table '*) ;;
	${shellQuote(`${subnet} dev `)}*)
		${REPAIR_COMMAND} >/dev/null 2>&1 6>&-
		;;
	esac
done
`;
}
