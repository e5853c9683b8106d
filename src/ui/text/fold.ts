/**
 * `clush -b` for results: hosts that answered the same are shown as one row (plain status lines,
 * the TUI's status view and folded outcomes) with a ClusterShell-style host set (`16-20,34`). Pure.
 */
import { foldHosts } from '../../inventory/select.js';
import type { HostStatus } from '../../vocabulary.js';
import { STATUS_ORDER } from './format.js';

export interface FoldInput {
  readonly id: number;
  readonly status: HostStatus;
  /** What must be identical, besides the status, for two hosts to share a row. */
  readonly reasons: readonly string[];
}

export interface HostGroup {
  readonly status: HostStatus;
  readonly ids: readonly number[];
  /** `16-20,34`. */
  readonly hostSet: string;
  readonly reasons: readonly string[];
  /** One line that says it all, shown in place of the status and reasons (status-fold.ts: hosts never deployed). */
  readonly summary?: string;
}

/**
 * Groups by status and identical reasons. Groups come out in STATUS_ORDER (what needs attention
 * first), then by their lowest host number, so the order does not depend on arrival order.
 */
export function foldResults(
  results: readonly FoldInput[],
  options: { readonly ignoreReasons?: boolean } = {},
): HostGroup[] {
  const groups = new Map<string, { status: HostStatus; ids: number[]; reasons: readonly string[] }>();
  for (const r of results) {
    const reasons = options.ignoreReasons ? [] : r.reasons;
    const key = `${r.status}\u0000${reasons.join('\u0000')}`;
    const group = groups.get(key);
    if (group) group.ids.push(r.id);
    else groups.set(key, { status: r.status, ids: [r.id], reasons });
  }
  const rank = (s: HostStatus) => STATUS_ORDER.indexOf(s);
  return [...groups.values()]
    .map((g) => {
      const ids = [...new Set(g.ids)].sort((a, b) => a - b);
      return { status: g.status, ids, hostSet: foldHosts(ids), reasons: g.reasons };
    })
    .sort((a, b) => rank(a.status) - rank(b.status) || a.ids[0]! - b.ids[0]!);
}
