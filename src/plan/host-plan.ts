/**
 * What deploy, status and rollback decide for one host from what its probe found: which network
 * manager configures it, which files to write and which to remove, what will change, and whether
 * the state a change left behind is the one wanted. Pure: src/runner/host-workflows.ts probes,
 * asks these questions, and runs what the answers call for.
 */
import { HostError } from '../errors.js';
import type { Fleet, Host, Manager } from '../inventory/model.js';
import type { Playbook } from '../playbook/playbook.js';
import { AFTER_MARK, type FormerToRemove } from '../render/apply-script.js';
import { renderHostFiles, type RenderedFile } from '../render/files.js';
import type { NativeSteps } from '../render/native-apply.js';
import { HOOK_PATHS } from '../render/paths.js';
import { TRACKED_PATHS } from '../render/probe-script.js';
import type { Change, Check, FileDiff, NicFabric } from '../vocabulary.js';
import { fileDiffs } from './file-diff.js';
import { assessHost, failingFindings, plannedChanges, type Assessment } from './assess.js';
import { detectManager, managerPrerequisite } from './detect-manager.js';
import { fabricProblems, nicFabric } from './fabric-health.js';
import { neighbourWarning } from './fabric-fleet.js';
import { parseProbe, type HostFacts } from './facts.js';
import { planNativeSteps } from './native-plan.js';
import { formerRemoval, formerRouting, type FormerRouting } from './owned.js';
import { choosePersistence, hostTraits, nativeFiles, repairTimerNotes, type Persistence } from './persistence.js';

/** The inventory's manager, or the one the host's configuration shows. */
export function chooseManager(host: Host, facts: HostFacts): { manager: Manager } | { error: string } {
  if (host.manager !== 'auto') return { manager: host.manager };
  const detection = detectManager(host, facts);
  return detection.ok ? { manager: detection.manager } : { error: detection.message };
}

export function checksOf(assessment: Assessment): Check[] {
  return assessment.findings.map((f) => ({ name: f.id, ok: f.ok, detail: f.detail }));
}

export interface DeployPlan {
  readonly manager: Manager;
  readonly files: readonly RenderedFile[];
  readonly assessment: Assessment;
  readonly write: readonly RenderedFile[];
  readonly remove: readonly string[];
  /** The changes, in the order the assessment found them; empty: nothing to do. */
  readonly changes: readonly Change[];
  /** How the routing persists on this host, and what the plan says about that choice. */
  readonly persistence: Persistence;
  readonly notes: readonly string[];
  /** What the network manager is told (native persistence, or taking it away). */
  readonly native: NativeSteps | undefined;
  /** False when the routing lives in the manager's configuration (no routing script). */
  readonly routingScript: boolean;
  /** What an earlier deploy owned and this inventory does not give the host, as the record found before the change lists it. */
  readonly formerRouting: FormerRouting;
  /** Of that, what is still on the host and goes. */
  readonly former: FormerToRemove | undefined;
}

/** Deploy's plan for a host, or a HostError at stage `plan` saying why it cannot be deployed. */
export function planDeploy(host: Host, fleet: Fleet, playbook: Playbook, facts: HostFacts): DeployPlan {
  const chosen = chooseManager(host, facts);
  if ('error' in chosen) throw new HostError('plan', chosen.error);
  const prerequisite = playbook.persist ? managerPrerequisite(chosen.manager, facts) : undefined;
  if (prerequisite) throw new HostError('plan', prerequisite);
  const { persistence, notes, blockers } = choosePersistence(host, playbook, chosen.manager, facts);
  const files = renderHostFiles(host, fleet, playbook, chosen.manager, nativeFiles(persistence), hostTraits(facts));
  const former = formerRouting(host, facts.owned);
  const assessment = assessHost({ host, fleet, playbook, manager: chosen.manager, facts, files, persistence, former });
  // Nothing is changed on a host that cannot take the whole change.
  if (assessment.blockers.length > 0 || blockers.length > 0) throw new HostError('plan', [...assessment.blockers, ...blockers].join('; '));
  const failing = new Set(failingFindings(assessment).map((f) => f.id));
  const write = files.filter((f) => failing.has(`file ${f.path}`));
  const remove = TRACKED_PATHS.filter((p) => failing.has(`stale ${p}`));
  return {
    manager: chosen.manager,
    files,
    assessment,
    write,
    remove,
    changes: plannedChanges(assessment),
    persistence,
    notes: [...notes, ...repairTimerNotes(playbook, persistence, facts)],
    native: planNativeSteps({ host, fleet, playbook, persistence, assessment, facts, write, remove, former }),
    routingScript: persistence.kind === 'hook',
    formerRouting: former,
    former: formerToRemove(former, failing),
  };
}

/** An earlier deploy's tables still holding routes and its rules still there: each goes (every rule it made, to be sure). */
function formerToRemove(former: FormerRouting, failing: ReadonlySet<string>): FormerToRemove | undefined {
  const tables = former.tables.filter((t) => failing.has(`old table ${t}`));
  if (tables.length === 0 && ![...failing].some((id) => id.startsWith('old rule '))) return undefined;
  return formerRemoval(former, tables);
}

