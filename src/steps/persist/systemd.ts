/**
 * Telling systemd about the repair units (repair.ts). Where systemd runs (/run/systemd/system, as
 * sd_booted checks) it reads unit files only when told, and the timer must run now, not from the
 * next boot on; hosts without systemd (the lab) read the files themselves. Pure string builders.
 */
import { shellQuote } from '../../script/shell.js';
import { REPAIR_PATHS, REPAIR_TIMER_PATH } from './paths.js';
import { REPAIR_TIMER_UNIT } from './repair.js';

const TIMER = shellQuote(REPAIR_TIMER_UNIT);

/** After a deploy wrote or removed files: nothing is run when the units are unchanged and the timer is active. */
export function repairActivation(written: readonly string[], removed: readonly string[]): string[] {
  const changed = written.some((p) => REPAIR_PATHS.includes(p)) || removed.some((p) => REPAIR_PATHS.includes(p));
  return [
    'if [ -d /run/systemd/system ]; then',
    ...(changed ? ['	systemctl daemon-reload || status=1'] : []),
    `	if [ -f ${shellQuote(REPAIR_TIMER_PATH)} ]; then`,
    changed ? `		systemctl restart ${TIMER} || status=1` : `		systemctl is-active --quiet ${TIMER} || systemctl start ${TIMER} || status=1`,
    ...(removed.includes(REPAIR_TIMER_PATH) ? ['	else', `		systemctl stop ${TIMER} 2>/dev/null`] : []),
    '	fi',
    'fi',
  ];
}

/** Rollback: the timer stopped before its files go, systemd told after. */
export const STOP_TIMER = `[ ! -d /run/systemd/system ] || systemctl stop ${TIMER} 2>/dev/null`;
export const RELOAD_UNITS = '[ ! -d /run/systemd/system ] || systemctl daemon-reload || status=1';

/**
 * After a restore put the repair units back: systemd reloads them, and the timer runs exactly when
 * its file is there again — restarted from the restored file, or stopped when the change had added it.
 */
export function repairUnitsAsRestored(): string[] {
  return [
    '',
    '# The repair timer as the restored unit files say.',
    'if [ -d /run/systemd/system ]; then',
    '\tsystemctl daemon-reload || status=1',
    `\tif [ -f ${shellQuote(REPAIR_TIMER_PATH)} ]; then systemctl restart ${TIMER} || status=1; else systemctl stop ${TIMER} 2>/dev/null; fi`,
    'fi',
  ];
}

/** Under the routing script's --check, where systemd runs: the repair timer is active (as status's timer finding says it). */
export const TIMER_CHECK = `if [ -d /run/systemd/system ]; then
	timer=$(systemctl is-active ${TIMER} 2>/dev/null)
	[ "$timer" = active ] || drift "repair timer ${REPAIR_TIMER_UNIT} is \${timer:-unknown}, not active"
fi`;
