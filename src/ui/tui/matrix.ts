/**
 * The verify matrix as data: NIC ends (rows = from, columns = to), one grid per method, filled in
 * as cells arrive. Pure. Updates copy only the rows they touch, so a 508×508 matrix (254 hosts ×
 * 2 NICs) stays cheap to fill cell by cell.
 */
import type { CellEnd, CellMethod, MatrixCell, MatrixStart } from '../../vocabulary.js';
import { endLabel } from '../text/format.js';
import { formatMatrixStartText } from '../text/matrix-summary.js';

export type CellMark = 'pending' | 'passed' | 'failed' | 'skipped' | 'not-run';
type Grid = readonly (readonly (CellMark | undefined)[])[];

export interface MatrixModel {
  readonly methods: readonly CellMethod[];
  /** Sorted by host, then NIC. */
  readonly ends: readonly CellEnd[];
  readonly index: ReadonlyMap<string, number>;
  /** Per method, grid[from][to]; undefined where the matrix has no cell (e.g. a NIC and itself). */
  readonly grids: ReadonlyMap<CellMethod, Grid>;
  readonly counts: Readonly<Record<CellMark, number>>;
  /** Failed and skipped cells in arrival order, with their detail and reproduce command. */
  readonly failures: readonly MatrixCell[];
  readonly skips: readonly MatrixCell[];
  /**
   * Per NIC pair (`1>2`: NIC 1 of one host to NIC 2 of another) over every host pair and method:
   * the rail view, kept as cells arrive (a 100-host, 8-NIC matrix has 640 000 positions to sum).
   */
  readonly rails: ReadonlyMap<string, HostPairCounts>;
  /** Which matrix verify announced, and why when it chose it. */
  readonly start?: MatrixStart;
}

type MutableCounts = { -readonly [K in keyof HostPairCounts]: HostPairCounts[K] };
const railKey = (c: Position): string => `${c.from.nic}>${c.to.nic}`;
const COUNT_FIELD: Readonly<Record<CellMark, Exclude<keyof HostPairCounts, 'total'>>> = {
  pending: 'pending',
  passed: 'passed',
  failed: 'failed',
  skipped: 'skipped',
  'not-run': 'notRun',
};

/** Moves one cell of a NIC pair from one mark to another (undefined: the cell is new). */
function bumpRail(
  rails: Map<string, HostPairCounts>,
  position: Position,
  previous: CellMark | undefined,
  next: CellMark,
): void {
  const key = railKey(position);
  const count: MutableCounts = {
    ...(rails.get(key) ?? { total: 0, passed: 0, failed: 0, skipped: 0, pending: 0, notRun: 0 }),
  };
  if (previous === undefined) count.total++;
  else count[COUNT_FIELD[previous]]--;
  count[COUNT_FIELD[next]]++;
  rails.set(key, count);
}

type Position = Pick<MatrixCell, 'from' | 'to' | 'method'>;

export const endKey = (end: Pick<CellEnd, 'host' | 'nic'>): string => `${end.host}/${end.nic}`;
const cellKey = (c: Position): string => `${c.method} ${endKey(c.from)} ${endKey(c.to)}`;

const METHOD_ORDER: readonly CellMethod[] = ['ping', 'rping'];

export function createMatrix(cells: readonly Position[], start?: MatrixStart): MatrixModel {
  const byKey = new Map<string, CellEnd>();
  for (const c of cells) {
    if (!byKey.has(endKey(c.from))) byKey.set(endKey(c.from), c.from);
    if (!byKey.has(endKey(c.to))) byKey.set(endKey(c.to), c.to);
  }
  const ends = [...byKey.values()].sort((a, b) => a.host - b.host || a.nic - b.nic);
  const index = new Map(ends.map((e, i) => [endKey(e), i] as const));
  const methods = [...new Set(cells.map((c) => c.method))].sort(
    (a, b) => METHOD_ORDER.indexOf(a) - METHOD_ORDER.indexOf(b),
  );
  const grids = new Map<CellMethod, (CellMark | undefined)[][]>(
    methods.map((m) => [m, ends.map(() => ends.map(() => undefined))]),
  );
  let pending = 0;
  const rails = new Map<string, HostPairCounts>();
  for (const c of cells) {
    const row = grids.get(c.method)![index.get(endKey(c.from))!]!;
    const column = index.get(endKey(c.to))!;
    if (row[column] === undefined) {
      pending++;
      bumpRail(rails, c, undefined, 'pending');
    }
    row[column] = 'pending';
  }
  return {
    methods,
    ends,
    index,
    grids,
    counts: { pending, passed: 0, failed: 0, skipped: 0, 'not-run': 0 },
    failures: [],
    skips: [],
    rails,
    ...(start ? { start } : {}),
  };
}

