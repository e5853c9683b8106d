/**
 * One host's session for deploy, status and rollback (host-workflows.ts): the connection (and a
 * new one to see a change through), the probe, the host lock's wait within the host's time, the
 * probe and the change in one shell, and the run log's record of a change. What each workflow
 * decides from the probe is host-workflows.ts's.
 */
import { HostError } from '../errors.js';
import type { Fleet, Host } from '../inventory/model.js';
import type { HostFacts } from '../facts/host-facts.js';
import { lockedMessage, readChangeOutput, readProbe } from '../plan/change-output.js';
import { probeWants } from '../plan/host-plan.js';
import type { Playbook } from '../playbook/playbook.js';
import { LOCK_TAKEN_MARK, LOCK_WAIT_MARK, LOCKED_EXIT } from '../render/host-lock.js';
import { PROBE_END, renderProbeScript } from '../render/probe-script.js';
import { filesApart } from '../render/write-files.js';
import type { RenderedFile } from '../script/rendered-file.js';
import type { Stage } from '../vocabulary.js';
import type { HostOutcome, HostTask } from './fanout.js';
import {
  requireWhole,
  scriptFailed,
  type Continuation,
  type ExecResult,
  type Session,
  type Transport,
} from './transport.js';

export interface WorkflowContext {
  readonly fleet: Fleet;
  readonly playbook: Playbook;
  readonly transport: Transport;
  /** Hosts whose probe already ran in this run (onboard's discovery): decide from it, do not probe again. */
  readonly probed?: (host: Host) => Probed | undefined;
}

/** A probe that already ran, and the shell it ran in, still waiting for what comes next. */
export interface Probed {
  readonly facts: HostFacts;
  /**
   * Sends the change (or, undefined, the end of input) to the probe's shell; resolves with the
   * change's result, or undefined when the shell was gone before the change could be sent.
   */
  readonly shell: (change: Continuation | undefined) => Promise<ExecResult | undefined>;
  /** The run id under which that shell holds the host lock: the change it runs is that run's. */
  readonly runId: string;
}

/**
 * Connect, run `fn`, close. `fn` may connect again (a change cut off from us is looked at on a new
 * connection); every connection is counted and closed.
 */
export async function withSession<T>(
  task: HostTask,
  transport: Transport,
  fn: (session: Session, reconnect: () => Promise<Session>) => Promise<T & HostOutcome>,
): Promise<HostOutcome> {
  task.stage('connect');
  const sessions = [await transport.connect(task.host, task.signal)];
  const reconnect = async () => {
    // Seeing a change through, which may go on past the deadline (fanout.ts Aftercare).
    const again = await transport.connect(task.host, task.aftercare.signal);
    sessions.push(again);
    return again;
  };
  try {
    const outcome = await fn(sessions[0]!, reconnect);
    return {
      ...outcome,
      connections: sessions.length,
      channels: sessions.reduce((n, s) => n + s.channels, 0),
      reasons: [...sessions[0]!.notes, ...outcome.reasons],
    };
  } finally {
    for (const session of sessions) session.close();
  }
}

export async function probe(
  task: HostTask,
  session: Session,
  ctx: WorkflowContext,
  options: { readonly fileContents?: boolean } = {},
): Promise<HostFacts> {
  task.stage('probe');
  const script = renderProbeScript(task.host, ctx.fleet, { ...options, wants: probeWants(ctx.playbook, task.host) });
  const result = requireWhole('probe', 'the probe', await session.run(script, { signal: task.signal }));
  const facts = readProbe(result.stdout);
  if (!facts.complete) throw scriptFailed('probe', 'probe', result);
  return facts;
}

export interface Decided<D> {
  readonly decision: D;
  /** What to run on the host because of it, and the stage that starts. */
  readonly change?: Continuation & { readonly stage: Stage };
}

/**
 * The host gives up waiting for another run's lock this long before the run's own deadline, so the
 * failure names the lock rather than a timeout somewhere in the probe.
 */
const LOCK_GIVE_UP_MARGIN_MS = 1500;

/** The host lock for a changing run, waited for within what is left of the host's time. */
export function lockWithin(
  task: HostTask,
  kind: 'deploy' | 'rollback',
  runId: string,
): { kind: 'deploy' | 'rollback'; runId: string; waitSeconds: number } {
  return { kind, runId, waitSeconds: Math.floor((task.remainingMs() - LOCK_GIVE_UP_MARGIN_MS) / 1000) };
}

