/**
 * The host lock: one `flock` on LOCK_PATH, held on the shell's fd 9, so two ibfleet runs never
 * change one host at once. Its directory is root's alone (0700), so only root can hold it; whoever
 * holds it is named only as far as the script can tell — an ibfleet run writes its kind and shell
 * pid into the lock file, and a holder that did not (a process of root's) is not blamed on ibfleet.
 *
 * Deploy and rollback take it *before* they probe, in the shell that will run the change (the
 * conversation keeps fd 9 open from the probe to the end of the change), so what they decide from
 * is what they change. A run that finds it held waits, within what is left of its --timeout, then
 * probes the state the other run left. The shell is host/sent/host-lock.sh; this passes it words.
 */
import { BugError } from '../errors.js';
import { sentShell } from '../script/sent-shell.js';

/** Exit status when another run holds the host lock (EX_TEMPFAIL). */
export const LOCKED_EXIT = 75;
/** Printed when the lock is held and this run starts waiting for it, then when it has it. */
export const LOCK_WAIT_MARK = '@@ibfleet-lock waiting';
export const LOCK_TAKEN_MARK = '@@ibfleet-lock taken';
/** Set in the shell that holds the lock, so a script continuing the conversation does not take it again. */
export const LOCK_HELD_VAR = '__ibfleet_lock_held';

export type LockKind = 'deploy' | 'rollback' | 'restore';

/**
 * The id of the run that takes the lock: written into the lock file with the run's kind and shell
 * pid while it holds it, so a controller cut off from its change can tell that change's end
 * (settle-script.ts). A plain word, so it needs no quoting.
 */
const RUN_ID = /^[0-9a-z-]{1,40}$/;

/**
 * Takes the lock for a `kind` of run, waiting at most `waitSeconds` (whole seconds; 0: not at all)
 * for its holder: host/sent/host-lock.sh's take_host_lock, defined and called. Reopening fd 9 would
 * drop a lock the shell already holds, so where it is held (a change continuing the probe that took
 * it) nothing is done.
 */
export function renderTakeLock(kind: LockKind, waitSeconds: number, runId: string): string {
  if (!RUN_ID.test(runId)) throw new BugError(`run id ${JSON.stringify(runId)} is not a plain word`);
  const wait = Math.max(0, Math.floor(waitSeconds));
  return `${sentShell('host-lock')}take_host_lock ${kind} ${wait} ${runId}`;
}