const markOf = (cell: MatrixCell): CellMark => cell.state;

/** Records results; cells outside the announced matrix widen it rather than being dropped. */
export function applyCells(model: MatrixModel | undefined, cells: readonly MatrixCell[]): MatrixModel {
  if (cells.length === 0 && model) return model;
  let base = model ?? createMatrix([]);
  const unknown = cells.filter(
    (c) => !base.grids.has(c.method) || !base.index.has(endKey(c.from)) || !base.index.has(endKey(c.to)),
  );
  if (unknown.length > 0) base = widenMatrix(base, unknown);
  const grids = new Map(base.grids);
  const copied = new Set<string>();
  const counts = { ...base.counts };
  let failures = [...base.failures];
  let skips = [...base.skips];
  const rails = new Map(base.rails);
  for (const cell of cells) {
    const key = cellKey(cell);
    const rowIndex = base.index.get(endKey(cell.from))!;
    const column = base.index.get(endKey(cell.to))!;
    const rowKey = `${cell.method} ${rowIndex}`;
    let grid = grids.get(cell.method)!;
    if (!copied.has(cell.method)) {
      grid = [...grid];
      grids.set(cell.method, grid);
      copied.add(cell.method);
    }
    if (!copied.has(rowKey)) {
      (grid as (readonly (CellMark | undefined)[])[])[rowIndex] = [...grid[rowIndex]!];
      copied.add(rowKey);
    }
    const row = grid[rowIndex] as (CellMark | undefined)[];
    const previous = row[column];
    if (previous !== undefined) counts[previous]--;
    if (previous === 'failed') failures = failures.filter((f) => cellKey(f) !== key);
    if (previous === 'skipped') skips = skips.filter((f) => cellKey(f) !== key);
    const mark = markOf(cell);
    row[column] = mark;
    counts[mark]++;
    bumpRail(rails, cell, previous, mark);
    if (mark === 'failed') failures.push(cell);
    if (mark === 'skipped') skips.push(cell);
  }
  return { ...base, grids, counts, failures, skips, rails };
}

/** Adds cells to the matrix as pending, keeping every result already recorded. */
export function widenMatrix(model: MatrixModel, extra: readonly Position[]): MatrixModel {
  const positions: Position[] = [];
  const marks = new Map<string, CellMark>();
  for (const [method, grid] of model.grids) {
    grid.forEach((row, i) =>
      row.forEach((mark, j) => {
        if (mark === undefined) return;
        const position = { method, from: model.ends[i]!, to: model.ends[j]! };
        positions.push(position);
        marks.set(cellKey(position), mark);
      }),
    );
  }
  const wide = createMatrix([...positions, ...extra], model.start);
  const grids = new Map([...wide.grids].map(([m, g]) => [m, g.map((row) => [...row])] as const));
  const counts = { ...wide.counts };
  const rails = new Map(wide.rails);
  for (const p of positions) {
    const mark = marks.get(cellKey(p))!;
    if (mark === 'pending') continue;
    grids.get(p.method)![wide.index.get(endKey(p.from))!]![wide.index.get(endKey(p.to))!] = mark;
    counts.pending--;
    counts[mark]++;
    bumpRail(rails, p, 'pending', mark);
  }
  return { ...wide, grids, counts, failures: model.failures, skips: model.skips, rails };
}

export const MARK_GLYPH: Readonly<Record<CellMark, string>> = {
  passed: '✓',
  failed: '✗',
  pending: '·',
  skipped: '–',
  'not-run': '○',
};

export interface MatrixGeometry {
  readonly labels: readonly string[];
  readonly labelWidth: number;
  /** Width of each destination column: its label, at least one cell glyph. */
  readonly columnWidths: readonly number[];
  /** Total width of one grid line (label column, then two spaces before each column). */
  readonly width: number;
  /** Lines the grids take, one header line per method plus one line per source NIC. */
  readonly height: number;
}

export const MATRIX_CORNER = 'from \\ to';

