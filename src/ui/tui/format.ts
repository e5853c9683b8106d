/**
 * Pure text helpers for the TUI: durations, outcome words and symbols, one-line reasons, and
 * sanitising what remote hosts print. No React, no IO — the plain-line logger may reuse them.
 */
import type { CellEnd, HostResult, HostStatus, Stage } from '../../vocabulary.js';

/** `0.4s`, `12.3s`, `1m05s`, `1h02m` — one decimal under a minute, where it matters most. */
export function formatDuration(ms: number): string {
  const safe = Number.isFinite(ms) && ms > 0 ? ms : 0;
  const tenths = Math.floor(safe / 100);
  if (tenths < 600) return `${(tenths / 10).toFixed(1)}s`;
  const seconds = Math.floor(safe / 1000);
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m${String(seconds % 60).padStart(2, '0')}s`;
  return `${Math.floor(seconds / 3600)}h${String(Math.floor(seconds / 60) % 60).padStart(2, '0')}m`;
}

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
};

/** The order outcomes are counted and listed in: what needs attention first. */
export const STATUS_ORDER: readonly HostStatus[] = ['failed', 'unreachable', 'drift', 'planned', 'changed', 'unchanged', 'ok'];

/** Width of the widest status word (`unreachable`), so columns line up across frozen rows. */
export const STATUS_WIDTH = Math.max(...STATUS_ORDER.map((s) => s.length));
export const MANAGER_WIDTH = 'networkmanager'.length;
export const STAGE_WIDTH = Math.max('starting'.length, 'connect'.length, 'verify'.length, 'apply'.length);

// eslint-disable-next-line no-control-regex
const ANSI_SEQUENCE = /\u001b\[[0-9;?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)|\u001b[@-Z\\-_]/g;
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

/**
 * Remote output is untrusted: escape sequences in it could move the cursor or recolour the
 * terminal under Ink's feet. Strip them, show other control characters as `?`, expand tabs.
 */
export function sanitizeLine(text: string): string {
  return text.replace(ANSI_SEQUENCE, '').replace(/\t/g, '  ').replace(/\r$/, '').replace(CONTROL, '?');
}

/** Collapses any text to one line for a row: first non-empty line, whitespace squeezed. */
export function oneLine(text: string): string {
  const line = text.split('\n').map((l) => sanitizeLine(l).trim()).find((l) => l !== '') ?? '';
  return line.replace(/\s+/g, ' ');
}

/** The last `max` non-blank lines of a host's error output, sanitised. */
export function tailLines(text: string, max: number): string[] {
  const lines = text.split('\n').map((l) => sanitizeLine(l).trimEnd()).filter((l) => l.trim() !== '');
  return lines.slice(-max);
}

/** The one-line reason shown next to a finished host. */
export function outcomeReason(result: HostResult): string {
  const { status, error, reasons } = result;
  if (error && (status === 'failed' || status === 'unreachable')) {
    const exit = error.exitCode !== undefined && !/\bexit(ed)?\b/i.test(error.message) ? ` (exit ${error.exitCode})` : '';
    return `${error.stage}: ${oneLine(error.message)}${exit}`;
  }
  const said = reasons.map(oneLine).filter((r) => r !== '');
  if (said.length > 0) return said.join('; ');
  const checks = result.checks ?? [];
  if (checks.length > 0) return `${checks.filter((c) => c.ok).length}/${checks.length} checks passed`;
  return '';
}

export function pluralize(count: number, one: string, many = `${one}s`): string {
  return `${count} ${count === 1 ? one : many}`;
}

export function stageLabel(stage: Stage | undefined): string {
  return stage ?? 'starting';
}

/** `16/ibs5f0`: host number and interface, how a NIC is named in the matrix. */
export function endLabel(end: Pick<CellEnd, 'host' | 'iface'>): string {
  return `${end.host}/${end.iface}`;
}

export function padEnd(text: string, width: number): string {
  return text.length >= width ? text : text + ' '.repeat(width - text.length);
}

export function padStart(text: string, width: number): string {
  return text.length >= width ? text : ' '.repeat(width - text.length) + text;
}
