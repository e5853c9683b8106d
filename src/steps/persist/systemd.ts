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

/** What `systemctl is-system-running` prints while systemd runs; `offline` (or nothing: no bus) is a host it does not run. */
export const SYSTEMD_RUNNING_STATES = [
  'initializing',
  'starting',
  'running',
  'degraded',
  'maintenance',
  'stopping',
] as const;

/**
 * `systemd_runs`: 0 where systemd runs. systemctl is only asked when PID 1 is not systemd and
 * /run/systemd/system is there (systemd makes it at boot; without it no systemd runs, as sd_booted
 * says): each process costs the host a fork and an exec, and every probe asks. Every script that
 * asks defines it first.
 */
export const SYSTEMD_RUNS_FUNCTION = `# systemd_runs: whether systemd runs this host: PID 1 is systemd, or systemctl reports a running
# system. /run/systemd/system alone says nothing (netplan generate writes units there without
# systemd), but without it no systemd runs.
systemd_runs() {
	sd_pid1=
	read -r sd_pid1 </proc/1/comm 2>/dev/null
	[ "$sd_pid1" = systemd ] && return 0
	[ -d /run/systemd/system ] || return 1
	command -v systemctl >/dev/null 2>&1 || return 1
	case $(systemctl is-system-running 2>/dev/null) in
	${SYSTEMD_RUNNING_STATES.join(' | ')}) return 0 ;;
	esac
	return 1
}`;

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
    ...SYSTEMD_RUNS_FUNCTION.split('\n').map((l) => `\t${l}`),
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
    SYSTEMD_RUNS_FUNCTION,
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
  SYSTEMD_RUNS_FUNCTION,
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
    SYSTEMD_RUNS_FUNCTION,
    'if systemd_runs; then',
    '\tsystemctl daemon-reload || status=1',
    `\tif [ -f ${shellQuote(REPAIR_TIMER_PATH)} ]; then systemctl restart ${TIMER} || status=1; else systemctl stop ${TIMER} 2>/dev/null; fi`,
    'fi',
  ];
}

/** Under the routing script's --check, where systemd runs (systemd_runs): the repair timer is active, as status's timer finding says it. */
export const TIMER_CHECK = `if systemd_runs; then
	timer=$(systemctl is-active ${TIMER} 2>/dev/null)
	[ "$timer" = active ] || drift "repair timer ${REPAIR_TIMER_UNIT} is \${timer:-unknown}, not active"
fi`;