export function matrixGeometry(model: MatrixModel): MatrixGeometry {
  const labels = model.ends.map(endLabel);
  const labelWidth = Math.max(MATRIX_CORNER.length, ...labels.map((l) => l.length));
  const columnWidths = labels.map((l) => Math.max(1, l.length));
  const width = labelWidth + columnWidths.reduce((sum, w) => sum + 2 + w, 0);
  return { labels, labelWidth, columnWidths, width, height: model.methods.length * (model.ends.length + 1) };
}

/** One line of the grid as plain text with the glyph centred under each column label. */
export function centreIn(text: string, width: number): string {
  const left = Math.floor((width - text.length) / 2);
  return ' '.repeat(Math.max(0, left)) + text + ' '.repeat(Math.max(0, width - text.length - left));
}

/** The cells between two hosts (every NIC pair, every method), counted by how they ended. */
export interface HostPairCounts {
  readonly total: number;
  readonly passed: number;
  readonly failed: number;
  readonly skipped: number;
  readonly pending: number;
  readonly notRun: number;
}

/**
 * The matrix at host scale, for fleets whose NIC×NIC grid does not fit: rows are source hosts,
 * columns destination hosts, each cell the NIC pairs between them.
 */
export interface HostGrid {
  readonly hosts: readonly number[];
  /** cells[from][to], undefined where the matrix has no cell (a host and itself). */
  readonly cells: readonly (readonly (HostPairCounts | undefined)[])[];
  /** The most cells one host pair has (NICs × NICs × methods), for the legend. */
  readonly perPair: number;
}

export function hostGrid(model: MatrixModel): HostGrid {
  const hosts = [...new Set(model.ends.map((e) => e.host))];
  const at = new Map(hosts.map((h, i) => [h, i] as const));
  const counts = hosts.map(() =>
    hosts.map(
      ():
        | { total: number; passed: number; failed: number; skipped: number; pending: number; notRun: number }
        | undefined => undefined,
    ),
  );
  for (const grid of model.grids.values()) {
    grid.forEach((row, i) =>
      row.forEach((mark, j) => {
        if (mark === undefined) return;
        const from = at.get(model.ends[i]!.host)!;
        const to = at.get(model.ends[j]!.host)!;
        const cell = (counts[from]![to] ??= { total: 0, passed: 0, failed: 0, skipped: 0, pending: 0, notRun: 0 });
        cell.total++;
        if (mark === 'not-run') cell.notRun++;
        else cell[mark]++;
      }),
    );
  }
  const perPair = Math.max(0, ...counts.flatMap((row) => row.map((c) => c?.total ?? 0)));
  return { hosts, cells: counts, perPair };
}

/**
 * A host pair in one or two characters: ✓ every cell that ran passed (skipped ones aside), ✗ none
 * passed, else how many passed (`3`: 3 of the pair's cells); · while any is pending, ○ not run.
 */
export function hostCellGlyph(c: HostPairCounts | undefined): {
  readonly text: string;
  readonly mark: CellMark | undefined;
} {
  if (!c) return { text: '', mark: undefined };
  if (c.failed > 0)
    return c.passed === 0 ? { text: MARK_GLYPH.failed, mark: 'failed' } : { text: String(c.passed), mark: 'failed' };
  if (c.pending > 0) return { text: MARK_GLYPH.pending, mark: 'pending' };
  if (c.notRun > 0) return { text: MARK_GLYPH['not-run'], mark: 'not-run' };
  if (c.passed > 0) return { text: MARK_GLYPH.passed, mark: 'passed' };
  return { text: MARK_GLYPH.skipped, mark: 'skipped' };
}

export const HOST_GRID_CORNER = 'from\\to';

export interface HostGridGeometry {
  readonly labelWidth: number;
  /** Every column is as wide as the widest host number (or count); one space before each. */
  readonly columnWidth: number;
  readonly width: number;
  /** The header line and one line per source host. */
  readonly height: number;
}

/** The host grid's size, from the matrix alone (the grid itself is built only when it fits). */
export function hostGridGeometry(model: MatrixModel): HostGridGeometry {
  const hosts = [...new Set(model.ends.map((e) => e.host))];
  const nicsPerHost = Math.max(1, ...hosts.map((h) => model.ends.filter((e) => e.host === h).length));
  const perPair = nicsPerHost * nicsPerHost * Math.max(1, model.methods.length);
  const columnWidth = Math.max(1, ...hosts.map((h) => String(h).length), String(perPair).length);
  const labelWidth = Math.max(HOST_GRID_CORNER.length, ...hosts.map((h) => String(h).length));
  return { labelWidth, columnWidth, width: labelWidth + hosts.length * (1 + columnWidth), height: hosts.length + 1 };
}

