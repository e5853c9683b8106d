/**
 * Fan-out: at most `concurrency` hosts at once (p-limit), each bounded by one deadline for its
 * whole part of the run, every step reported as an event. A failing, slow or dead host never holds
 * up the others; an interrupt stops new hosts from starting and lets changes already under way
 * finish. announceRun() wraps a command's fan-out (or verify's phases) in the run's start and end
 * events for its display, and returns the end-of-run record the verdict is made from.
 */
import pLimit from 'p-limit';
import { HostError } from '../errors.js';
import type { Host } from '../inventory/model.js';
import {
  hostRef,
  type HostFailure,
  type HostRef,
  type HostResult,
  type MatrixCell,
  type MatrixStart,
  type RunDisplay,
  type RunEnd,
  type RunEvents,
  type RunHeader,
  type Stage,
} from '../vocabulary.js';
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
  /** Milliseconds left of the host's deadline (0 once it has passed). */
  remainingMs(): number;
  /** Keeps what was sent to the host or what it printed, for the run log. */
  record(label: string, text: string): void;
  /** Seeing a change through that is under way when the deadline passes (Aftercare). */
  readonly aftercare: Aftercare;
}

/**
 * A change under way when the host's deadline passes goes on on the host by itself (it ignores the
 * hang-up, finishes, and puts the host back if it fails): the work then gets AFTERCARE_MS more to
 * see where it ended — connect again, wait for the change, read the state, restore a host it left
 * failed — and reports that, so a timeout never leaves the host's end unsaid. Reading and deciding
 * get no such time: a timeout there is a timeout.
 */
export interface Aftercare {
  /** A change is under way (true) or has ended (false). */
  changing(on: boolean): void;
  /** Aborts when the aftercare's time is up: for what sees a change through (reconnecting, settling, restoring). */
  readonly signal: AbortSignal;
  /** Milliseconds left to see a change through: the deadline's rest and the aftercare's, or what is left of it once started. */
  remainingMs(): number;
  /** Once the deadline has passed: what the timeout says ("timed out after 60 s during push"). */
  timedOut(): string | undefined;
}

/** How long a change under way at the deadline is seen through: the time limit again, at least 30 s. */
export function aftercareMs(timeoutMs: number): number {
  return Math.max(timeoutMs, 30_000);
}

/** What a host's work returns; the fan-out adds the host, the duration and failure handling. */
export type HostOutcome = Omit<HostResult, 'host' | 'durationMs'>;

/**
 * One host's time limit, from the moment its work starts. A host's every step in the run — its own
 * work, and for verify the cells it takes part in after all hosts have connected — answers to the
 * same deadline, so `--timeout` bounds the host, not each command sent to it.
 *
 * verify's matrix uses it as a limit on silence: after its probe the host's time stops (`pause`);
 * it runs again, afresh, while the host owes an answer (`owe`, for each script it runs, released
 * when the answer is in), and each part the host finishes (`renew`) starts it over. So a host that
 * stops answering is cut off within --timeout, a large matrix that keeps going runs to its end, and
 * a host waiting on another host or for its turn is never the one blamed.
 */
export class Deadline {
  private readonly hard = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  private readonly fire: () => void;
  private stopped = false;
  /** Scripts the host is running whose answers are not in yet (verify's matrix). */
  private owed = 0;
  /** Resolves when the time is up (never, once stopped first). */
  readonly expired: Promise<void>;
  /** Aborts on timeout or interrupt: for connecting and read-only commands. */
  readonly signal: AbortSignal;
  /** Aborts on timeout only: for commands that change the host, so Ctrl-C lets them finish. */
  readonly hardSignal: AbortSignal = this.hard.signal;

  constructor(
    readonly timeoutMs: number,
    interrupt: AbortSignal,
    /** When the host started (epoch ms, the run's clock). */
    readonly startedAt: number,
  ) {
    this.signal = AbortSignal.any([interrupt, this.hard.signal]);
    let expire!: () => void;
    this.expired = new Promise((resolve) => (expire = resolve));
    this.fire = () => {
      this.hard.abort();
      expire();
    };
    this.timer = setTimeout(this.fire, timeoutMs);
  }

  private get running(): boolean {
    return !this.stopped && !this.hard.signal.aborted;
  }

  private arm(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(this.fire, this.timeoutMs);
  }

  /** The host owes nothing now: its time stops until it is asked something again. */
  pause(): void {
    if (this.running && this.owed === 0) clearTimeout(this.timer);
  }

  /** The host is asked something: its time runs (afresh, if it had stopped) until the returned release. */
  owe(): () => void {
    if (this.owed++ === 0 && this.running) this.arm();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (--this.owed === 0 && this.running) clearTimeout(this.timer);
    };
  }

  /** The host finished a part of what it owes: its full time again, from now. */
  renew(): void {
    if (this.running && this.owed > 0) this.arm();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }
}

