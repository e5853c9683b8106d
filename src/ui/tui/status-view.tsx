import { Box, Text } from 'ink';
import type { HostGroup } from '../text/fold.js';
import { STATUS_LOOK } from './format.js';
import { formatCountedGroupText, formatGroupText } from './lines.js';
import { Styled } from './styled.js';

export interface StatusViewProps {
  readonly groups: readonly HostGroup[];
  /**
   * Status view: full host sets and reasons (drift under the row, failures beside it).
   * Off for the folded successes of a large run: one line per outcome, count first.
   */
  readonly detailed: boolean;
  /** Groups left out for lack of room, counted on one line. */
  readonly hidden?: readonly HostGroup[];
  /** Live rows must stay one line each; frozen ones may wrap. */
  readonly truncate?: boolean;
}

/** One row per group of hosts that answered the same: `✓ ok  16-20,34 (6 hosts)`, drift with its reasons. */
export function StatusView({ groups, detailed, hidden = [], truncate = false }: StatusViewProps) {
  const wrap = truncate || !detailed ? 'truncate-end' : 'wrap';
  const hiddenHosts = hidden.reduce((sum, g) => sum + g.ids.length, 0);
  return (
    <Box flexDirection="column">
      {groups.map((group) => {
        const look = STATUS_LOOK[group.status];
        // Folded successes keep what they changed (`+2 rules …`): hosts fold only when that is the same.
        // A group summed up in one line (hosts never deployed: the deploy command) keeps it beside the row.
        const inline =
          group.summary ??
          (group.status !== 'drift' && group.reasons.length > 0 && (detailed || group.reasons.length === 1)
            ? group.reasons.join('; ')
            : '');
        const below = detailed && group.status === 'drift' ? group.reasons : [];
        const text = `${look.symbol} ${detailed ? formatGroupText(group) : formatCountedGroupText(group)}`;
        return (
          <Box key={`${group.status}-${group.hostSet}`} flexDirection="column">
            {inline ? (
              // A failure's reason wraps under itself, not under the host set.
              <Box>
                <Box flexShrink={0}>
                  <Styled tone={look.tone}>{text}</Styled>
                </Box>
                <Box marginLeft={2} flexShrink={1}>
                  <Text wrap={truncate ? 'truncate-end' : 'wrap'}>{inline}</Text>
                </Box>
              </Box>
            ) : (
              <Text wrap={wrap}>
                <Styled tone={look.tone}>{text}</Styled>
              </Text>
            )}
            {below.map((reason, i) => (
              <Text key={i} wrap={wrap}>
                {'    - '}
                {reason}
              </Text>
            ))}
          </Box>
        );
      })}
      {hidden.length > 0 ? (
        <Text wrap="truncate-end">
          {`… ${hidden.length} more group${hidden.length === 1 ? '' : 's'} (${hiddenHosts} host${hiddenHosts === 1 ? '' : 's'})`}
        </Text>
      ) : null}
    </Box>
  );
}
