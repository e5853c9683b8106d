import { Box, Text } from 'ink';
import { Fragment } from 'react';
import type { CellMethod } from '../../vocabulary.js';
import { endLabel } from '../text/format.js';
import { sanitizeLine } from '../text/sanitize.js';
import type { Tone } from './format.js';
import { formatHostLegendText, formatLegendText, formatMatrixCountsText, formatRailLegendText } from './lines.js';
import {
  centreIn,
  HOST_GRID_CORNER,
  hostCellGlyph,
  hostGrid,
  hostGridGeometry,
  MARK_GLYPH,
  MATRIX_CORNER,
  matrixGeometry,
  RAIL_GRID_CORNER,
  railGrid,
  railGridGeometry,
  type CellMark,
  type HostGridGeometry,
  type HostPairCounts,
  type MatrixGeometry,
  type MatrixModel,
  type MatrixView,
} from './matrix.js';
import { causeGroups, formatCauseGroupText, formatMatrixStartText } from '../text/matrix-summary.js';
import { Styled } from './styled.js';

const MARK_TONE: Readonly<Record<CellMark, Tone>> = {
  passed: 'success',
  failed: 'error',
  pending: 'muted',
  skipped: 'warning',
  'not-run': 'muted',
};

export interface VerifyMatrixProps {
  readonly matrix: MatrixModel;
  /** Which view fits the terminal (chooseMatrixView). */
  readonly view: MatrixView;
  /** The finished matrix also lists every failing cell with the command that reproduces it. */
  readonly final: boolean;
  /**
   * Failing cells listed at most (each takes two lines): as many as leave the grid on the screen
   * with them, at least 3; the run log and --json have every one.
   */
  readonly maxFailures?: number;
  /** The run's inventory, for the deploy command a cause line gives (`ibfleet deploy -i I --hosts …`). */
  readonly inventory?: string;
}

/**
 * NIC×NIC reachability: rows are source host/NIC, columns destination host/NIC, ✓ ✗ · –. A fleet
 * too big for that grid gets the host×host grid (each cell the NIC pairs of two hosts), and one
 * too big for that a line of counts; the failing cells are listed under any of them.
 */
export function VerifyMatrix({ matrix, view, final, maxFailures = MAX_LISTED_FAILURES, inventory }: VerifyMatrixProps) {
  const head = view.kind === 'counts' ? undefined : formatMatrixStartText(matrix.start);
  return (
    <Box flexDirection="column">
      {head ? (
        <Text wrap="truncate-end">
          <Styled tone="muted">{head}</Styled>
        </Text>
      ) : null}
      {view.kind === 'nic' ? (
        <>
          {matrix.methods.map((method) => (
            <MatrixGrid key={method} matrix={matrix} method={method} geometry={matrixGeometry(matrix)} />
          ))}
          <Text wrap="truncate-end">
            <Styled tone="muted">{formatLegendText(matrix)}</Styled>
          </Text>
        </>
      ) : view.kind === 'hosts' ? (
        <>
          <HostMatrixGrid matrix={matrix} legend={view.legend} />
          {view.rails ? <RailMatrixGrid matrix={matrix} /> : null}
        </>
      ) : view.kind === 'rails' ? (
        <>
          <RailMatrixGrid matrix={matrix} />
          <Text wrap="truncate-end">{formatMatrixCountsText(matrix)}</Text>
        </>
      ) : (
        <Text wrap="truncate-end">{formatMatrixCountsText(matrix)}</Text>
      )}
      {final ? <CellProblems matrix={matrix} max={maxFailures} inventory={inventory} /> : null}
    </Box>
  );
}

function HostMatrixGrid({ matrix, legend }: { readonly matrix: MatrixModel; readonly legend: boolean }) {
  const grid = hostGrid(matrix);
  return (
    <CountsGrid
      corner={HOST_GRID_CORNER}
      labels={grid.hosts}
      cells={grid.cells}
      geometry={hostGridGeometry(matrix)}
      legend={legend ? formatHostLegendText(matrix, grid.perPair) : undefined}
    />
  );
}

/** NIC n of one host to NIC m of another, over every host pair: the rails on the diagonal. */
function RailMatrixGrid({ matrix }: { readonly matrix: MatrixModel }) {
  const grid = railGrid(matrix);
  return (
    <CountsGrid
      corner={RAIL_GRID_CORNER}
      labels={grid.nics}
      cells={grid.cells}
      geometry={railGridGeometry(matrix)}
      legend={formatRailLegendText(matrix, grid.perPair)}
    />
  );
}

interface CountsGridProps {
  readonly corner: string;
  readonly labels: readonly number[];
  readonly cells: readonly (readonly (HostPairCounts | undefined)[])[];
  readonly geometry: HostGridGeometry;
  readonly legend: string | undefined;
}

