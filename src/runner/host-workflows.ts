/**
 * What happens on one host for deploy, status and rollback: connect once, probe, decide (pure,
 * src/plan), change if needed, verify from the state the change left. Everything a host needs
 * travels over its one SSH connection, in as few channels as the work allows.
 */
import { HostError } from '../errors.js';
import type { Fleet, Host, Manager } from '../inventory/model.js';
import { assessHost, failingFindings, plannedChanges, type Assessment } from '../plan/assess.js';
import { detectManager, managerPrerequisite } from '../plan/detect-manager.js';
import { osName, parseProbe, type HostFacts } from '../plan/facts.js';
import { assessRollback } from '../plan/rollback.js';
import type { Playbook } from '../playbook/playbook.js';
import { AFTER_MARK, LOCKED_EXIT, renderApplyScript, renderRollbackScript } from '../render/apply-script.js';
import { renderHostFiles, type RenderedFile } from '../render/files.js';
import { HOOK_PATHS } from '../render/paths.js';
import { renderProbeScript, SECTION_MARK } from '../render/probe-script.js';
import type { Check, Stage } from '../vocabulary.js';
import type { HostOutcome, HostTask } from './fanout.js';
import { scriptFailed, type Continuation, type ExecResult, type Session, type Transport } from './transport.js';

export interface WorkflowContext {
  readonly fleet: Fleet;
  readonly playbook: Playbook;
  readonly transport: Transport;
}

async function withSession<T>(task: HostTask, transport: Transport, fn: (session: Session) => Promise<T & HostOutcome>): Promise<HostOutcome> {
  task.stage('connect');
  const session = await transport.connect(task.host, task.signal);
  try {
    const outcome = await fn(session);
    return { ...outcome, connections: 1, channels: session.channels, reasons: [...session.notes, ...outcome.reasons] };
  } finally {
    session.close();
  }
}

async function probe(task: HostTask, session: Session, fleet: Fleet): Promise<HostFacts> {
  task.stage('probe');
  const result = await session.run(renderProbeScript(task.host, fleet), { signal: task.signal });
  const facts = parseProbe(result.stdout);
  if (!facts.complete) throw scriptFailed('probe', 'probe', result);
  return facts;
}

/** The probe's last line: once it is out, the facts are complete and the change can be decided. */
const PROBE_END = `${SECTION_MARK} end`;

interface Decided<D> {
  readonly decision: D;
  /** What to run on the host because of it, and the stage that starts. */
  readonly change?: Continuation & { readonly stage: Stage };
}

/**
 * Probe, decide (pure), and run the change the decision calls for. With a session that can
 * converse, the change runs in the shell that ran the probe: one channel per host instead of two,
 * which spares each host a session (sshd's fork, a login shell). Otherwise two channels.
 */
async function probeThen<D>(task: HostTask, session: Session, fleet: Fleet, decide: (facts: HostFacts) => Decided<D>): Promise<{ facts: HostFacts; decision: D; result: ExecResult | undefined }> {
  if (!session.converse) {
    const facts = await probe(task, session, fleet);
    const { decision, change } = decide(facts);
    if (!change) return { facts, decision, result: undefined };
    task.stage(change.stage);
    return { facts, decision, result: await session.run(change.script, change.options) };
  }
  task.stage('probe');
  let decided: (Decided<D> & { facts: HostFacts }) | undefined;
  const conversation = await session.converse(
    renderProbeScript(task.host, fleet),
    PROBE_END,
    (output) => {
      const facts = parseProbe(output);
      decided = { facts, ...decide(facts) };
      if (decided.change) task.stage(decided.change.stage);
      return decided.change;
    },
    { signal: task.signal },
  );
  // The end marker never came: the probe was cut short.
  if (!decided) throw scriptFailed('probe', 'probe', conversation);
  return { facts: decided.facts, decision: decided.decision, result: decided.change ? conversation : undefined };
}

