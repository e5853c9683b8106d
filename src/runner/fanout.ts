/**
 * Fan-out: at most `concurrency` hosts at once (p-limit), each bounded by its own timeout, every
 * step reported as an event. A failing, slow or dead host never holds up the others; an interrupt
 * stops new hosts from starting and lets changes already under way finish.
 */
import pLimit from 'p-limit';
import { HostError } from '../errors.js';
import type { Host } from '../inventory/model.js';
import { hostRef, type HostFailure, type HostRef, type HostResult, type RunEvents, type Stage } from '../vocabulary.js';
import { ConnectError } from './transport.js';

export interface HostTask {
  readonly host: Host;
  readonly ref: HostRef;
  /** Report progress; also remembered so a timeout can say where it struck. */
  stage(stage: Stage): void;
  /** Aborts on timeout or interrupt: for connecting and read-only commands. */
  readonly signal: AbortSignal;
  /** Aborts on timeout only: for commands that change the host, so Ctrl-C lets them finish. */
  readonly hardSignal: AbortSignal;
}

/** What a host's work returns; the fan-out adds the host, the duration and failure handling. */
export type HostOutcome = Omit<HostResult, 'host' | 'durationMs'>;

export interface FanoutOptions {
  readonly concurrency: number;
  readonly timeoutMs: number;
  readonly interrupt: AbortSignal;
  readonly events: RunEvents;
  readonly now?: () => number;
}

export async function runHosts(hosts: readonly Host[], options: FanoutOptions, work: (task: HostTask) => Promise<HostOutcome>): Promise<HostResult[]> {
  const now = options.now ?? Date.now;
  const limit = pLimit(options.concurrency);
  const results = await Promise.all(
    hosts.map((host) =>
      limit(async (): Promise<HostResult> => {
        const ref = hostRef(host);
        if (options.interrupt.aborted) {
          return { host: ref, status: 'failed', durationMs: 0, reasons: ['not started: interrupted'], error: { stage: 'connect', message: 'not started: interrupted', stderrTail: '' } };
        }
        const started = now();
        options.events.onHostStart?.(ref, started);
        const result = await runOne(host, ref, options, work, started, now);
        options.events.onHostDone?.(result);
        return result;
      }),
    ),
  );
  return results.sort((a, b) => a.host.id - b.host.id);
}

async function runOne(host: Host, ref: HostRef, options: FanoutOptions, work: (task: HostTask) => Promise<HostOutcome>, started: number, now: () => number): Promise<HostResult> {
  const hard = new AbortController();
  let current: Stage = 'connect';
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      hard.abort();
      const limit = `${Math.round(options.timeoutMs / 1000)} s`;
      // No answer while connecting is an unreachable host; a timeout later is a failure at that stage.
      reject(current === 'connect' ? new ConnectError(`no answer from ${host.target} within ${limit} (--timeout)`, true) : new HostError(current, `timed out after ${limit} during ${current}`));
    }, options.timeoutMs);
  });
  const task: HostTask = {
    host,
    ref,
    stage: (stage) => {
      if (stage === current && stage !== 'connect') return;
      current = stage;
      options.events.onStage?.(ref, stage, now());
    },
    signal: AbortSignal.any([options.interrupt, hard.signal]),
    hardSignal: hard.signal,
  };
  try {
    const outcome = await Promise.race([work(task), timedOut]);
    return { host: ref, durationMs: now() - started, ...outcome };
  } catch (error) {
    return { host: ref, durationMs: now() - started, ...failureOutcome(error, current, options.interrupt.aborted) };
  } finally {
    clearTimeout(timer);
  }
}

export function failureOutcome(error: unknown, stage: Stage, interrupted = false): HostOutcome {
  const failure: HostFailure =
    error instanceof HostError
      ? { stage: error.stage as Stage, message: error.message, stderrTail: error.stderrTail, ...(error.exitCode === undefined ? {} : { exitCode: error.exitCode }) }
      : { stage, message: interrupted ? 'interrupted' : `unexpected error: ${error instanceof Error ? error.message : String(error)}`, stderrTail: error instanceof Error && !interrupted ? (error.stack ?? '') : '' };
  const unreachable = error instanceof ConnectError && error.unreachable;
  return { status: unreachable ? 'unreachable' : 'failed', reasons: [failure.message], error: failure };
}