/** A grid whose cells are counts of cells (hostCellGlyph): the host×host and the NIC×NIC views. */
function CountsGrid({ corner, labels, cells, geometry, legend }: CountsGridProps) {
  const pad = (text: string, width: number) => ' '.repeat(Math.max(0, width - text.length)) + text;
  return (
    <Box flexDirection="column">
      <Text wrap="truncate-end">
        {corner.padEnd(geometry.labelWidth)}
        {labels.map((h) => ` ${pad(String(h), geometry.columnWidth)}`).join('')}
      </Text>
      {cells.map((row, i) => (
        <Text key={labels[i]} wrap="truncate-end">
          {pad(String(labels[i]), geometry.labelWidth)}
          {row.map((counts, j) => {
            const glyph = hostCellGlyph(counts);
            return (
              <Fragment key={j}>
                {' '.repeat(1 + geometry.columnWidth - glyph.text.length)}
                {glyph.mark === undefined ? glyph.text : <Styled tone={MARK_TONE[glyph.mark]}>{glyph.text}</Styled>}
              </Fragment>
            );
          })}
        </Text>
      ))}
      {legend !== undefined ? (
        <Text wrap="truncate-end">
          <Styled tone="muted">{legend}</Styled>
        </Text>
      ) : null}
    </Box>
  );
}

interface MatrixGridProps {
  readonly matrix: MatrixModel;
  readonly method: CellMethod;
  readonly geometry: MatrixGeometry;
}

function MatrixGrid({ matrix, method, geometry }: MatrixGridProps) {
  const grid = matrix.grids.get(method) ?? [];
  const corner = matrix.methods.length > 1 ? method : MATRIX_CORNER;
  const pad = (text: string) => text + ' '.repeat(Math.max(0, geometry.labelWidth - text.length));
  return (
    <Box flexDirection="column">
      <Text wrap="truncate-end">
        {pad(corner)}
        {geometry.labels.map((label) => `  ${label}`).join('')}
      </Text>
      {grid.map((row, i) => (
        <Text key={i} wrap="truncate-end">
          {pad(geometry.labels[i]!)}
          {row.map((mark, j) => {
            const width = geometry.columnWidths[j]!;
            const cell = centreIn(mark === undefined ? ' ' : MARK_GLYPH[mark], width);
            const left = cell.length - cell.trimStart().length;
            return (
              <Fragment key={j}>
                {'  ' + ' '.repeat(left)}
                {mark === undefined ? ' ' : <Styled tone={MARK_TONE[mark]}>{MARK_GLYPH[mark]}</Styled>}
                {' '.repeat(Math.max(0, width - left - 1))}
              </Fragment>
            );
          })}
        </Text>
      ))}
    </Box>
  );
}

/**
 * Failing cells with their reproduce command (the first 20: one dead NIC in a big fleet fails
 * hundreds of cells, and the first ones already show which); skipped cells folded by reason.
 */
export const MAX_LISTED_FAILURES = 20;

/** Cause lines shown at most: the kinds that explain most cells (the run log and --json have every cell's causes). */
export const MAX_CAUSE_LINES = 6;

/** The failing cells folded by likely cause, shown when there are several failures (one is listed whole anyway). */
export function causeLines(matrix: MatrixModel, inventory?: string): string[] {
  if (matrix.failures.length < 2) return [];
  return causeGroups(matrix.failures)
    .slice(0, MAX_CAUSE_LINES)
    .map((g) => formatCauseGroupText(g, inventory));
}

function CellProblems({
  matrix,
  max,
  inventory,
}: {
  readonly matrix: MatrixModel;
  readonly max: number;
  readonly inventory: string | undefined;
}) {
  const skipped = new Map<string, number>();
  for (const cell of matrix.skips) {
    const key = `${cell.method}: ${sanitizeLine(cell.detail)}`;
    skipped.set(key, (skipped.get(key) ?? 0) + 1);
  }
  const listed = matrix.failures.slice(0, Math.min(max, MAX_LISTED_FAILURES));
  const unlisted = matrix.failures.length - listed.length;
  return (
    <Box flexDirection="column">
      {causeLines(matrix, inventory).map((line) => (
        <Text key={line} wrap="wrap">
          <Styled tone="error">✗</Styled> {line}
        </Text>
      ))}
      {listed.map((cell) => (
        <Box
          key={`${cell.method} ${cell.from.host}/${cell.from.nic} ${cell.to.host}/${cell.to.nic}`}
          flexDirection="column"
        >
          <Text>
            <Styled tone="error">✗</Styled> {endLabel(cell.from)} → {endLabel(cell.to)} ({cell.method} {cell.from.ip} →{' '}
            {cell.to.ip}): {sanitizeLine(cell.detail)}
          </Text>
          {cell.reproduce
            .trimEnd()
            .split('\n')
            .map((line, i) => (
              <Text key={i}>
                <Styled tone="muted">{`    ${line}`}</Styled>
              </Text>
            ))}
        </Box>
      ))}
      {unlisted > 0 ? (
        <Text>
          <Styled tone="error">✗</Styled> … and {unlisted} more failing cell{unlisted === 1 ? '' : 's'} (the run log and
          --json list every cell)
        </Text>
      ) : null}
      {[...skipped].map(([reason, count]) => (
        <Text key={reason}>
          <Styled tone="warning">–</Styled> {count} skipped ({reason})
        </Text>
      ))}
    </Box>
  );
}
