import { Box, Static, Text } from 'ink';
import { useMemo } from 'react';
import { FinishedRow } from './finished-row.js';
import { Header } from './header.js';
import { planLiveArea } from './layout.js';
import { formatInterruptedText } from './lines.js';
import { LiveArea } from './live-area.js';
import { chooseMatrixView, type MatrixModel } from './matrix.js';
import type { RunState, StaticItem } from './state.js';
import { StatusView } from './status-view.js';
import { ColorContext, Styled } from './styled.js';
import { SummaryLine } from './summary-line.js';
import { causeLines, VerifyMatrix } from './verify-matrix.js';

export interface TuiAppProps {
  readonly state: RunState;
  /** Epoch ms: the injected clock, so frames are reproducible in tests. */
  readonly now: number;
  /** Spinner frame, advanced by the one shared interval. */
  readonly frame: number;
  readonly rows: number;
  readonly columns: number;
  readonly color: boolean;
}

/**
 * The whole screen: frozen items (header, finished rows, final report) in <Static>, the live
 * area below them, the summary last. Renders only from props.
 */
export function TuiApp({ state, now, frame, rows, columns, color }: TuiAppProps) {
  const plan = useMemo(() => planLiveArea(state, { rows, columns }), [state, rows, columns]);
  return (
    <ColorContext.Provider value={color}>
      {/* Static is absolutely positioned: without a width its rows would size the box, not the terminal. */}
      <Static items={state.staticItems as StaticItem[]} style={{ width: columns }}>
        {(item) => <FrozenItem key={item.key} item={item} state={state} columns={columns} rows={rows} />}
      </Static>
      <Box flexDirection="column">
        <LiveArea state={state} plan={plan} now={now} frame={frame} columns={columns} />
        <SummaryLine state={state} now={now} frame={frame} />
      </Box>
    </ColorContext.Provider>
  );
}

interface FrozenItemProps {
  readonly item: StaticItem;
  readonly state: RunState;
  readonly columns: number;
  readonly rows: number;
}

function FrozenItem({ item, state, columns, rows }: FrozenItemProps) {
  switch (item.kind) {
    case 'header':
      return <Header header={item.header} />;
    case 'host':
      return <FinishedRow row={item.row} layout={state.layout} />;
    case 'groups':
      return <StatusView groups={item.groups} detailed={item.detailed} />;
    case 'plan':
      return (
        <Box flexDirection="column">
          {item.lines.map((line, i) => (
            <Text key={i}>{line}</Text>
          ))}
        </Box>
      );
    case 'matrix':
      // Frozen, the grid may be as tall as the screen (less the summary): then it can be read whole.
      return <FinalMatrix matrix={item.matrix} inventory={item.inventory} columns={columns} rows={rows} />;
    case 'notes':
      return (
        <Box flexDirection="column">
          {item.fabric.map((line, i) => (
            <Text key={`f${i}`} wrap="truncate-end">
              <Styled tone="muted">{line}</Styled>
            </Text>
          ))}
          {item.warnings.map((line, i) => (
            <Text key={`w${i}`} wrap="wrap">
              <Styled tone={line.startsWith('problem ') ? 'error' : 'warning'}>{line}</Styled>
            </Text>
          ))}
        </Box>
      );
    case 'interrupted':
      return (
        <Text>
          <Styled tone="error">✗</Styled> {formatInterruptedText(item.hosts)}
        </Text>
      );
  }
}

/**
 * The frozen matrix: the most detailed grid that fits the screen, and as many failing cells under
 * it (two lines each) as keep grid, failures and the summary on one screen — at least 3.
 */
function FinalMatrix({
  matrix,
  inventory,
  columns,
  rows,
}: {
  readonly matrix: MatrixModel;
  readonly inventory: string | undefined;
  readonly columns: number;
  readonly rows: number;
}) {
  const view = chooseMatrixView(matrix, columns, Math.max(1, rows - 2));
  // The cause lines wrap (their deploy command ends with the hosts): count the rows they take.
  const causeRows = causeLines(matrix, inventory).reduce((n, line) => n + Math.ceil((line.length + 2) / columns), 0);
  const room = rows - view.height - 3 - causeRows; // the summary, the "… and N more" line, one to spare, the causes
  return (
    <VerifyMatrix
      matrix={matrix}
      view={view}
      final
      inventory={inventory}
      maxFailures={Math.max(3, Math.floor(room / 2))}
    />
  );
}