/** The deadlines of a run whose hosts outlive their own fan-out (verify): the caller stops them. */
export class Deadlines {
  private readonly all = new Map<number, Deadline>();
  constructor(
    private readonly timeoutMs: number,
    private readonly interrupt: AbortSignal,
  ) {}

  /** The host's deadline, started now if it has none yet. */
  start(id: number, at: number): Deadline {
    let deadline = this.all.get(id);
    if (!deadline) this.all.set(id, (deadline = new Deadline(this.timeoutMs, this.interrupt, at)));
    return deadline;
  }

  of(id: number): Deadline | undefined {
    return this.all.get(id);
  }

  stopAll(): void {
    for (const deadline of this.all.values()) deadline.stop();
  }
}

export interface FanoutOptions {
  readonly concurrency: number;
  readonly timeoutMs: number;
  readonly interrupt: AbortSignal;
  readonly events: RunEvents;
  readonly now?: () => number;
  /** Keep each host's deadline running after its work, for a later phase; default: it ends with the work. */
  readonly deadlines?: Deadlines;
}

export async function runHosts(
  hosts: readonly Host[],
  options: FanoutOptions,
  work: (task: HostTask) => Promise<HostOutcome>,
): Promise<HostResult[]> {
  const now = options.now ?? Date.now;
  const limit = pLimit(options.concurrency);
  const results = await Promise.all(
    hosts.map((host) =>
      limit(async (): Promise<HostResult> => {
        const ref = hostRef(host);
        if (options.interrupt.aborted)
          return { host: ref, status: 'not-run', durationMs: 0, reasons: ['not started: interrupted'] };
        const started = now();
        options.events.onHostStart?.(ref, started);
        const deadline =
          options.deadlines?.start(host.id, started) ?? new Deadline(options.timeoutMs, options.interrupt, started);
        try {
          const result = await runOne(host, ref, deadline, options, work, now);
          options.events.onHostDone?.(result);
          return result;
        } finally {
          if (!options.deadlines) deadline.stop();
        }
      }),
    ),
  );
  return results.sort((a, b) => a.host.id - b.host.id);
}

const TIMED_OUT = Symbol('timed out');

async function runOne(
  host: Host,
  ref: HostRef,
  deadline: Deadline,
  options: FanoutOptions,
  work: (task: HostTask) => Promise<HostOutcome>,
  now: () => number,
): Promise<HostResult> {
  let current: Stage = 'connect';
  const care = new AftercareClock(deadline, now, () => current);
  const task: HostTask = {
    host,
    ref,
    stage: (stage) => {
      if (stage === current && stage !== 'connect') return;
      current = stage;
      options.events.onStage?.(ref, stage, now());
    },
    signal: deadline.signal,
    hardSignal: deadline.hardSignal,
    remainingMs: () => Math.max(0, deadline.timeoutMs - (now() - deadline.startedAt)),
    record: (label, text) => options.events.onOutput?.(ref, label, text),
    aftercare: care,
  };
  const durationMs = () => now() - deadline.startedAt;
  try {
    const working = work(task);
    let outcome = await Promise.race([working, deadline.expired.then((): typeof TIMED_OUT => TIMED_OUT)]);
    if (outcome === TIMED_OUT && care.under) {
      const said = timeoutError(host, current, deadline.timeoutMs).message;
      care.start(said);
      outcome = await Promise.race([working, care.expired.then((): typeof TIMED_OUT => TIMED_OUT)]);
      if (outcome === TIMED_OUT)
        throw new HostError(
          current,
          `${said}; the change goes on on the host by itself (it finishes, or puts the host back if it fails), but its end was not seen within ${timeLimitText(care.ms)} more: check the host with ibfleet status --hosts ${host.id}`,
        );
    }
    if (outcome === TIMED_OUT) throw timeoutError(host, current, deadline.timeoutMs);
    return { host: ref, durationMs: durationMs(), ...outcome };
  } catch (error) {
    const interrupted = options.interrupt.aborted && !deadline.hardSignal.aborted;
    return { host: ref, durationMs: durationMs(), ...failureOutcome(error, current, interrupted) };
  } finally {
    care.stop();
  }
}