/** The inventory's manager, or the one the host's configuration shows. */
function chooseManager(host: Host, facts: HostFacts): { manager: Manager } | { error: string } {
  if (host.manager !== 'auto') return { manager: host.manager };
  const detection = detectManager(host, facts);
  return detection.ok ? { manager: detection.manager } : { error: detection.message };
}

function toChecks(assessment: Assessment): Check[] {
  return assessment.findings.map((f) => ({ name: f.id, ok: f.ok, detail: f.detail }));
}

interface Plan {
  readonly manager: Manager;
  readonly files: readonly RenderedFile[];
  readonly assessment: Assessment;
  readonly write: readonly RenderedFile[];
  readonly remove: readonly string[];
  readonly changes: readonly string[];
}

function makePlan(task: HostTask, ctx: WorkflowContext, facts: HostFacts): Plan {
  task.stage('plan');
  const chosen = chooseManager(task.host, facts);
  if ('error' in chosen) throw new HostError('plan', chosen.error);
  const prerequisite = ctx.playbook.persist ? managerPrerequisite(chosen.manager, facts) : undefined;
  if (prerequisite) throw new HostError('plan', prerequisite);
  const files = renderHostFiles(task.host, ctx.fleet, ctx.playbook, chosen.manager);
  const assessment = assessHost({ host: task.host, fleet: ctx.fleet, playbook: ctx.playbook, manager: chosen.manager, facts, files });
  if (assessment.blockers.length > 0) throw new HostError('plan', assessment.blockers.join('; '));
  const failing = new Set(failingFindings(assessment).map((f) => f.id));
  return {
    manager: chosen.manager,
    files,
    assessment,
    write: files.filter((f) => failing.has(`file ${f.path}`)),
    remove: Object.values(HOOK_PATHS).filter((p) => failing.has(`stale ${p}`)),
    changes: plannedChanges(assessment),
  };
}

function verified(assessment: Assessment): { ok: true } | { ok: false; message: string } {
  const failing = failingFindings(assessment);
  if (assessment.blockers.length === 0 && failing.length === 0) return { ok: true };
  return { ok: false, message: `verification failed: ${[...assessment.blockers, ...failing.map((f) => f.detail)].join('; ')}` };
}

export interface DeployOptions {
  readonly dryRun: boolean;
}

export function deployHost(ctx: WorkflowContext, options: DeployOptions) {
  return (task: HostTask): Promise<HostOutcome> =>
    withSession(task, ctx.transport, async (session) => {
      const { facts, decision: plan, result } = await probeThen(task, session, ctx.fleet, (probed) => {
        const planned = makePlan(task, ctx, probed);
        if (options.dryRun || planned.changes.length === 0) return { decision: planned };
        return {
          decision: planned,
          change: {
            stage: 'push',
            script: renderApplyScript(task.host, ctx.fleet, planned),
            options: {
              signal: task.hardSignal,
              onLine: (line) => {
                if (line.startsWith('ibfleet-routes:')) task.stage('apply');
                else if (line === AFTER_MARK) task.stage('verify');
              },
            },
          },
        };
      });
      const os = osName(facts);
      const base = { manager: plan.manager, ...(os ? { os } : {}) };

      if (options.dryRun) {
        const planText = plan.changes.length ? renderApplyScript(task.host, ctx.fleet, plan) : '';
        return { ...base, status: plan.changes.length ? 'planned' : 'unchanged', reasons: [...plan.changes], checks: toChecks(plan.assessment), planText } as const;
      }
      if (!result) {
        task.stage('verify');
        const check = verified(plan.assessment);
        if (!check.ok) throw new HostError('verify', check.message);
        return { ...base, status: 'unchanged', reasons: [], checks: toChecks(plan.assessment) } as const;
      }

      if (result.code === LOCKED_EXIT) throw new HostError('push', result.stderr.trim().split('\n').pop() ?? 'host is locked by another ibfleet run', { exitCode: LOCKED_EXIT });
      const after = parseProbe(afterMark(result.stdout));
      if (result.code !== 0 || !after.complete) throw scriptFailed('apply', 'applying the change', result);
      task.stage('verify');
      const assessment = assessHost({ host: task.host, fleet: ctx.fleet, playbook: ctx.playbook, manager: plan.manager, facts: after, files: plan.files });
      const check = verified(assessment);
      if (!check.ok) throw new HostError('verify', check.message, { stderrTail: result.stdout.slice(0, result.stdout.indexOf(AFTER_MARK)).trim().split('\n').slice(-8).join('\n') });
      return { ...base, status: 'changed', reasons: [...plan.changes], checks: toChecks(assessment) } as const;
    });
}

