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
 * The same netplan hook for networkd-dispatcher's `configured` state. systemd-networkd 248+ removes
 * every rule it did not make when it reconfigures a link or starts (ManageForeignRoutingPolicyRules=
 * yes, its default), and networkd 257 then reports only `configuring` and `configured` for the
 * link — the operational state stays `routable`, so routable.d never runs. networkd-dispatcher runs
 * `<state>.d` for administrative states as for operational ones (1.x to 2.2).
 */
export const NETWORKD_CONFIGURED_HOOK_PATH = '/etc/networkd-dispatcher/configured.d/50-ibfleet-routes';

/**
 * On netplan hosts with the hook, a networkd.conf drop-in that keeps systemd-networkd (248+) from
 * removing ibfleet's rules and table routes when it starts: after a restart (a package upgrade)
 * networkd-dispatcher reports no state that changed, so no hook runs (hooks.ts).
 */
export const NETWORKD_CONF_PATH = '/etc/systemd/networkd.conf.d/60-ibfleet.conf';

/** Every hook file each manager's hook mode installs: the one above, and for netplan the configured.d one too. */
export const MANAGER_HOOK_PATHS: Readonly<Record<Manager, readonly string[]>> = {
  netplan: [HOOK_PATHS.netplan, NETWORKD_CONFIGURED_HOOK_PATH],
  ifupdown: [HOOK_PATHS.ifupdown],
  networkmanager: [HOOK_PATHS.networkmanager],
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
