/** Where ibfleet puts things on a host. Everything it owns lives under /etc, so etckeeper tracks it. */
import type { Manager } from '../inventory/model.js';

export const ROUTING_SCRIPT_PATH = '/etc/ibfleet/ibfleet-routes';
export const SYSCTL_PATH = '/etc/sysctl.d/60-ibfleet-fabric.conf';
/**
 * The ownership record: the tables and source rules a deploy gave the host (render/owned-record.ts).
 * The next deploy, status and rollback read it to find what an earlier deploy owned and this
 * inventory does not (a changed tableBase or subnet).
 */
export const OWNED_PATH = '/etc/ibfleet/owned';
/**
 * Native persistence on netplan hosts: ibfleet's own netplan file, merged by netplan with the
 * files that configure the NICs (later files add to earlier ones: sequences such as routes are
 * appended). Mode 0600: netplan warns about configuration others can read.
 */
export const NETPLAN_FILE_PATH = '/etc/netplan/60-ibfleet.yaml';
/** Previous versions of replaced files, kept non-executable so no dispatcher ever runs them. */
export const PREVIOUS_DIR = '/etc/ibfleet/previous';
/**
 * The host lock (one per host: two changes never run at once). It lives in a directory only root
 * can create or enter — not the world-writable /run/lock, where any local user could create and
 * hold the file and so block every deploy.
 */
export const LOCK_DIR = '/run/ibfleet';
export const LOCK_PATH = `${LOCK_DIR}/lock`;
/** The routing script's own lock: its runs (hooks, the repair timer, a deploy) take turns. */
export const ROUTES_LOCK_PATH = `${LOCK_DIR}/routes.lock`;
/** The run id of the last change that ran to its end; the lock file names the one holding it. */
export const FINISHED_PATH = `${LOCK_DIR}/finished`;

/**
 * Hook locations. Names follow each runner's rules: run-parts (ifupdown) only runs names made of
 * [A-Za-z0-9_-], so no dots or extensions; the dispatchers run files in lexical order, and 50-
 * leaves room before and after.
 */
export const HOOK_PATHS: Readonly<Record<Manager, string>> = {
  netplan: '/etc/networkd-dispatcher/routable.d/50-ibfleet-routes',
  ifupdown: '/etc/network/if-up.d/ibfleet-routes',
  networkmanager: '/etc/NetworkManager/dispatcher.d/50-ibfleet-routes',
};

/**
 * The periodic repair behind the hooks (src/render/repair.ts): a systemd service that runs the
 * routing script, its timer, and the drop-in that makes timers.target want the timer (enables it).
 */
export const REPAIR_SERVICE_PATH = '/etc/systemd/system/ibfleet-routes-repair.service';
export const REPAIR_TIMER_PATH = '/etc/systemd/system/ibfleet-routes-repair.timer';
export const REPAIR_DROP_IN_PATH = '/etc/systemd/system/timers.target.d/ibfleet-routes-repair.conf';
export const REPAIR_PATHS: readonly string[] = [REPAIR_SERVICE_PATH, REPAIR_TIMER_PATH, REPAIR_DROP_IN_PATH];
