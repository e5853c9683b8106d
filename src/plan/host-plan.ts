/**
 * What deploy and status decide for one host from what its probe found: which network manager
 * configures it, how the routing persists, which files to write and which to remove, what will
 * change and what each step adds to the change, and whether the state a change left behind is the
 * one wanted. Pure: src/runner/host-workflows.ts probes, asks these questions, and runs what the
 * answers call for. The playbook's steps answer for themselves; nothing here knows one by name.
 */
import { HostError } from '../errors.js';
import type { Fleet, Host, Manager } from '../inventory/model.js';
import type { HostFacts } from '../facts/host-facts.js';
import type { Playbook } from '../playbook/playbook.js';
import { renderHostFiles } from '../render/host-files.js';
import type { RenderedFile } from '../script/rendered-file.js';
import type { PersistenceChoice } from '../steps/persist/persister.js';
import type { ApplyPart, HostContext, Persistence, StatusPart } from '../steps/step.js';
import type { Change, Check, FileDiff, HostResult, NicFabric } from '../vocabulary.js';
import { assessHost, failingFindings, plannedChanges, type Assessment } from './assess.js';
import { detectManager } from './detect-manager.js';
import { fileDiffs } from './file-diff.js';
import { inTheWay } from './in-the-way.js';
import { planRestore } from './restore.js';
import { restoreLines } from '../render/restore-script.js';

/** The inventory's manager, or the one the host's configuration shows. */
export function chooseManager(host: Host, facts: HostFacts): { manager: Manager } | { error: string } {
  if (host.manager !== 'auto') return { manager: host.manager };
  const detection = detectManager(host, facts);
  return detection.ok ? { manager: detection.manager } : { error: detection.message };
}

export function checksOf(assessment: Assessment): Check[] {
  return assessment.findings.map((f) => ({ name: f.id, ok: f.ok, detail: f.detail }));
}

/** What the playbook's steps need this host's probe to read beyond what every probe reads (ProbeOptions.wants). */
export function probeWants(playbook: Playbook, host: Host): ReadonlySet<string> {
  return new Set(playbook.steps.flatMap((s) => s.step.probeWants?.(host) ?? []));
}

/** What the host must have for the playbook to work at all (its persister's); undefined when it has it. */
export function missingPrerequisite(playbook: Playbook, manager: Manager, facts: HostFacts): string | undefined {
  return playbook.persister.prerequisite(manager, facts);
}

/** Whether the playbook configures the NICs themselves (a step provides what they lack): onboard then finds a machine's NICs without addresses. */
export function providesNics(playbook: Playbook): boolean {
  return playbook.steps.some((s) => s.step.provides !== undefined);
}

/** A host's context, its files and their assessment: what deploy and status both start from. */
interface Decided {
  readonly ctx: HostContext;
  readonly choice: PersistenceChoice;
  readonly files: readonly RenderedFile[];
  readonly assessment: Assessment;
}

function decide(host: Host, fleet: Fleet, playbook: Playbook, facts: HostFacts, manager: Manager): Decided {
  const bare = { host, fleet, playbook: playbook.name, manager, facts };
  // What the steps give the NICs first (an address, the profile carrying it): the rest decides with it.
  const base = { ...bare, provisions: playbook.steps.flatMap((s) => s.step.provides?.(bare) ?? []) };
  // How the routing lasts here: the playbook's persister decides (the routing script deploy runs, without one).
  const choice = playbook.persister.choose(base);
  const ctx = { ...base, persistence: choice.persistence };
  const files = renderHostFiles(playbook, ctx);
  return { ctx, choice, files, assessment: assessHost(playbook, ctx, files) };
}

export interface DeployPlan {
  readonly manager: Manager;
  readonly files: readonly RenderedFile[];
  readonly assessment: Assessment;
  readonly write: readonly RenderedFile[];
  readonly remove: readonly string[];
  /** The changes, in the order the assessment found them; empty: nothing to do. */
  readonly changes: readonly Change[];
  /** How the routing persists on this host, and what the plan says about that choice and the steps. */
  readonly persistence: Persistence;
  readonly notes: readonly string[];
  /** Each step's part of the change script, by step name (the restore hands each its memo back). */
  readonly parts: ReadonlyMap<string, ApplyPart>;
  /** False when the routing lives in the manager's configuration (no routing script). */
  readonly routingScript: boolean;
  /** What the change runs to put the host back when it fails (render/apply-script.ts ApplyPlan.restore); empty without changes. */
  readonly restore: readonly string[];
  /** What the playbook's steps have the probe read beyond every probe, after the change too (probeWants). */
  readonly wants: ReadonlySet<string>;
}

/** Deploy's plan for a host, or a HostError at stage `plan` saying why it cannot be deployed. */
export function planDeploy(host: Host, fleet: Fleet, playbook: Playbook, facts: HostFacts): DeployPlan {
  const chosen = chooseManager(host, facts);
  if ('error' in chosen) throw new HostError('plan', chosen.error);
  const prerequisite = missingPrerequisite(playbook, chosen.manager, facts);
  if (prerequisite) throw new HostError('plan', prerequisite);
  const { ctx, choice, files, assessment } = decide(host, fleet, playbook, facts, chosen.manager);
  // Nothing is changed on a host that cannot take the whole change.
  if (assessment.blockers.length > 0 || choice.blockers.length > 0)
    throw new HostError('plan', [...assessment.blockers.map((b) => b.message), ...choice.blockers].join('; '));
  const failing = failingFindings(assessment);
  const write = files.filter((f) => failing.some((x) => x.subject.kind === 'file' && x.subject.path === f.path));
  const obstacles = inTheWay(write, facts);
  if (obstacles.length > 0) throw new HostError('plan', `${obstacles.join('; ')}; nothing was changed`);
  const remove = failing.flatMap((x) => (x.subject.kind === 'stale' ? [x.subject.path] : []));
  const input = { failing, write, remove };
  const parts = new Map(playbook.steps.map((s) => [s.module.name, s.step.apply?.(ctx, input) ?? {}]));
  const changes = plannedChanges(assessment);
  return {
    manager: chosen.manager,
    files,
    assessment,
    write,
    remove,
    changes,
    persistence: ctx.persistence,
    notes: [...choice.notes, ...playbook.steps.flatMap((s) => s.step.notes?.(ctx) ?? [])],
    parts,
    routingScript: ctx.persistence.kind === 'script',
    // Only a change is ever undone: an unchanged host (most of a fleet's, most runs) is sent none.
    restore: changes.length > 0 ? restoreLines(planRestore(host, fleet, facts, write, '', parts), 'shell') : [],
    wants: probeWants(playbook, host),
  };
}

