import { formatSummary } from './lines.js';
import { LiveLine } from './live-line.js';
import { spinnerGlyph } from './spinner.js';
import type { RunState } from './state.js';

export interface SummaryLineProps {
  readonly state: RunState;
  readonly now: number;
  readonly frame: number;
}

/** Counts and total time; always the last line. */
export function SummaryLine({ state, now, frame }: SummaryLineProps) {
  const summary = formatSummary(state, now);
  const tone = summary.ok === undefined ? 'info' : summary.ok ? 'success' : 'error';
  return (
    <LiveLine glyph={summary.ok === undefined ? spinnerGlyph(frame) : summary.symbol} tone={tone} bold>
      {summary.text}
    </LiveLine>
  );
}