/** The plan's assessment of the state a change left behind (the apply script's own probe). */
export function reassessDeploy(host: Host, fleet: Fleet, playbook: Playbook, plan: DeployPlan, after: HostFacts): Assessment {
  return assessHost({ host, fleet, playbook, manager: plan.manager, facts: after, files: plan.files, persistence: plan.persistence, former: plan.formerRouting });
}

export function verification(assessment: Assessment): { ok: true } | { ok: false; message: string } {
  const failing = failingFindings(assessment);
  if (assessment.blockers.length === 0 && failing.length === 0) return { ok: true };
  return { ok: false, message: `verification failed: ${[...assessment.blockers, ...failing.map((f) => f.detail)].join('; ')}` };
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
}

/**
 * Status's finding for a host: ok, or drift with the reasons — the routing the playbook leaves,
 * and with its fabric-health step each fabric NIC's RDMA port (unless the inventory says
 * `fabric.rdma: false`): a port that cannot carry RDMA makes the host not ok too. With `diff`, each
 * differing file as a diff.
 */
export function assessStatus(host: Host, fleet: Fleet, playbook: Playbook, facts: HostFacts, options: { readonly diff?: boolean } = {}): StatusFinding {
  const health = fabricHealth(host, fleet, playbook, facts);
  let chosen = chooseManager(host, facts);
  if ('error' in chosen) {
    // The hook that is installed tells which manager a previous deploy chose.
    const installed = (Object.entries(HOOK_PATHS) as [Manager, string][]).filter(([, p]) => facts.files.get(p));
    if (installed.length === 1) chosen = { manager: installed[0]![0] };
    else return { status: 'drift', reasons: [...health.problems, chosen.error], ...health.extra };
  }
  const { persistence, blockers: persistenceBlockers } = choosePersistence(host, playbook, chosen.manager, facts);
  const files = renderHostFiles(host, fleet, playbook, chosen.manager, nativeFiles(persistence), hostTraits(facts));
  const assessment = assessHost({ host, fleet, playbook, manager: chosen.manager, facts, files, persistence });
  // A port that is ACTIVE behind an interface that is down says more than "the interface is down".
  const told = new Set(health.fabric.filter((n) => n.state === 'ACTIVE' && !n.up).map((n) => n.iface));
  const blockers = assessment.blockers.filter((b) => ![...told].some((iface) => b.startsWith(`${iface} is down`)));
  // A port that cannot carry traffic comes first: the missing address or route it took with it is its consequence.
  const reasons = [...health.problems, ...blockers, ...persistenceBlockers, ...failingFindings(assessment).map((f) => f.detail)];
  // Notes come last and are no drift (a host without systemd has no repair timer, and needs none).
  const notes = repairTimerNotes(playbook, persistence, facts);
  return { status: reasons.length ? 'drift' : 'ok', reasons: [...reasons, ...notes], manager: chosen.manager, checks: checksOf(assessment), ...health.extra, ...(options.diff ? { diffs: fileDiffs(files, facts) } : {}) };
}

function fabricHealth(host: Host, fleet: Fleet, playbook: Playbook, facts: HostFacts): { fabric: NicFabric[]; problems: string[]; extra: { warnings?: string[]; fabric?: NicFabric[] } } {
  const neigh = playbook.fabricSysctl ? neighbourWarning(fleet, facts.neigh) : undefined;
  const warnings = neigh ? [neigh] : [];
  if (!playbook.fabricHealth || !fleet.fabric.rdma || !facts.rdma) return { fabric: [], problems: [], extra: warnings.length ? { warnings } : {} };
  const fabric = host.nics.map((nic) => nicFabric(nic, facts));
  return { fabric, problems: fabricProblems(host, fabric, facts), extra: { fabric, ...(warnings.length ? { warnings } : {}) } };
}

/** Whether an assessment finds anything to change (rollback: anything of ibfleet's left). */
export function needsChange(assessment: Assessment): boolean {
  return assessment.blockers.length > 0 || failingFindings(assessment).length > 0;
}

/** What a rollback changes: each failing finding's fix. */
export function rollbackChanges(assessment: Assessment): Change[] {
  return failingFindings(assessment).flatMap((f) => (f.fix ? [f.fix] : []));
}

/**
 * The output of an apply or rollback script, cut at AFTER_MARK: what the change itself printed,
 * and the facts its closing probe found (incomplete when the mark or the probe's end never came).
 */
export function readChangeOutput(stdout: string): { changeOutput: string; after: HostFacts } {
  const at = stdout.indexOf(`${AFTER_MARK}\n`);
  return {
    changeOutput: stdout.slice(0, stdout.indexOf(AFTER_MARK)),
    after: parseProbe(at < 0 ? '' : stdout.slice(at + AFTER_MARK.length + 1)),
  };
}

/** What a host whose lock another run holds said about it (the apply script's last stderr line). */
export function lockedMessage(stderr: string): string {
  return stderr.trim().split('\n').pop() || 'the host lock is held';
}
