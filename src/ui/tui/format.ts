/**
 * How the TUI shows an outcome: its symbol and tone, the column widths that keep frozen rows
 * aligned, and a finished host's one-line reason. The words themselves come from ../text/.
 */
import { clipHostText } from '../../host-text.js';
import type { HostResult, HostStatus } from '../../vocabulary.js';
import { STATUS_ORDER } from '../text/format.js';
import { oneLine } from '../text/sanitize.js';

export type Tone = 'success' | 'error' | 'warning' | 'info' | 'muted' | 'plain';

/** The symbol, word and tone each outcome is shown with, everywhere in the TUI. */
export const STATUS_LOOK: Readonly<Record<HostStatus, { readonly symbol: string; readonly tone: Tone }>> = {
  changed: { symbol: '✓', tone: 'success' },
  unchanged: { symbol: '✓', tone: 'success' },
  ok: { symbol: '✓', tone: 'success' },
  planned: { symbol: '~', tone: 'info' },
  drift: { symbol: '!', tone: 'warning' },
  failed: { symbol: '✗', tone: 'error' },
  unreachable: { symbol: '✗', tone: 'error' },
  'not-run': { symbol: '○', tone: 'muted' },
};

/** Width of the widest status word (`unreachable`), so columns line up across frozen rows. */
export const STATUS_WIDTH = Math.max(...STATUS_ORDER.map((s) => s.length));
export const MANAGER_WIDTH = 'networkmanager'.length;

/** The one-line reason shown next to a finished host. */
export function outcomeReason(result: HostResult): string {
  const { status, error, reasons } = result;
  if (error && (status === 'failed' || status === 'unreachable')) {
    const exit =
      error.exitCode !== undefined && !/\bexit(ed)?\b/i.test(error.message) ? ` (exit ${error.exitCode})` : '';
    return `${error.stage}: ${oneLine(clipHostText(error.message))}${exit}`;
  }
  const said = reasons.map((r) => oneLine(clipHostText(r))).filter((r) => r !== '');
  if (said.length > 0) return said.join('; ');
  const checks = result.checks ?? [];
  if (checks.length > 0) return `${checks.filter((c) => c.ok).length}/${checks.length} checks passed`;
  return '';
}