/** One host's Aftercare: started when the deadline passes with a change under way. */
class AftercareClock implements Aftercare {
  private readonly controller = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  private startedAt: number | undefined;
  private changes = 0;
  private said: string | undefined;
  readonly signal = this.controller.signal;
  readonly ms: number;
  readonly expired: Promise<void>;
  private expire!: () => void;
  constructor(
    private readonly deadline: Deadline,
    private readonly now: () => number,
    private readonly stage: () => Stage,
  ) {
    this.ms = aftercareMs(deadline.timeoutMs);
    this.expired = new Promise((resolve) => (this.expire = resolve));
  }
  get under(): boolean {
    return this.changes > 0;
  }
  changing(on: boolean): void {
    this.changes = Math.max(0, this.changes + (on ? 1 : -1));
  }
  start(said: string): void {
    this.said = said;
    this.startedAt = this.now();
    this.timer = setTimeout(() => {
      this.controller.abort();
      this.expire();
    }, this.ms);
  }
  stop(): void {
    clearTimeout(this.timer);
  }
  remainingMs(): number {
    if (this.startedAt !== undefined) return Math.max(0, this.ms - (this.now() - this.startedAt));
    return Math.max(0, this.deadline.timeoutMs - (this.now() - this.deadline.startedAt)) + this.ms;
  }
  timedOut(): string | undefined {
    return (
      this.said ??
      (this.deadline.hardSignal.aborted
        ? `timed out after ${timeLimitText(this.deadline.timeoutMs)} during ${this.stage()}`
        : undefined)
    );
  }
}

/**
 * --timeout as the user gave it, to the millisecond a timer keeps: `0.4 s`, `60 s` (rounding to
 * whole seconds said "within 0 s" for 0.4).
 */
export function timeLimitText(timeoutMs: number): string {
  return `${Number((timeoutMs / 1000).toFixed(3))} s`;
}

/** No answer while connecting is an unreachable host; a timeout later is a failure at that stage. */
function timeoutError(host: Host, stage: Stage, timeoutMs: number): HostError {
  const limit = timeLimitText(timeoutMs);
  return stage === 'connect'
    ? new ConnectError(`no answer from ${host.target} within ${limit} (--timeout)`, true)
    : new HostError(stage, `timed out after ${limit} during ${stage}`);
}

/**
 * Stages that only read: a host stopped in one of them by Ctrl-C did not fail, it did not get to
 * run (changes are never cut by Ctrl-C: they run under the deadline's hard signal alone).
 */
const READING_STAGES: ReadonlySet<Stage> = new Set(['connect', 'probe', 'check']);

export function failureOutcome(error: unknown, stage: Stage, interrupted = false): HostOutcome {
  const at = error instanceof HostError ? error.stage : stage;
  if (interrupted && READING_STAGES.has(at) && READING_STAGES.has(stage))
    return { status: 'not-run', reasons: [`interrupted during ${stage}`] };
  const failure: HostFailure =
    error instanceof HostError
      ? {
          stage: error.stage,
          message: error.message,
          stderrTail: error.stderrTail,
          ...(error.exitCode === undefined ? {} : { exitCode: error.exitCode }),
        }
      : {
          stage,
          message: interrupted
            ? 'interrupted'
            : `unexpected error: ${error instanceof Error ? error.message : String(error)}`,
          stderrTail: error instanceof Error && !interrupted ? (error.stack ?? '') : '',
        };
  const unreachable = error instanceof ConnectError && error.unreachable;
  return { status: unreachable ? 'unreachable' : 'failed', reasons: [failure.message], error: failure };
}

export interface AnnounceOptions {
  readonly header: RunHeader;
  readonly concurrency: number;
  readonly interrupt: AbortSignal;
  readonly now?: () => number;
}

/**
 * One run as its display sees it: the start event with the hosts, `body` (the fan-out, reporting
 * to the display's events), the end event with every host's result and the matrix's cells, then
 * the display's finish (the JSON document, the TUI's last frame). Returns the end-of-run record.
 */
export async function announceRun(
  hosts: readonly Host[],
  options: AnnounceOptions,
  display: RunDisplay,
  body: (events: RunEvents) => Promise<{
    readonly results: readonly HostResult[];
    readonly cells?: readonly MatrixCell[];
    readonly matrix?: MatrixStart;
    readonly warnings?: readonly string[];
    readonly problems?: readonly string[];
  }>,
): Promise<RunEnd> {
  const now = options.now ?? Date.now;
  const startedAt = now();
  display.events.onRunStart?.({
    ...options.header,
    hosts: hosts.map(hostRef),
    concurrency: options.concurrency,
    startedAt,
  });
  const { results, cells = [], matrix, warnings, problems } = await body(display.events);
  const end: RunEnd = {
    results,
    cells,
    ...(matrix ? { matrix } : {}),
    ...(warnings?.length ? { warnings } : {}),
    ...(problems?.length ? { problems } : {}),
    durationMs: now() - startedAt,
    interrupted: options.interrupt.aborted,
  };
  display.events.onRunEnd?.(end);
  await display.finish(end);
  return end;
}