/**
 * The matrix at rail scale, for hosts of more than two NICs: rows are the source NIC's number,
 * columns the destination's, each cell that NIC pair over every host pair (the diagonal is the
 * rails). As small as the NICs a host has, whatever the fleet's size.
 */
export interface RailGrid {
  readonly nics: readonly number[];
  /** cells[from][to], undefined where the matrix has no such pair (--rail: off the diagonal). */
  readonly cells: readonly (readonly (HostPairCounts | undefined)[])[];
  /** The most cells one NIC pair has, for the legend. */
  readonly perPair: number;
}

export function railGrid(model: MatrixModel): RailGrid {
  const nics = [...new Set(model.ends.map((e) => e.nic))].sort((a, b) => a - b);
  const cells = nics.map((from) => nics.map((to) => model.rails.get(`${from}>${to}`)));
  return { nics, cells, perPair: Math.max(0, ...[...model.rails.values()].map((c) => c.total)) };
}

/** Hosts with more NICs than the seeds' two get the rail view beside the host grid. */
export function showsRails(model: MatrixModel): boolean {
  return model.ends.some((e) => e.nic > 2);
}

export const RAIL_GRID_CORNER = 'NIC\\NIC';

/** The rail grid's size: a header line, one line per NIC, a legend. */
export function railGridGeometry(model: MatrixModel): HostGridGeometry {
  const nics = [...new Set(model.ends.map((e) => e.nic))];
  const perPair = Math.max(0, ...[...model.rails.values()].map((c) => c.total));
  // Two wide at least: eight single-character columns read as a word, not a grid.
  const columnWidth = Math.max(2, ...nics.map((n) => String(n).length), String(perPair).length);
  const labelWidth = Math.max(RAIL_GRID_CORNER.length, ...nics.map((n) => String(n).length));
  return { labelWidth, columnWidth, width: labelWidth + nics.length * (1 + columnWidth), height: nics.length + 2 };
}

/**
 * How the matrix is drawn: the NIC×NIC grid; the host×host grid (with the rail grid under it for
 * multi-rail hosts); the rail grid and a line of counts; or one line of counts.
 */
export type MatrixView =
  | { readonly kind: 'nic'; readonly legend: boolean; readonly height: number }
  | { readonly kind: 'hosts'; readonly legend: boolean; readonly rails: boolean; readonly height: number }
  | { readonly kind: 'rails'; readonly height: number }
  | { readonly kind: 'counts'; readonly height: 1 };

/**
 * The most detailed view that fits `columns` × `lines`: the NIC grid, else the host grid (with the
 * rail grid for hosts of more than two NICs; its legend left out before the grid is), else the
 * rail grid with a line of counts, else counts. The failing cells are listed under any of them.
 */
export function chooseMatrixView(model: MatrixModel, columns: number, space: number): MatrixView {
  // A matrix verify chose (or one not full) says so on a line of its own above any grid.
  const head = formatMatrixStartText(model.start) === undefined ? 0 : 1;
  const view = chooseGrids(model, columns, space - head);
  return view.kind === 'counts' ? view : { ...view, height: view.height + head };
}

function chooseGrids(model: MatrixModel, columns: number, lines: number): MatrixView {
  const nic = matrixGeometry(model);
  if (nic.width <= columns && nic.height + 1 <= lines) return { kind: 'nic', legend: true, height: nic.height + 1 };
  const hosts = hostGridGeometry(model);
  const rails = showsRails(model) ? railGridGeometry(model) : undefined;
  const railFits = rails !== undefined && rails.width <= columns;
  if (railFits && hosts.width <= columns && hosts.height + 1 + rails.height <= lines)
    return { kind: 'hosts', legend: true, rails: true, height: hosts.height + 1 + rails.height };
  if (hosts.width <= columns && hosts.height + 1 <= lines)
    return { kind: 'hosts', legend: true, rails: false, height: hosts.height + 1 };
  if (hosts.width <= columns && hosts.height <= lines)
    return { kind: 'hosts', legend: false, rails: false, height: hosts.height };
  if (railFits && rails.height + 1 <= lines) return { kind: 'rails', height: rails.height + 1 };
  return { kind: 'counts', height: 1 };
}
