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
import { ROUTING_SCRIPT_PATH } from '../../script/paths.js';
import { HOOK_PATHS, MANAGER_HOOK_PATHS } from './paths.js';
import { REPAIR_COMMAND } from './repair.js';
import { WATCH_START } from './watch.js';

interface HookShape {
  /** How this runner hands over the interface and event. */
  readonly contract: string;
  /** Shell that sets `iface` or exits 0 when the event is not "interface up". */
  readonly selectEvent: string;
}

const SHAPES: Readonly<Record<Manager, HookShape>> = {
  netplan: {
    contract: [
      '# networkd-dispatcher runs the executables in routable.d and configured.d with IFACE and STATE in the',
      '# environment each time systemd-networkd reports an interface routable, or configured (netplan',
      '# renderer: networkd). Both: networkd 248+ drops rules it did not make when it reconfigures a link',
      '# or restarts, and networkd 257 then reports the link configured again but not routable.',
    ].join('\n'),
    selectEvent: [
      'iface=${IFACE:-}',
      'case ${STATE:-routable} in',
      '\troutable | configured) ;;',
      '\t*) exit 0 ;;',
      'esac',
    ].join('\n'),
  },
  ifupdown: {
    contract: [
      '# ifup runs if-up.d through run-parts after configuring an interface, with IFACE, MODE=start and',
      '# PHASE=post-up in the environment; after `ifup -a` it runs once more with IFACE=--all.',
    ].join('\n'),
    selectEvent: ['iface=${IFACE:-}', '[ "${MODE:-start}" = start ] || exit 0'].join('\n'),
  },
  networkmanager: {
    contract: [
      '# NetworkManager-dispatcher runs dispatcher.d scripts with the interface as $1 and the action as $2',
      '# (up, down, pre-up, hostname, connectivity-change, ...). Routes are re-applied on up and reapply.',
    ].join('\n'),
    selectEvent: ['iface=${1:-}', 'case ${2:-} in', '\tup | reapply | dhcp4-change) ;;', '\t*) exit 0 ;;', 'esac'].join(
      '\n',
    ),
  },
};

/** Every hook file of `manager` (netplan: routable.d and configured.d). */
export function hookPaths(manager: Manager): readonly string[] {
  return MANAGER_HOOK_PATHS[manager];
}

/** The hook at `path`, one of `hookPaths(manager)`: the same script, its header naming where it is. */
export function renderHook(manager: Manager, host: Host, playbook: string, path: string = HOOK_PATHS[manager]): string {
  const shape = SHAPES[manager];
  return `#!/bin/sh
${renderHeader(host, playbook, path)}
#
${shape.contract}
# This hook re-applies per-NIC policy routing (${ROUTING_SCRIPT_PATH}) to every fabric NIC that is up
# whenever an interface comes up: a manager that reconfigures one link may drop the rules of all.
${shape.selectEvent}
case $iface in '' | lo) exit 0 ;; esac

log() {
	printf 'ibfleet-routes hook: %s\\n' "$*" >&2
	command -v logger >/dev/null 2>&1 && logger -t ibfleet-routes -- "$*" 2>/dev/null
	return 0
}

if [ ! -x ${ROUTING_SCRIPT_PATH} ]; then
	log "$iface: ${ROUTING_SCRIPT_PATH} is missing; run ibfleet deploy"
	exit 0
fi
${REPAIR_COMMAND} || log "$iface: routing script failed (exit $?)"
${
  manager === 'networkmanager'
    ? `# NetworkManager before 1.42 without systemd: the route watcher (installed only there) follows reapplies.
${WATCH_START}
`
    : ''
}exit 0
`;
}
