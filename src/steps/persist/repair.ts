/**
 * The periodic repair behind the hooks: a systemd timer that runs the routing script every
 * `repairEvery` seconds. Hooks run on the events a manager announces; some events change the
 * routing and announce nothing — an admin `ip link set ib0 down; up` inside NetworkManager's carrier
 * grace, a DHCP renewal — and the manager puts its main-table route back. The script is idempotent
 * (it changes nothing when the state is right), so running it on a timer bounds how long such drift
 * lasts: at most repairEvery seconds plus systemd's AccuracySec (1 s). Pure string builders.
 *
 * The timer is enabled by a drop-in that makes timers.target want it — a regular file, so it is
 * written, checked and rolled back like every other file ibfleet installs — rather than by the
 * symlink `systemctl enable` makes; systemd starts it at boot either way.
 */
import type { Host } from '../../inventory/model.js';
import { renderHeader } from '../../script/header.js';
import { ROUTING_SCRIPT_PATH } from '../../script/paths.js';
import { REPAIR_DROP_IN_PATH, REPAIR_SERVICE_PATH, REPAIR_TIMER_PATH } from './paths.js';

export const REPAIR_TIMER_UNIT = REPAIR_TIMER_PATH.slice(REPAIR_TIMER_PATH.lastIndexOf('/') + 1);
const REPAIR_SERVICE_UNIT = REPAIR_SERVICE_PATH.slice(REPAIR_SERVICE_PATH.lastIndexOf('/') + 1);

/** The routing script as the timer and the hooks run it: every fabric NIC that is up, no others. */
export const REPAIR_COMMAND = `${ROUTING_SCRIPT_PATH} --up-only --quiet`;

export function renderRepairService(host: Host, playbook: string): string {
  return `${renderHeader(host, playbook, REPAIR_SERVICE_PATH)}
#
# Re-applies per-NIC policy routing; started by ${REPAIR_TIMER_UNIT}. It prints only what it changed.
[Unit]
Description=ibfleet: re-apply per-NIC policy routing if something removed it
After=network.target

[Service]
Type=oneshot
ExecStart=${REPAIR_COMMAND}
`;
}

export function renderRepairTimer(host: Host, playbook: string, every: number): string {
  return `${renderHeader(host, playbook, REPAIR_TIMER_PATH)}
#
# Bounds drift no hook sees (a link flap inside NetworkManager's carrier grace, a DHCP renewal) to
# ${every} s + AccuracySec.
[Unit]
Description=ibfleet: periodic repair of per-NIC policy routing (every ${every} s)

[Timer]
OnBootSec=${every}s
OnUnitActiveSec=${every}s
AccuracySec=1s
Unit=${REPAIR_SERVICE_UNIT}
`;
}

export function renderRepairDropIn(host: Host, playbook: string): string {
  return `${renderHeader(host, playbook, REPAIR_DROP_IN_PATH)}
#
# Enables ${REPAIR_TIMER_UNIT}: timers.target (started at every boot) wants it.
[Unit]
Wants=${REPAIR_TIMER_UNIT}
`;
}
