/**
 * When a change does not end as planned. Cut off from the controller (the connection lost, its
 * output cut, its shell killed), a change goes on on the host by itself — the script ignores
 * hang-ups and holds the host lock to its end — so "applying failed" would be wrong: the runner
 * connects again, waits for the lock, and reads the state the change left. A change that ends but
 * does not verify is undone, back to exactly what the probe saw before it (plan/restore.ts).
 */
import { HostError } from '../errors.js';
import type { Fleet } from '../inventory/model.js';
import type { HostFacts } from '../facts/host-facts.js';
import { lockedMessage, readChangeOutput } from '../plan/change-output.js';
import { planRestore, restoredMessage, stateDifferences } from '../plan/restore.js';
import { LOCKED_EXIT, SELF_RESTORED_LINE } from '../render/apply-script.js';
import { randomBytes } from 'node:crypto';
import type { RenderedFile } from '../script/rendered-file.js';
import type { ApplyPart } from '../steps/step.js';
import { renderRestoreScript } from '../render/restore-script.js';
import { renderSettleProbe } from '../render/settle-script.js';
import type { HostTask } from './fanout.js';
import { OUTPUT_KEEP, scriptFailed, type ExecResult, type Session } from './transport.js';

/**
 * Why a change's own result cannot be read, or undefined when it can (it exited and printed its
 * closing probe whole). `timedOut`: the host's deadline passed (it closed the channel).
 */
export function cutOffReason(result: ExecResult, what = 'the change', timedOut?: string): string | undefined {
  if (result.cut)
    return `the host printed more than ${OUTPUT_KEEP / (1024 * 1024)} MiB on ${result.cut.stream} during ${what}, so ibfleet stopped reading it`;
  if (result.code !== null) return undefined;
  if (timedOut) return timedOut;
  return result.signal
    ? `the shell of ${what} was killed by SIG${result.signal}`
    : `the connection was lost during ${what}`;
}

/**
 * The state a change cut off from us left: on a new connection, once the change has let go of the
 * host lock (waiting at most what is left of the host's time). A HostError says what is known when
 * the state cannot be read.
 */
export async function settleCutOffChange(
  task: HostTask,
  fleet: Fleet,
  reconnect: () => Promise<Session>,
  change: { readonly runId: string; readonly why: string; readonly wants?: ReadonlySet<string> },
): Promise<{ readonly after: HostFacts; readonly session: Session }> {
  const { runId, why, wants } = change;
  const unknown = (detail: string) =>
    new HostError(
      'apply',
      `${why}; the host finishes the change on its own (or puts itself back if it fails), but ${detail}: check it with ibfleet status --hosts ${task.host.id}`,
    );
  let session: Session;
  try {
    session = await reconnect();
  } catch (error) {
    throw unknown(`connecting again failed (${(error as Error).message})`);
  }
  const care = task.aftercare;
  const result = await session
    .run(renderSettleProbe(task.host, fleet, runId, (care.remainingMs() - 1000) / 1000, wants), { signal: care.signal })
    .catch((error: Error) => error);
  if (result instanceof Error) throw unknown(`reading its state failed (${result.message})`);
  if (result.code === LOCKED_EXIT) throw unknown('it was still running when the time ran out');
  const { after } = readChangeOutput(result.stdout);
  if (result.cut || !after.complete)
    throw unknown(
      `reading its state failed (${cutOffReason(result) ?? scriptFailed('apply', 'the probe', result).message})`,
    );
  return { after, session };
}

/** A run's own id for the changes it sends a host (render/apply-script.ts: RUN_ID). */
export function newRunId(): string {
  return randomBytes(8).toString('hex');
}

export interface FailedChange {
  readonly runId: string;
  readonly before: HostFacts;
  readonly after: HostFacts;
  readonly written: readonly RenderedFile[];
  /** What the change printed before its closing probe (it names the directories it created). */
  readonly changeOutput: string;
  /** What each step of the change kept for its restore (what it told the network manager). */
  readonly parts: ReadonlyMap<string, ApplyPart>;
  /** Its output was not seen to its end (it may have put the host back itself). */
  readonly cutOff?: boolean;
}

/**
 * A change that ended but did not verify is undone in one more channel; returns `failure`
 * completed with how that went (restored, what still differs, nothing to undo, or unfinished).
 */
export async function restoreAfterFailure(
  task: HostTask,
  session: Session,
  fleet: Fleet,
  change: FailedChange,
  failure: string,
): Promise<string> {
  if (stateDifferences(task.host, fleet, change.before, change.after).length === 0) {
    const itself = change.cutOff === true || change.changeOutput.split('\n').includes(SELF_RESTORED_LINE);
    return restoredMessage(failure, { kind: itself ? 'restored' : 'unchanged', left: [] });
  }
  const spec = planRestore(task.host, fleet, change.before, change.written, change.changeOutput, change.parts);
  const result = await session
    .run(renderRestoreScript(task.host, fleet, spec, `${change.runId}-restore`), { signal: task.aftercare.signal })
    .catch((error: Error) => error);
  if (result instanceof Error) return restoredMessage(failure, { kind: 'unfinished', why: result.message });
  if (result.code === LOCKED_EXIT)
    return restoredMessage(failure, { kind: 'unfinished', why: lockedMessage(result.stderr) });
  const { after } = readChangeOutput(result.stdout, change.before);
  const cut = cutOffReason(result, 'the restore');
  if (cut || !after.complete)
    return restoredMessage(failure, {
      kind: 'unfinished',
      why: cut ?? scriptFailed('apply', 'the restore', result).message,
    });
  return restoredMessage(failure, { kind: 'restored', left: stateDifferences(task.host, fleet, change.before, after) });
}
