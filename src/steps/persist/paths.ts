/** Where the persist step puts its files on a host. Everything lives under /etc, so etckeeper tracks it. */
import type { Manager } from '../../inventory/model.js';

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
 * The periodic repair behind the hooks (repair.ts): a systemd service that runs the routing
 * script, its timer, and the drop-in that makes timers.target want the timer (enables it).
 */
export const REPAIR_SERVICE_PATH = '/etc/systemd/system/ibfleet-routes-repair.service';
export const REPAIR_TIMER_PATH = '/etc/systemd/system/ibfleet-routes-repair.timer';
export const REPAIR_DROP_IN_PATH = '/etc/systemd/system/timers.target.d/ibfleet-routes-repair.conf';
export const REPAIR_PATHS: readonly string[] = [REPAIR_SERVICE_PATH, REPAIR_TIMER_PATH, REPAIR_DROP_IN_PATH];

/**
 * Native persistence on netplan hosts: ibfleet's own netplan file, merged by netplan with the
 * files that configure the NICs (later files add to earlier ones: sequences such as routes are
 * appended). Mode 0600: netplan warns about configuration others can read.
 */
export const NETPLAN_FILE_PATH = '/etc/netplan/60-ibfleet.yaml';
