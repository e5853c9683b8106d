/**
 * What "rolled back" means on a host, whatever playbook deployed it: none of ibfleet's files, and
 * every step's part taken back (no rule or route of the fabric tables, the main-table subnet routes
 * back as the kernel adds them, per-interface sysctls at the kernel's defaults, none of ibfleet's
 * properties on the NICs' connection profiles — the user's own stay). Every registered step is
 * asked, not only a playbook's: a step a playbook dropped may have left something. Pure.
 */
import type { Fleet, Host } from '../inventory/model.js';
import type { HostFacts } from '../facts/host-facts.js';
import { OWNED_PATHS, ownedKind, STEPS } from '../steps/registry.js';
import { change, type Finding, type UndoLines } from '../steps/step.js';
import type { Change } from '../vocabulary.js';
import { failingFindings, type Assessment } from './assess.js';

function fileFindings(facts: HostFacts): Finding[] {
  return OWNED_PATHS.map((path) => {
    // A link is an admin's (ibfleet writes only files), put back or left by rollback: not ibfleet's left.
    const present = facts.files.has(path) && !facts.files.get(path)!.link;
    return {
      id: `file ${path}`,
      subject: { kind: 'stale', path },
      ok: !present,
      detail: present ? `${path} is still installed` : `${path} absent`,
      fix: present ? change(ownedKind(path), 'remove', path, `remove ${path}`) : undefined,
    };
  });
}

export function assessRollback(host: Host, fleet: Fleet, facts: HostFacts): Assessment {
  const withdrawn = STEPS.flatMap((s) => s.undo?.withdraws?.({ host, fleet, facts }) ?? []);
  const ctx = { host, fleet, facts, withdrawn };
  return { blockers: [], findings: [...fileFindings(facts), ...STEPS.flatMap((s) => s.undo?.findings(ctx) ?? [])] };
}

/** Each step's lines of the rollback script. */
export function rollbackLines(host: Host, fleet: Fleet, facts: HostFacts): UndoLines[] {
  return STEPS.flatMap((s) => (s.undo ? [s.undo.lines({ host, fleet, facts })] : []));
}

/** Whether an assessment finds anything to change (rollback: anything of ibfleet's left). */
export function needsChange(assessment: Assessment): boolean {
  return assessment.blockers.length > 0 || failingFindings(assessment).length > 0;
}

/** What a rollback changes: each failing finding's fix. */
export function rollbackChanges(assessment: Assessment): Change[] {
  return failingFindings(assessment).flatMap((f) => (f.fix ? [f.fix] : []));
}