/** The plan's assessment of the state a change left behind (the apply script's own probe). */
export function reassessDeploy(
  host: Host,
  fleet: Fleet,
  playbook: Playbook,
  plan: DeployPlan,
  after: HostFacts,
): Assessment {
  // What the change was to provide is there now, or verification says it is not: nothing is provided any more.
  return assessHost(
    playbook,
    {
      host,
      fleet,
      playbook: playbook.name,
      manager: plan.manager,
      facts: after,
      persistence: plan.persistence,
      provisions: [],
    },
    plan.files,
  );
}

export function verification(assessment: Assessment): { ok: true } | { ok: false; message: string } {
  const failing = failingFindings(assessment);
  if (assessment.blockers.length === 0 && failing.length === 0) return { ok: true };
  return {
    ok: false,
    message: `verification failed: ${[...assessment.blockers.map((b) => b.message), ...failing.map((f) => f.detail)].join('; ')}`,
  };
}

export interface StatusFinding {
  readonly status: 'ok' | 'drift';
  readonly reasons: string[];
  readonly manager?: Manager;
  readonly checks?: Check[];
  readonly warnings?: string[];
  readonly fabric?: NicFabric[];
  /** With `diff`: each of ibfleet's files that differs, as a diff. */
  readonly diffs?: FileDiff[];
  /** None of ibfleet's files is on the host: never deployed (or rolled back); its drift is all "deploy it". */
  readonly notDeployed?: boolean;
}

/** What the steps say about the host beyond its routing (its RDMA ports, its neighbour table), read-only. */
function statusParts(
  playbook: Playbook,
  host: Host,
  fleet: Fleet,
  facts: HostFacts,
): { problems: string[]; explains: StatusPart['explains'][]; extra: Pick<StatusFinding, 'warnings' | 'fabric'> } {
  const parts = playbook.steps.flatMap((s) => (s.step.status ? [s.step.status({ host, fleet, facts })] : []));
  const warnings = parts.flatMap((p) => p.warnings ?? []);
  const fabric = parts.find((p) => p.fabric)?.fabric;
  return {
    problems: parts.flatMap((p) => p.problems ?? []),
    explains: parts.map((p) => p.explains),
    extra: { ...(fabric ? { fabric: [...fabric] } : {}), ...(warnings.length ? { warnings } : {}) },
  };
}

/**
 * Status's finding for a host: ok, or drift with the reasons — what the steps say first (a port
 * that cannot carry traffic: the missing address or route it took with it is its consequence),
 * then what keeps the host from the playbook, then every failing finding. With `diff`, each
 * differing file as a diff.
 */
export function assessStatus(
  host: Host,
  fleet: Fleet,
  playbook: Playbook,
  facts: HostFacts,
  options: { readonly diff?: boolean } = {},
): StatusFinding {
  const health = statusParts(playbook, host, fleet, facts);
  let chosen = chooseManager(host, facts);
  if ('error' in chosen) {
    // The files a previous deploy installed tell which manager it chose.
    const installed = playbook.persister.installedManager(facts);
    if (installed) chosen = { manager: installed };
    else return { status: 'drift', reasons: [...health.problems, chosen.error], ...health.extra };
  }
  const { ctx, choice, files, assessment } = decide(host, fleet, playbook, facts, chosen.manager);
  const blockers = assessment.blockers.filter((b) => !health.explains.some((explains) => explains?.(b)));
  const reasons = [
    ...health.problems,
    ...blockers.map((b) => b.message),
    ...choice.blockers,
    ...inTheWay(files, facts),
    ...failingFindings(assessment).map((f) => f.detail),
  ];
  // Notes come last and are no drift (a host without systemd has no repair timer, and needs none).
  const notes = playbook.persister.statusNotes(ctx);
  const notDeployed = files.length > 0 && files.every((f) => !facts.files.has(f.path));
  return {
    status: reasons.length ? 'drift' : 'ok',
    reasons: [...reasons, ...notes],
    manager: chosen.manager,
    checks: checksOf(assessment),
    ...health.extra,
    ...(options.diff ? { diffs: fileDiffs(files, facts) } : {}),
    ...(notDeployed && reasons.length ? { notDeployed } : {}),
  };
}

/**
 * Status over the selected hosts together (the fleet's ports, modes, MTUs and GID indexes
 * compared): warnings, and problems that make the run fail (ports in another subnet).
 */
export function fleetFindings(
  playbook: Playbook,
): (results: readonly HostResult[]) => { warnings: string[]; problems: string[] } {
  return (results) => {
    const parts = playbook.steps.flatMap((s) => s.step.fleet?.(results) ?? []);
    return { warnings: parts.flatMap((p) => p.warnings), problems: parts.flatMap((p) => p.problems) };
  };
}
