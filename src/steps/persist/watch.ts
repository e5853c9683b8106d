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
 * Status asks whether it runs (the routing program's watch_runs, which its --check asks too): one
 * that stopped is drift, and deploy starts it again.
 * The program is host/ibfleet-routes-watch, the same file on every host (its subnet is the host's
 * data in routes.conf); what here is pure says where it goes and when.
 */
import type { Fact } from '../../facts/fact.js';
import { versionAtLeast } from '../../facts/nm-facts.js';
import { LOCK_DIR } from '../../script/paths.js';
import type { RenderedFile } from '../../script/rendered-file.js';
import { change, type Finding, type RenderContext } from '../step.js';
import { factOf, type HostFacts } from '../../facts/host-facts.js';
import { SYSTEMD_FACT } from './systemd.js';

/** The watcher program; present only on the hosts that need it (NetworkManager before 1.42, no systemd). */
export const WATCH_PATH = '/etc/ibfleet/ibfleet-routes-watch';
/** The running watcher's process group (host/ibfleet-routes-watch writes it; --stop kills the group). */
const WATCH_PID_PATH = `${LOCK_DIR}/watch.pid`;

/** NetworkManager sends the `reapply` dispatcher event from this version on (its NEWS for 1.42). */
export const NM_REAPPLY_EVENT_SINCE = '1.42';

/** Start the watcher where it is installed (idempotent: one that runs is left running). */
export const WATCH_START = `[ ! -x ${WATCH_PATH} ] || ${WATCH_PATH} --start`;
/**
 * Stop a running watcher, whether or not its program is still there: without it, the group of the
 * process its pidfile names, only when that is the watcher (watch_runs: no pid the kernel reused).
 */
export const WATCH_STOP = `if [ -x ${WATCH_PATH} ]; then ${WATCH_PATH} --stop; else ! watch_runs || kill -s KILL -- "-$watch_pid" 2>/dev/null; rm -f ${WATCH_PID_PATH}; fi`;

/** What status and the routing program's --check say of a watcher that does not run, alike. */
export const WATCH_NOT_RUNNING = `route watcher ${WATCH_PATH} is not running: nothing takes the subnet route out of main after nmcli device reapply (NetworkManager before 1.42, no systemd); ibfleet deploy starts it`;

/** Where the watcher's program is there: whether it runs (watch_runs); undefined where it is not installed. */
export const WATCH_FACT: Fact<{ readonly runs: boolean | undefined }> = {
  name: 'watch',
  probe: () => [`	[ ! -x ${WATCH_PATH} ] || if watch_runs; then s watch running; else s watch stopped; fi`],
  parse: (sections) => ({
    runs: sections.has('watch running') ? true : sections.has('watch stopped') ? false : undefined,
  }),
};

/**
 * Where deploy installs the watcher (it is among the host's files) and its program is there, it
 * must run; one that does not is drift, and deploy's apply starts it (persist's `after`).
 */
export function watchFinding(facts: HostFacts | undefined, files: readonly RenderedFile[]): Finding[] {
  const runs = facts === undefined ? undefined : factOf(facts, WATCH_FACT).runs;
  if (!files.some((f) => f.path === WATCH_PATH) || runs === undefined) return [];
  return [
    {
      id: 'route-watcher',
      subject: { kind: 'host', aspect: 'route-watcher' },
      ok: runs,
      detail: runs ? `route watcher ${WATCH_PATH} runs` : WATCH_NOT_RUNNING,
      fix: runs ? undefined : change('hook', 'start', WATCH_PATH, `start the route watcher: ${WATCH_PATH} --start`),
    },
  ];
}

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
