import { Box, Text } from 'ink';
import { FAILING_STATUSES } from '../../vocabulary.js';
import { detailIndent, finishedRowParts } from './lines.js';
import type { FinishedHost } from './finished-host.js';
import type { RowLayout } from './state.js';
import { Styled } from './styled.js';

export interface FinishedRowProps {
  readonly row: FinishedHost;
  readonly layout: RowLayout;
}

/**
 * A host that has finished: outcome, manager, duration and a one-line reason; under a failure
 * the tail of its error output, under a dry-run plan what would run. Frozen in <Static> (never
 * redrawn). A success or a plan stays one line (its summary cut at the edge: the dry-run plan
 * that follows, the run log and --json have everything); the reason of a host that needs
 * attention wraps: that is what gets read.
 */
export function FinishedRow({ row, layout }: FinishedRowProps) {
  const parts = finishedRowParts(row, layout);
  const indent = detailIndent(layout);
  const plan = row.planLines;
  return (
    <Box flexDirection="column">
      <Box>
        <Box flexShrink={0}>
          <Text>
            <Styled tone={parts.tone}>{parts.symbol}</Styled>
            {` ${parts.host}  `}
            <Styled tone={parts.tone}>{parts.status}</Styled>
            {`  ${parts.meta}`}
          </Text>
        </Box>
        {parts.reason ? (
          <Box marginLeft={2} flexShrink={1}>
            <Text wrap={FAILING_STATUSES.has(row.status) ? 'wrap' : 'truncate-end'}>{parts.reason}</Text>
          </Box>
        ) : null}
      </Box>
      {row.errorTail.map((line, i) => (
        <Text key={`tail-${i}`}>
          <Styled tone="muted">{`${indent}│ ${line}`}</Styled>
        </Text>
      ))}
      {plan.length > 0 ? (
        <Text>
          <Styled tone="muted">{`${indent}would run:`}</Styled>
        </Text>
      ) : null}
      {plan.map((line, i) => (
        <Text key={`plan-${i}`}>
          <Styled tone="muted">{`${indent}  ${line}`}</Styled>
        </Text>
      ))}
    </Box>
  );
}