/** The lock's marks in a probe's output, as the host's stage: waiting for another run, then probing. */
export function lockProgress(task: HostTask): (line: string) => void {
  return (line) => {
    if (line === LOCK_WAIT_MARK) task.stage('wait');
    else if (line === LOCK_TAKEN_MARK) task.stage('probe');
  };
}

/**
 * Probe, decide (pure, src/plan), and run the change the decision calls for. The change runs in the
 * shell that ran the probe: one channel per host instead of two, which spares each host a session
 * (sshd's fork, a login shell).
 *
 * With `lock` (deploy, rollback), that shell first takes the host lock — waiting, within the host's
 * time left, for a run that holds it — and keeps it until the change has run: the probe, the
 * decision and the change all happen under one lock, so two runs started together queue, and the
 * second decides from what the first left (usually: nothing to do).
 */
export async function probeThen<D>(
  task: HostTask,
  session: Session,
  ctx: WorkflowContext,
  decide: (facts: HostFacts) => Decided<D>,
  options: { readonly lock?: { readonly kind: 'deploy' | 'rollback'; readonly runId: string } },
): Promise<{ facts: HostFacts; decision: D; result: ExecResult | undefined }> {
  const fleet = ctx.fleet;
  const probed = ctx.probed?.(task.host);
  if (probed) {
    let decided: Decided<D>;
    try {
      decided = decide(probed.facts);
    } catch (error) {
      void probed.shell(undefined);
      throw error;
    }
    const { decision, change } = decided;
    if (change) task.stage(change.stage);
    const result = await probed.shell(change);
    if (!change) return { facts: probed.facts, decision, result: undefined };
    return { facts: probed.facts, decision, result: result ?? (await session.run(change.script, change.options)) };
  }
  task.stage('probe');
  const lock = options.lock && lockWithin(task, options.lock.kind, options.lock.runId);
  let decided: (Decided<D> & { facts: HostFacts }) | undefined;
  const conversation = await session.converse(
    renderProbeScript(task.host, fleet, { wants: probeWants(ctx.playbook, task.host), ...(lock ? { lock } : {}) }),
    PROBE_END,
    (output) => {
      const facts = readProbe(output);
      decided = { facts, ...decide(facts) };
      if (decided.change) task.stage(decided.change.stage);
      return decided.change;
    },
    { signal: task.signal, onLine: lockProgress(task) },
  );
  if (!decided && conversation.code === LOCKED_EXIT)
    throw new HostError('wait', lockedMessage(conversation.stderr), { exitCode: LOCKED_EXIT });
  // Drowned in output before it ended, or the end marker never came: the probe was cut short.
  if (conversation.cut && !conversation.cut.afterTurn)
    requireWhole('probe', 'the probe', conversation, 'nothing was changed');
  if (!decided) throw scriptFailed('probe', 'probe', conversation);
  return { facts: decided.facts, decision: decided.decision, result: decided.change ? conversation : undefined };
}

/**
 * For the run log: the script a change sent, the files it wrote (`files`, its plan's; each one's
 * content apart from the script: filesApart), what it printed before its closing probe, and its
 * exit. Returns the output read (readChangeOutput, with `opening`, the facts the change was
 * decided from), so the closing probe is parsed once per host.
 */
export function recordChange(
  task: HostTask,
  what: string,
  change: { readonly script: string; readonly opening: HostFacts; readonly files?: readonly RenderedFile[] },
  result: ExecResult,
): ReturnType<typeof readChangeOutput> {
  const { script, opening, files = [] } = change;
  const read = readChangeOutput(result.stdout, opening);
  recordScript(task, what, 'sent on stdin to sh -s as root', script, files);
  task.record(`${what} output (exit ${result.code ?? `signal ${result.signal ?? '?'}`})`, read.changeOutput);
  if (result.stderr.trim() !== '') task.record(`${what} stderr`, result.stderr);
  return read;
}

/**
 * For the run log: a change script (`how` it went: sent, or not, in a dry run) with the content of
 * each of `files` it writes apart, each under its own heading (filesApart): the log writes the
 * routing program, the same on every host, once.
 */
export function recordScript(
  task: HostTask,
  what: string,
  how: string,
  script: string,
  files: readonly RenderedFile[],
): void {
  const shown = filesApart(script, files);
  const apart = shown.files.length > 0 ? '; the content of each file it writes apart, below' : '';
  task.record(`${what} script (${how}${apart})`, shown.script);
  for (const f of shown.files) task.record(`${what} file ${f.path} (${f.mode}), as the script writes it`, f.content);
}
