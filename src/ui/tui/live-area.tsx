import { Box } from 'ink';
import type { LivePlan } from './layout.js';
import { formatFailingText, formatMatrixCountsText, formatMoreRunningText, formatProgressText } from './lines.js';
import { LiveFinishedRow, RunningRow } from './running-row.js';
import type { RunState } from './state.js';
import { failingHostSets } from './state.js';
import { StatusView } from './status-view.js';
import { LiveLine } from './live-line.js';
import { VerifyMatrix } from './verify-matrix.js';

export interface LiveAreaProps {
  readonly state: RunState;
  readonly plan: LivePlan;
  readonly now: number;
  readonly frame: number;
  readonly columns: number;
}

/** Everything that still changes, sized by planLiveArea() to fit the terminal; one line per entry. */
export function LiveArea({ state, plan, now, frame }: LiveAreaProps) {
  const progress = plan.progress ? formatProgressText(state) : undefined;
  return (
    <Box flexDirection="column">
      {plan.groups.length > 0 || plan.moreGroups ? (
        <StatusView groups={plan.groups} detailed hidden={plan.moreGroups ? plan.hiddenGroups : []} truncate />
      ) : null}
      {plan.rows.map((entry) =>
        'running' in entry ? (
          <RunningRow key={entry.running.host.id} host={entry.running} layout={state.layout} now={now} frame={frame} />
        ) : (
          <LiveFinishedRow key={entry.finished.host.id} row={entry.finished} layout={state.layout} />
        ),
      )}
      {plan.running.map((host) => (
        <RunningRow key={host.host.id} host={host} layout={state.layout} now={now} frame={frame} />
      ))}
      {plan.moreRunning ? (
        <LiveLine glyph="…" tone="muted">
          {formatMoreRunningText(plan.hiddenRunning)}
        </LiveLine>
      ) : null}
      {plan.matrix && plan.matrix.kind !== 'counts' && state.matrix ? (
        <VerifyMatrix matrix={state.matrix} view={plan.matrix} final={false} />
      ) : null}
      {plan.matrix?.kind === 'counts' && state.matrix ? (
        <LiveLine glyph="·" tone="muted">
          {formatMatrixCountsText(state.matrix)}
        </LiveLine>
      ) : null}
      {progress ? (
        <LiveLine glyph="✓" tone="success">
          {progress}
        </LiveLine>
      ) : null}
      {plan.failing ? (
        <LiveLine glyph="✗" tone="error">
          {`${formatFailingText(failingHostSets(state))} (details above)`}
        </LiveLine>
      ) : null}
    </Box>
  );
}
