/**
 * What happens on one host for deploy, status and rollback: connect once, probe, decide (pure,
 * src/plan), change if needed, verify from the state the change left. Everything a host needs
 * travels over its one SSH connection, in as few channels as the work allows.
 */
import { HostError } from '../errors.js';
import type { Host } from '../inventory/model.js';
import { osName, type HostFacts } from '../facts/host-facts.js';
import { lockedMessage } from '../plan/change-output.js';
import { stateDifferences } from '../plan/restore.js';
import {
  assessStatus,
  checksOf,
  planDeploy,
  reassessDeploy,
  verification,
  type DeployPlan,
} from '../plan/host-plan.js';
import { assessRollback, needsChange, rollbackChanges, rollbackLines } from '../plan/rollback.js';
import { AFTER_MARK, renderApplyScript, renderRollbackScript } from '../render/apply-script.js';
import { LOCKED_EXIT } from '../render/host-lock.js';
import { cutOffReason, newRunId, restoreAfterFailure, settleCutOffChange } from './after-change.js';
import type { HostOutcome, HostTask } from './fanout.js';
import { scriptFailed, type ExecResult, type Session } from './transport.js';
import {
  probe,
  probeThen,
  recordChange,
  recordScript,
  withSession,
  type Decided,
  type WorkflowContext,
} from './host-session.js';

export { lockProgress, lockWithin, type Probed, type WorkflowContext } from './host-session.js';

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
    if (planText !== '')
      recordScript(task, 'dry run', 'not sent: the script a deploy would send', planText, plan.write);
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
  const read = recordChange(task, 'apply', { script: sent, opening: pushed.facts, files: plan.write }, result);
  if (result.code === LOCKED_EXIT) throw new HostError('push', lockedMessage(result.stderr), { exitCode: LOCKED_EXIT });
  const { changeOutput } = read;
  let { after } = read;
  let live = connection.session;
  const cutOff = cutOffReason(result, 'the change', task.aftercare.timedOut());
  if (cutOff)
    ({ after, session: live } = await settleCutOffChange(task, ctx.fleet, connection.reconnect, {
      runId,
      why: cutOff,
      wants: plan.wants,
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
      let { after } = recordChange(task, 'rollback', { script: sent, opening: before }, result);
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
