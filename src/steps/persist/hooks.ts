/**
 * Persistence hooks: small wrappers that each network manager runs when an interface comes up, and
 * that call the routing script for every fabric NIC that is up — not only the one announced:
 * systemd-networkd drops every routing rule it did not make when it reconfigures any one link
 * (`networkctl reconfigure ib0`, `netplan apply`), and announces only that link. NICs not up yet are
 * skipped, not failed (at boot the second NIC comes up after the first one's hook). The hooks exit
 * 0 for every event that is not an interface coming up, and always — a failing if-up.d hook makes
 * `ifup` itself fail, a failing dispatcher script only spams the journal — and they log, not fail,
 * when the script does.
 */
import type { Host, Manager } from '../../inventory/model.js';
import { renderHeader } from '../../script/header.js';
import { hostFile, hostLines } from '../../script/host-templates.js';
import { ROUTING_SCRIPT_PATH } from '../../script/paths.js';
import { HOOK_PATHS, MANAGER_HOOK_PATHS } from './paths.js';
import { REPAIR_COMMAND } from './repair.js';
import { WATCH_START } from './watch.js';

/** Every hook file of `manager` (netplan: routable.d and configured.d). */
export function hookPaths(manager: Manager): readonly string[] {
  return MANAGER_HOOK_PATHS[manager];
}

/**
 * The hook at `path`, one of `hookPaths(manager)`: host/files/hook-MANAGER.sh (how that manager
 * hands over the interface and the event) ahead of hook-run.sh (the run every manager's hook makes),
 * its header naming where it is.
 */
export function renderHook(manager: Manager, host: Host, playbook: string, path: string = HOOK_PATHS[manager]): string {
  const run = hostLines('hook-run.sh', {
    ROUTING_SCRIPT: ROUTING_SCRIPT_PATH,
    REPAIR_COMMAND,
    // NetworkManager before 1.42 without systemd: the route watcher (installed only there) follows reapplies.
    WATCH: manager === 'networkmanager' ? hostLines('hook-watch.sh', { WATCH_START }) : [],
  });
  return hostFile(`hook-${manager}.sh`, {
    HEADER: renderHeader(host, playbook, path).split('\n'),
    ROUTING_SCRIPT: ROUTING_SCRIPT_PATH,
    RUN: run,
  });
}
