import { finishedRowParts, joinRowParts, runningRowParts } from './lines.js';
import { LiveLine } from './live-line.js';
import type { FinishedHost } from './finished-host.js';
import type { RowLayout, RunningHost } from './state.js';

export interface RunningRowProps {
  readonly host: RunningHost;
  readonly layout: RowLayout;
  /** The clock and the spinner frame come from the root, one interval for all rows. */
  readonly now: number;
  readonly frame: number;
}

/** A host still working: spinner, current stage, elapsed. Always exactly one line. */
export function RunningRow({ host, layout, now, frame }: RunningRowProps) {
  const parts = runningRowParts(host, now, frame, layout);
  return (
    <LiveLine glyph={parts.symbol} tone="info">
      {`${parts.host}  ${parts.status}  ${parts.meta}`}
    </LiveLine>
  );
}

export interface LiveFinishedRowProps {
  readonly row: FinishedHost;
  readonly layout: RowLayout;
}

/** A finished host waiting in the live area for the run's end (rows come out in host order): one line. */
export function LiveFinishedRow({ row, layout }: LiveFinishedRowProps) {
  const parts = finishedRowParts(row, layout);
  return (
    <LiveLine glyph={parts.symbol} tone={parts.tone}>
      {joinRowParts({ ...parts, symbol: '' }).slice(1)}
    </LiveLine>
  );
}
