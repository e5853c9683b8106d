/**
 * Whether systemd runs a host, and telling it about the repair units (repair.ts). Asked by what
 * runs — PID 1 is systemd, or `systemctl is-system-running` reports a running system — and not by
 * /run/systemd/system, which says only that files for systemd are there: `netplan generate` writes
 * units under it on hosts systemd does not run (a container, a chroot-like host), where every
 * `systemctl` call then fails. Where systemd runs it reads unit files only when told, and the timer
 * must run now, not from the next boot on; where it does not, there is no timer. Pure.
 */
import type { Fact } from '../../facts/fact.js';
import { shellQuote } from '../../script/shell.js';
import { REPAIR_PATHS, REPAIR_TIMER_PATH } from './paths.js';
import { REPAIR_TIMER_UNIT } from './repair.js';

const TIMER = shellQuote(REPAIR_TIMER_UNIT);

/**
 * `systemd_runs` (the routing program's, host/ibfleet-routes): 0 where systemd runs. systemctl is
 * only asked when PID 1 is not systemd and /run/systemd/system is there (systemd makes it at boot;
 * without it no systemd runs, as sd_booted says): each process costs the host a fork and an exec,
 * and every probe asks. A script that calls it gets its definition (script/host-functions.ts).
 */

/** Said in the plan and in status where the routing script persists, the playbook wants the repair and no systemd runs: not drift. */
export const NO_SYSTEMD_NOTE = 'no systemd: the periodic repair is not active; the hooks still apply the routing';

export interface SystemdFacts {
  /** Whether systemd runs the host; undefined from a probe that did not say (the probe closing a change in an older run). */
  readonly runs: boolean | undefined;
  /** `systemctl is-active` of the repair timer (`active`, `inactive`, …), only where systemd runs. */
  readonly repairTimer: string | undefined;
}

export const SYSTEMD_FACT: Fact<SystemdFacts> = {
  name: 'systemd',
  probe: () => [
    `\tif systemd_runs; then s systemd yes; systemctl is-active ${REPAIR_TIMER_UNIT} 2>/dev/null; else s systemd no; fi`,
  ],
  parse: (sections) => {
    if (sections.has('systemd yes'))
      return { runs: true, repairTimer: sections.get('systemd yes')![0]?.trim() || 'unknown' };
    return { runs: sections.has('systemd no') ? false : undefined, repairTimer: undefined };
  },
};

/** After a deploy wrote or removed files: nothing is run when the units are unchanged and the timer is active. */
export function repairActivation(written: readonly string[], removed: readonly string[]): string[] {
  const changed = written.some((p) => REPAIR_PATHS.includes(p)) || removed.some((p) => REPAIR_PATHS.includes(p));
  return [
    'if systemd_runs; then',
    ...(changed ? ['\tsystemctl daemon-reload || status=1'] : []),
    `\tif [ -f ${shellQuote(REPAIR_TIMER_PATH)} ]; then`,
    changed
      ? `\t\tsystemctl restart ${TIMER} || status=1`
      : `\t\tsystemctl is-active --quiet ${TIMER} || systemctl start ${TIMER} || status=1`,
    ...(removed.includes(REPAIR_TIMER_PATH) ? ['\telse', `\t\tsystemctl stop ${TIMER} 2>/dev/null`] : []),
    '\tfi',
    'fi',
  ];
}

/** Rollback: the timer stopped before its files go, systemd told after (where it runs). */
export const STOP_TIMER = [
  'sd=0; ! systemd_runs || sd=1',
  `[ "$sd" -eq 0 ] || systemctl stop ${TIMER} 2>/dev/null`,
].join('\n');
export const RELOAD_UNITS = '[ "$sd" -eq 0 ] || systemctl daemon-reload || status=1';

/**
 * After a restore put the repair units back: systemd reloads them, and the timer runs exactly when
 * its file is there again — restarted from the restored file, or stopped when the change had added it.
 */
export function repairUnitsAsRestored(): string[] {
  return [
    '',
    '# The repair timer as the restored unit files say.',
    'if systemd_runs; then',
    '\tsystemctl daemon-reload || status=1',
    `\tif [ -f ${shellQuote(REPAIR_TIMER_PATH)} ]; then systemctl restart ${TIMER} || status=1; else systemctl stop ${TIMER} 2>/dev/null; fi`,
    'fi',
  ];
}
