/**
 * What happens on one host for deploy, status and rollback: connect once, probe, decide (pure,
 * src/plan), change if needed, verify from the state the change left. Everything a host needs
 * travels over its one SSH connection, in as few channels as the work allows.
 */
import { HostError } from '../errors.js';
import type { Fleet, Host } from '../inventory/model.js';
import { osName, type HostFacts } from '../facts/host-facts.js';
import { lockedMessage, readChangeOutput, readProbe } from '../plan/change-output.js';
import { stateDifferences } from '../plan/restore.js';
import {
  assessStatus,
  checksOf,
  planDeploy,
  probeWants,
  reassessDeploy,
  verification,
  type DeployPlan,
} from '../plan/host-plan.js';
import { assessRollback, needsChange, rollbackChanges, rollbackLines } from '../plan/rollback.js';
import type { Playbook } from '../playbook/playbook.js';
import { AFTER_MARK, renderApplyScript, renderRollbackScript } from '../render/apply-script.js';
import { LOCK_TAKEN_MARK, LOCK_WAIT_MARK, LOCKED_EXIT } from '../render/host-lock.js';
import { PROBE_END, renderProbeScript } from '../render/probe-script.js';
import type { Stage } from '../vocabulary.js';
import { cutOffReason, newRunId, restoreAfterFailure, settleCutOffChange } from './after-change.js';
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
async function withSession<T>(
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

async function probe(
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

interface Decided<D> {
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
async function probeThen<D>(
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
 * For the run log: the script a change sent, what it printed before its closing probe, and its
 * exit. Returns the output read (readChangeOutput), so the closing probe is parsed once per host.
 */
function recordChange(
  task: HostTask,
  what: string,
  script: string,
  result: ExecResult,
): ReturnType<typeof readChangeOutput> {
  const read = readChangeOutput(result.stdout);
  task.record(`${what} script (sent on stdin to sh -s as root)`, script);
  task.record(`${what} output (exit ${result.code ?? `signal ${result.signal ?? '?'}`})`, read.changeOutput);
  if (result.stderr.trim() !== '') task.record(`${what} stderr`, result.stderr);
  return read;
}

export interface DeployOptions {
  readonly dryRun: boolean;
}

export function deployHost(ctx: WorkflowContext, options: DeployOptions) {
  return (task: HostTask): Promise<HostOutcome> =>
    withSession(task, ctx.transport, (session, reconnect) => deployOn(task, ctx, options, { session, reconnect }));
}

/** The host's one connection, and how to open another to see a change through. */
interface Connection {
  readonly session: Session;
  readonly reconnect: () => Promise<Session>;
}

/** Probe, plan, and either report (dry run, nothing to do) or push the change and settle it. */
async function deployOn(
  task: HostTask,
  ctx: WorkflowContext,
  options: DeployOptions,
  connection: Connection,
): Promise<HostOutcome> {
  const runId = ctx.probed?.(task.host)?.runId ?? newRunId();
  let sent = '';
  const {
    facts,
    decision: plan,
    result,
  } = await probeThen(
    task,
    connection.session,
    ctx,
    decideDeploy(task, ctx, options, runId, (script) => (sent = script)),
    options.dryRun ? {} : { lock: { kind: 'deploy', runId } },
  );
  const os = osName(facts);
  const base = { manager: plan.manager, ...(os ? { os } : {}) };

  if (options.dryRun) {
    const planText = plan.changes.length ? renderApplyScript(task.host, ctx.fleet, plan) : '';
    return {
      ...base,
      status: plan.changes.length ? 'planned' : 'unchanged',
      reasons: [...plan.notes, ...plan.changes.map((c) => c.text)],
      changes: plan.changes,
      checks: checksOf(plan.assessment),
      planText,
    } as const;
  }
  if (!result) {
    task.stage('verify');
    const check = verification(plan.assessment);
    if (!check.ok) throw new HostError('verify', check.message);
    return { ...base, status: 'unchanged', reasons: [...plan.notes], checks: checksOf(plan.assessment) } as const;
  }
  return settleDeploy(task, ctx, connection, { runId, facts, plan, sent, result, base });
}

/**
 * Deploy's decision from the probe: the plan, and unless it is a dry run or there is nothing to do,
 * the change script (handed to `sending` for the run log) and the stages its output marks.
 */
function decideDeploy(
  task: HostTask,
  ctx: WorkflowContext,
  options: DeployOptions,
  runId: string,
  sending: (script: string) => void,
): (probed: HostFacts) => Decided<DeployPlan> {
  return (probed) => {
    task.stage('plan');
    const planned = planDeploy(task.host, ctx.fleet, ctx.playbook, probed);
    if (options.dryRun || planned.changes.length === 0) return { decision: planned };
    const script = renderApplyScript(task.host, ctx.fleet, planned, runId);
    sending(script);
    task.aftercare.changing(true);
    return {
      decision: planned,
      change: {
        stage: 'push',
        script,
        options: {
          signal: task.hardSignal,
          onLine: (line) => {
            if (line.startsWith('ibfleet-routes:')) task.stage('apply');
            else if (line === AFTER_MARK) task.stage('verify');
          },
        },
      },
    };
  };
}

/** A change deploy pushed, with what it was decided from. */
interface PushedChange {
  readonly runId: string;
  readonly facts: HostFacts;
  readonly plan: DeployPlan;
  readonly sent: string;
  readonly result: ExecResult;
  readonly base: { readonly manager: DeployPlan['manager']; readonly os?: string };
}

/**
 * After the change ran (or was cut off from us and finished on its own): verify from the state it
 * left; changed when that holds, else the host is put back and the failure thrown.
 */
async function settleDeploy(
  task: HostTask,
  ctx: WorkflowContext,
  connection: Connection,
  pushed: PushedChange,
): Promise<HostOutcome> {
  const { runId, plan, sent, result, base } = pushed;
  const read = recordChange(task, 'apply', sent, result);
  if (result.code === LOCKED_EXIT) throw new HostError('push', lockedMessage(result.stderr), { exitCode: LOCKED_EXIT });
  const { changeOutput } = read;
  let { after } = read;
  let live = connection.session;
  const cutOff = cutOffReason(result, 'the change', task.aftercare.timedOut());
  if (cutOff)
    ({ after, session: live } = await settleCutOffChange(task, ctx.fleet, connection.reconnect, {
      runId,
      why: cutOff,
    }));
  if (!after.complete) throw scriptFailed('apply', 'applying the change', result);
  task.stage('verify');
  const assessment = reassessDeploy(task.host, ctx.fleet, ctx.playbook, plan, after);
  const check = verification(assessment);
  const told = cutOff ? [`${cutOff}; the host finished the change on its own (checked on a new connection)`] : [];
  if ((cutOff || result.code === 0) && check.ok)
    return {
      ...base,
      status: 'changed',
      reasons: [...told, ...plan.notes, ...plan.changes.map((c) => c.text)],
      changes: plan.changes,
      checks: checksOf(assessment),
    } as const;
  const failure =
    !cutOff && result.code !== 0
      ? scriptFailed('apply', 'applying the change', result)
      : new HostError(cutOff ? 'apply' : 'verify', check.ok ? 'verification failed' : check.message);
  return failDeploy(task, ctx, live, pushed, { after, changeOutput, cutOff, told, failure });
}

/** What settling a failed change found: the state it left, its output, and the failure to throw. */
interface FailedDeploy {
  readonly after: HostFacts;
  readonly changeOutput: string;
  readonly cutOff: string | undefined;
  readonly told: readonly string[];
  readonly failure: HostError;
}

/** Put the host back (unless it already did so itself) and throw the failure, saying both. */
async function failDeploy(
  task: HostTask,
  ctx: WorkflowContext,
  live: Session,
  pushed: PushedChange,
  failed: FailedDeploy,
): Promise<never> {
  const { runId, facts, plan } = pushed;
  const { after, changeOutput, cutOff, told, failure } = failed;
  // Cut off from a change that then failed and put the host back itself: what it found missing is all of it, no news.
  const putBack = cutOff !== undefined && stateDifferences(task.host, ctx.fleet, facts, after).length === 0;
  const said = putBack
    ? `${cutOff}; the change failed on the host (checked on a new connection)`
    : [...told, failure.message].join('; ');
  const message = await restoreAfterFailure(
    task,
    live,
    ctx.fleet,
    {
      runId,
      before: facts,
      after,
      written: plan.write,
      changeOutput,
      parts: plan.parts,
      cutOff: cutOff !== undefined,
    },
    said,
  );
  throw new HostError(failure.stage, message, {
    ...(failure.exitCode === undefined ? {} : { exitCode: failure.exitCode }),
    stderrTail: changeOutput.trim().split('\n').slice(-8).join('\n'),
  });
}

/** Read-only, for env: the host's probe, handed to `keep`; the host is ok once it is read. */
export function readFactsHost(ctx: WorkflowContext, keep: (host: Host, facts: HostFacts) => void) {
  return (task: HostTask): Promise<HostOutcome> =>
    withSession(task, ctx.transport, async (session) => {
      keep(task.host, await probe(task, session, ctx, {}));
      return { status: 'ok', reasons: [] };
    });
}

/** Read-only: ok when everything deploy would leave is in place, else drift with the reasons; with `diff`, the differing files as diffs. */
export function statusHost(ctx: WorkflowContext, options: { readonly diff?: boolean } = {}) {
  return (task: HostTask): Promise<HostOutcome> =>
    withSession(task, ctx.transport, async (session) => {
      const facts = await probe(task, session, ctx, { fileContents: options.diff === true });
      task.stage('check');
      const os = osName(facts);
      return { ...assessStatus(task.host, ctx.fleet, ctx.playbook, facts, options), ...(os ? { os } : {}) };
    });
}

export function rollbackHost(ctx: WorkflowContext) {
  return (task: HostTask): Promise<HostOutcome> =>
    withSession(task, ctx.transport, async (session, reconnect) => {
      const runId = newRunId();
      let sent = '';
      const {
        facts: before,
        decision: initial,
        result,
      } = await probeThen(
        task,
        session,
        ctx,
        (probed) => {
          task.stage('plan');
          const assessment = assessRollback(task.host, ctx.fleet, probed);
          if (!needsChange(assessment)) return { decision: assessment };
          sent = renderRollbackScript(task.host, ctx.fleet, rollbackLines(task.host, ctx.fleet, probed), runId);
          task.aftercare.changing(true);
          return {
            decision: assessment,
            change: {
              stage: 'apply',
              script: sent,
              options: { signal: task.hardSignal, onLine: (line) => line === AFTER_MARK && task.stage('verify') },
            },
          };
        },
        { lock: { kind: 'rollback', runId } },
      );
      const os = osName(before);
      const base = os ? { os } : {};
      if (!result) return { ...base, status: 'unchanged', reasons: [], checks: checksOf(initial) } as const;
      let { after } = recordChange(task, 'rollback', sent, result);
      if (result.code === LOCKED_EXIT)
        throw new HostError('apply', lockedMessage(result.stderr), { exitCode: LOCKED_EXIT });
      const cutOff = cutOffReason(result, 'the rollback', task.aftercare.timedOut());
      if (cutOff) ({ after } = await settleCutOffChange(task, ctx.fleet, reconnect, { runId, why: cutOff }));
      else if (result.code !== 0 || !after.complete) throw scriptFailed('apply', 'rollback', result);
      task.stage('verify');
      const assessment = assessRollback(task.host, ctx.fleet, after);
      const check = verification(assessment);
      const told = cutOff ? [`${cutOff}; the host finished the rollback on its own (checked on a new connection)`] : [];
      if (!check.ok) throw new HostError('verify', [...told, check.message].join('; '));
      const changes = rollbackChanges(initial);
      return {
        ...base,
        status: 'changed',
        reasons: [...told, ...changes.map((c) => c.text)],
        changes,
        checks: checksOf(assessment),
      } as const;
    });
}