function afterMark(stdout: string): string {
  const at = stdout.indexOf(`${AFTER_MARK}\n`);
  return at < 0 ? '' : stdout.slice(at + AFTER_MARK.length + 1);
}

/** Read-only: ok when everything deploy would leave is in place, else drift with the reasons. */
export function statusHost(ctx: WorkflowContext) {
  return (task: HostTask): Promise<HostOutcome> =>
    withSession(task, ctx.transport, async (session) => {
      const facts = await probe(task, session, ctx.fleet);
      task.stage('check');
      const os = osName(facts);
      let chosen = chooseManager(task.host, facts);
      if ('error' in chosen) {
        // The hook that is installed tells which manager a previous deploy chose.
        const installed = (Object.entries(HOOK_PATHS) as [Manager, string][]).filter(([, p]) => facts.files.get(p));
        if (installed.length === 1) chosen = { manager: installed[0]![0] };
        else return { status: 'drift', reasons: [chosen.error], ...(os ? { os } : {}) } as const;
      }
      const files = renderHostFiles(task.host, ctx.fleet, ctx.playbook, chosen.manager);
      const assessment = assessHost({ host: task.host, fleet: ctx.fleet, playbook: ctx.playbook, manager: chosen.manager, facts, files });
      const reasons = [...assessment.blockers, ...failingFindings(assessment).map((f) => f.detail)];
      return { status: reasons.length ? 'drift' : 'ok', reasons, manager: chosen.manager, checks: toChecks(assessment), ...(os ? { os } : {}) } as const;
    });
}

export function rollbackHost(ctx: WorkflowContext) {
  return (task: HostTask): Promise<HostOutcome> =>
    withSession(task, ctx.transport, async (session) => {
      const { facts: before, decision: initial, result } = await probeThen(task, session, ctx.fleet, (probed) => {
        task.stage('plan');
        const assessment = assessRollback(task.host, ctx.fleet, probed);
        if (assessment.blockers.length === 0 && failingFindings(assessment).length === 0) return { decision: assessment };
        return {
          decision: assessment,
          change: {
            stage: 'apply',
            script: renderRollbackScript(task.host, ctx.fleet),
            options: { signal: task.hardSignal, onLine: (line) => line === AFTER_MARK && task.stage('verify') },
          },
        };
      });
      const os = osName(before);
      const base = os ? { os } : {};
      if (!result) return { ...base, status: 'unchanged', reasons: [], checks: toChecks(initial) } as const;
      if (result.code === LOCKED_EXIT) throw new HostError('apply', result.stderr.trim().split('\n').pop() ?? 'host is locked by another ibfleet run', { exitCode: LOCKED_EXIT });
      const after = parseProbe(afterMark(result.stdout));
      if (result.code !== 0 || !after.complete) throw scriptFailed('apply', 'rollback', result);
      task.stage('verify');
      const assessment = assessRollback(task.host, ctx.fleet, after);
      const check = verified(assessment);
      if (!check.ok) throw new HostError('verify', check.message);
      return { ...base, status: 'changed', reasons: failingFindings(initial).map((f) => f.fix ?? f.detail), checks: toChecks(assessment) } as const;
    });
}
