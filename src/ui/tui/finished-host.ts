/**
 * A finished host as the TUI shows it, from its HostResult: one reason beside the row (what
 * changed by kind, or why it failed), every reason for status's folding, the tail of a failed
 * host's error output, and --dry-run's plan lines. Pure; host text is clipped and sanitised here.
 */
import { clipHostLines } from '../../host-text.js';
import type { Manager } from '../../inventory/model.js';
import type { HostRef, HostResult, HostStatus } from '../../vocabulary.js';
import { summarizeChanges } from '../text/changes.js';
import type { HostGroup } from '../text/fold.js';
import { oneLine, sanitizeLines, tailLines } from '../text/sanitize.js';
import { statusGroups as foldStatus } from '../text/status-fold.js';
import { outcomeReason } from './format.js';

const ERROR_TAIL_LINES = 6;

export interface FinishedHost {
  readonly host: HostRef;
  readonly status: HostStatus;
  readonly manager: Manager | undefined;
  readonly durationMs: number;
  /** One line, shown next to the row. */
  readonly reason: string;
  /** Every reason, one line each (status folding compares these). */
  readonly reasons: readonly string[];
  /** The last lines of the host's error output, shown under a failed row. */
  readonly errorTail: readonly string[];
  /** --dry-run: what would run, line by line, sanitised. */
  readonly planLines: readonly string[];
}

export function toFinishedHost(result: HostResult, options: { readonly showScripts?: boolean } = {}): FinishedHost {
  const failing = result.status === 'failed' || result.status === 'unreachable';
  const told = new Set((result.changes ?? []).map((c) => c.text));
  const notes = result.reasons.filter((r) => !told.has(r)).map(oneLine);
  // What changed by kind, after what the kinds do not say (a connection lost and looked at again).
  const summary =
    result.changes && result.changes.length > 0 ? [...notes, summarizeChanges(result.changes)].join('; ') : undefined;
  // A plan or change is told by kind, so that hosts alike but for their addresses fold together.
  const reasons =
    failing && result.error
      ? [outcomeReason(result)]
      : summary
        ? [summary]
        : result.reasons.map(oneLine).filter((r) => r !== '');
  return {
    host: result.host,
    status: result.status,
    manager: result.manager,
    durationMs: result.durationMs,
    reason: summary ?? outcomeReason(result),
    reasons,
    errorTail: failing && result.error ? tailLines(clipHostLines(result.error.stderrTail), ERROR_TAIL_LINES) : [],
    planLines:
      options.showScripts && result.status === 'planned' && result.planText ? sanitizeLines(result.planText) : [],
  };
}

/** Status rows: one per group of hosts with the same status and the same reasons; hosts never deployed one per manager. */
export function statusGroups(results: readonly HostResult[], inventory: string | undefined): HostGroup[] {
  return foldStatus(results, inventory, (r) => toFinishedHost(r).reasons);
}
