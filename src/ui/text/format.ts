/** Small pure formatters shared by every display. */
import type { HostResult, HostStatus } from '../../vocabulary.js';

export function formatDuration(ms: number): string {
  return ms < 10_000 ? `${(ms / 1000).toFixed(1)}s` : ms < 600_000 ? `${Math.round(ms / 1000)}s` : `${Math.floor(ms / 60_000)}m${String(Math.round((ms % 60_000) / 1000)).padStart(2, '0')}s`;
}

export const STATUS_ORDER: readonly HostStatus[] = ['failed', 'unreachable', 'drift', 'planned', 'changed', 'unchanged', 'ok'];

export function countStatuses(results: readonly HostResult[]): Map<HostStatus, number> {
  const counts = new Map<HostStatus, number>();
  for (const r of results) counts.set(r.status, (counts.get(r.status) ?? 0) + 1);
  return counts;
}

export function formatCounts(results: readonly HostResult[]): string {
  const counts = countStatuses(results);
  return STATUS_ORDER.filter((s) => counts.has(s)).map((s) => `${counts.get(s)} ${s}`).join(', ') || 'no hosts';
}

/** One line saying how a host ended. */
export function outcomeLine(r: HostResult): string {
  const meta = [r.manager, formatDuration(r.durationMs)].filter(Boolean).join(', ');
  switch (r.status) {
    case 'failed':
    case 'unreachable':
      return `${r.status} at ${r.error?.stage ?? 'connect'} (${meta}): ${r.error?.message ?? r.reasons[0] ?? ''}`;
    case 'drift':
      return `drift (${meta}): ${r.reasons.join('; ')}`;
    case 'changed':
    case 'planned':
      return `${r.status} (${meta}): ${r.reasons.length} change${r.reasons.length === 1 ? '' : 's'}`;
    default:
      return `${r.status} (${meta})`;
  }
}
