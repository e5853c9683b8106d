/**
 * The periodic repair behind the hooks: a systemd timer that runs the routing script every
 * `repairEvery` seconds. Hooks run on the events a manager announces; some events change the
 * routing and announce nothing — an admin `ip link set ib0 down; up` inside NetworkManager's carrier
 * grace, a DHCP renewal — and the manager puts its main-table route back. The script is idempotent
 * (it changes nothing when the state is right), so running it on a timer bounds how long such drift
 * lasts: at most repairEvery seconds plus systemd's AccuracySec (1 s). The units are templates,
 * host/files/repair.*; pure.
 *
 * The timer is enabled by a drop-in that makes timers.target want it — a regular file, so it is
 * written, checked and rolled back like every other file ibfleet installs — rather than by the
 * symlink `systemctl enable` makes; systemd starts it at boot either way.
 */
import type { Host } from '../../inventory/model.js';
import { renderHeader } from '../../script/header.js';
import { hostFile } from '../../script/host-templates.js';
import { ROUTING_SCRIPT_PATH } from '../../script/paths.js';
import { REPAIR_DROP_IN_PATH, REPAIR_SERVICE_PATH, REPAIR_TIMER_PATH } from './paths.js';

export const REPAIR_TIMER_UNIT = REPAIR_TIMER_PATH.slice(REPAIR_TIMER_PATH.lastIndexOf('/') + 1);
const REPAIR_SERVICE_UNIT = REPAIR_SERVICE_PATH.slice(REPAIR_SERVICE_PATH.lastIndexOf('/') + 1);

/** The routing script as the timer and the hooks run it: every fabric NIC that is up, no others. */
export const REPAIR_COMMAND = `${ROUTING_SCRIPT_PATH} --up-only --quiet`;

/** host/files/repair.service: the oneshot service the timer starts. */
export function renderRepairService(host: Host, playbook: string): string {
  return hostFile('repair.service', {
    HEADER: renderHeader(host, playbook, REPAIR_SERVICE_PATH).split('\n'),
    TIMER_UNIT: REPAIR_TIMER_UNIT,
    REPAIR_COMMAND,
  });
}

/** host/files/repair.timer: every `every` seconds (a validated whole number, 5..3600). */
export function renderRepairTimer(host: Host, playbook: string, every: number): string {
  return hostFile('repair.timer', {
    HEADER: renderHeader(host, playbook, REPAIR_TIMER_PATH).split('\n'),
    EVERY: String(every),
    SERVICE_UNIT: REPAIR_SERVICE_UNIT,
  });
}

/** host/files/repair-wants.conf: timers.target's drop-in that wants the timer. */
export function renderRepairDropIn(host: Host, playbook: string): string {
  return hostFile('repair-wants.conf', {
    HEADER: renderHeader(host, playbook, REPAIR_DROP_IN_PATH).split('\n'),
    TIMER_UNIT: REPAIR_TIMER_UNIT,
  });
}
