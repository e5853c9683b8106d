/**
 * The TUI's view model: a pure fold of the runner's events (RunEvents, src/vocabulary.ts). No
 * React, no IO — the Ink components only draw what this produces, and the reducer is tested with
 * tables.
 *
 * Events are folded in batches (`reduceRun(state, actions)`): the TUI queues events as they come
 * and folds the queue once per frame, so a burst of 32 hosts connecting costs one copy of the
 * state, not 32.
 */
import type {
  CommandName,
  HostRef,
  HostResult,
  HostStatus,
  MatrixCell,
  MatrixStart,
  RunEnd,
  RunStart,
  Stage,
} from '../../vocabulary.js';
import { FAILING_STATUSES, reportsHostState } from '../../vocabulary.js';
import { foldHosts } from '../../inventory/select.js';
import { foldedFabricLines, foldedWarningLines } from '../text/fabric.js';
import { foldResults, type HostGroup } from '../text/fold.js';
import { STATUS_ORDER } from '../text/format.js';
import { runHeading, type RunHeading } from '../text/header.js';
import { formatDiffLines } from '../text/diffs.js';
import { formatPlanLines } from '../text/plan.js';
import { oneLine } from '../text/sanitize.js';
import { statusGroups, toFinishedHost, type FinishedHost } from './finished-host.js';
import { applyCells, createMatrix, widenMatrix, type MatrixModel } from './matrix.js';

export type RunAction =
  | { readonly type: 'runStart'; readonly event: RunStart }
  | { readonly type: 'hostStart'; readonly host: HostRef; readonly at: number }
  | { readonly type: 'stage'; readonly host: HostRef; readonly stage: Stage; readonly at: number }
  | { readonly type: 'hostDone'; readonly result: HostResult }
  | {
      readonly type: 'matrix';
      readonly cells: readonly Pick<MatrixCell, 'from' | 'to' | 'method'>[];
      readonly start?: MatrixStart;
    }
  | { readonly type: 'cell'; readonly cell: MatrixCell }
  | { readonly type: 'runEnd'; readonly event: RunEnd }
  /** The TUI was unmounted before the run ended (Ctrl-C): freeze what is known. */
  | { readonly type: 'detach'; readonly at: number };

/** The run's header: what runs on which hosts (the text layer's RunHeading). */
export type HeaderModel = RunHeading;

export interface RunningHost {
  readonly host: HostRef;
  /** undefined until the first onStage. */
  readonly stage: Stage | undefined;
  readonly startedAt: number;
}

/**
 * `rows`: every finished host is frozen above the live area — the whole run fits on a screen.
 * `compact`: more hosts than the terminal has rows; only hosts that need attention (failed,
 * unreachable, drift) are frozen as they finish, successes are counted live and folded into
 * one line per outcome at the end (`✓ changed 1-15,17-254`), like `clush -b`.
 */
export type DisplayMode = 'rows' | 'compact';

/** Column widths for frozen rows, fixed at run start because a frozen row is never redrawn. */
export interface RowLayout {
  readonly idWidth: number;
  readonly nameWidth: number;
}

export type StaticItem =
  | { readonly kind: 'header'; readonly key: string; readonly header: HeaderModel }
  | { readonly kind: 'host'; readonly key: string; readonly row: FinishedHost }
  | { readonly kind: 'groups'; readonly key: string; readonly groups: readonly HostGroup[]; readonly detailed: boolean }
  | { readonly kind: 'matrix'; readonly key: string; readonly matrix: MatrixModel; readonly inventory?: string }
  /** Text frozen after the outcomes: the dry-run plan folded across hosts (src/ui/text/plan.ts), status --diff's diffs. */
  | { readonly kind: 'plan'; readonly key: string; readonly lines: readonly string[] }
  /** Hosts that were still working when the run was interrupted, and where they were. */
  | { readonly kind: 'interrupted'; readonly key: string; readonly hosts: readonly RunningHost[] }
  /** status: each fabric NIC's RDMA port, folded (`fabric 16,34: ib0 → …`), and the run's warnings. */
  | {
      readonly kind: 'notes';
      readonly key: string;
      readonly fabric: readonly string[];
      readonly warnings: readonly string[];
    };

export interface RunState {
  readonly command: CommandName;
  /** Terminal rows when the TUI started: decides the display mode at run start. */
  readonly terminalRows: number;
  readonly mode: DisplayMode;
  readonly header: HeaderModel | undefined;
  readonly hosts: readonly HostRef[];
  readonly layout: RowLayout;
  readonly startedAt: number | undefined;
  /** In start order. */
  readonly running: ReadonlyMap<number, RunningHost>;
  /** In finishing order. */
  readonly finished: readonly FinishedHost[];
  readonly counts: Readonly<Record<HostStatus, number>>;
  readonly matrix: MatrixModel | undefined;
  /** Append-only: what <Static> has printed or will print, in order. */
  readonly staticItems: readonly StaticItem[];
  /** `problems`: what the hosts together cannot do (ports in another subnet): the run fails. */
  readonly end: { readonly durationMs: number; readonly interrupted: boolean; readonly problems?: number } | undefined;
  /** Every host's result as it came (the dry-run plan is folded from them at the end). */
  readonly results: readonly HostResult[];
}

/** Lines kept free around the hosts when deciding whether a run fits on one screen. */
const SCREEN_MARGIN = 4;

const zeroCounts = (): Record<HostStatus, number> =>
  Object.fromEntries(STATUS_ORDER.map((s) => [s, 0])) as Record<HostStatus, number>;

export function initialRunState(options: { readonly command: CommandName; readonly terminalRows?: number }): RunState {
  return {
    command: options.command,
    terminalRows: options.terminalRows ?? 24,
    mode: 'rows',
    header: undefined,
    hosts: [],
    layout: { idWidth: 3, nameWidth: 0 },
    startedAt: undefined,
    running: new Map(),
    finished: [],
    counts: zeroCounts(),
    matrix: undefined,
    staticItems: [],
    end: undefined,
    results: [],
  };
}

/**
 * Whether a finished host is frozen above the live area as soon as it finishes. In `rows` mode
 * none is: every host keeps its row in the live area, in host order, and the rows are frozen in
 * that order when the run ends (frozen rows could only come in finishing order).
 */
export function freezesRow(state: Pick<RunState, 'command' | 'mode'>, status: HostStatus): boolean {
  if (reportsHostState(state.command)) return false; // status shows folded groups instead
  if (state.command === 'verify') return FAILING_STATUSES.has(status); // the matrix is the result
  return state.mode === 'compact' && FAILING_STATUSES.has(status);
}

/** Rows mode for deploy and rollback: finished hosts stay in the live area, in host order, until the end. */
export function keepsRowsLive(state: Pick<RunState, 'command' | 'mode'>): boolean {
  return state.mode === 'rows' && !reportsHostState(state.command) && state.command !== 'verify';
}

/** Folds a batch of events into a new state; the input state is never modified. */
export function reduceRun(state: RunState, actions: readonly RunAction[]): RunState {
  if (actions.length === 0 || state.end) return state;
  let next: Draft = {
    ...state,
    running: new Map(state.running),
    finished: [...state.finished],
    counts: { ...state.counts },
    staticItems: [...state.staticItems],
    results: [...state.results],
    pendingCells: [],
  };
  for (const action of actions) {
    if (next.end) break;
    next = apply(next, action);
  }
  const { pendingCells, ...done } = next;
  return { ...done, matrix: pendingCells.length > 0 ? applyCells(done.matrix, pendingCells) : done.matrix };
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/** A state being built from one batch: its collections are private copies, safe to mutate. */
interface Draft extends Mutable<Omit<RunState, 'running' | 'finished' | 'counts' | 'staticItems' | 'results'>> {
  running: Map<number, RunningHost>;
  results: HostResult[];
  finished: FinishedHost[];
  counts: Record<HostStatus, number>;
  staticItems: StaticItem[];
  /** Cells are applied to the matrix once per batch (the matrix copies only the rows touched). */
  pendingCells: MatrixCell[];
  /** status: the notes the run's end brings, frozen after the status groups. */
  pendingNotes?: StaticItem | undefined;
}

function apply(d: Draft, action: RunAction): Draft {
  switch (action.type) {
    case 'runStart':
      // One TUI shows one run; a second start (a command reusing the handler) changes nothing.
      return d.header ? d : startRun(d, action.event);
    case 'hostStart':
      if (!isFinished(d, action.host.id) && !d.running.has(action.host.id)) {
        d.running.set(action.host.id, { host: action.host, stage: undefined, startedAt: action.at });
      }
      return d;
    case 'stage': {
      if (isFinished(d, action.host.id)) return d;
      const current = d.running.get(action.host.id);
      d.running.set(action.host.id, {
        host: action.host,
        stage: action.stage,
        startedAt: current?.startedAt ?? action.at,
      });
      return d;
    }
    case 'hostDone':
      finishHost(d, action.result);
      return d;
    case 'matrix': {
      const current = d.pendingCells.length > 0 ? applyCells(d.matrix, d.pendingCells) : d.matrix;
      d.pendingCells = [];
      // A second announcement widens the matrix; results already in are kept.
      d.matrix = current === undefined ? createMatrix(action.cells, action.start) : widenMatrix(current, action.cells);
      return d;
    }
    case 'cell':
      d.pendingCells.push(action.cell);
      return d;
    case 'runEnd':
      for (const result of action.event.results) finishHost(d, result);
      d.pendingCells.push(...action.event.cells);
      // verify says what the hosts' ports tell together too (GID indexes, another subnet manager).
      if (reportsHostState(d.command) || action.event.warnings?.length || action.event.problems?.length)
        noteFabric(d, action.event);
      return endRun(d, action.event.durationMs, action.event.interrupted, action.event.problems?.length ?? 0);
    case 'detach':
      return endRun(d, d.startedAt === undefined ? 0 : action.at - d.startedAt, true);
  }
}

function startRun(d: Draft, event: RunStart): Draft {
  const hosts = [...event.hosts].sort((a, b) => a.id - b.id);
  const header = runHeading(event);
  d.staticItems.push({ kind: 'header', key: 'header', header });
  return {
    ...d,
    command: event.command,
    header,
    hosts,
    startedAt: event.startedAt,
    mode: hosts.length <= d.terminalRows - SCREEN_MARGIN ? 'rows' : 'compact',
    layout: {
      idWidth: Math.max(1, ...hosts.map((h) => String(h.id).length)),
      nameWidth: Math.max(0, ...hosts.map((h) => h.name.length)),
    },
  };
}

function isFinished(d: Draft, id: number): boolean {
  return d.finished.some((f) => f.host.id === id);
}

function finishHost(d: Draft, result: HostResult): void {
  if (isFinished(d, result.host.id)) return;
  d.running.delete(result.host.id);
  d.results.push(result);
  const row = toFinishedHost(result, { showScripts: d.header?.showScripts ?? false });
  d.finished.push(row);
  d.counts[row.status]++;
  if (freezesRow(d, row.status)) d.staticItems.push({ kind: 'host', key: `host-${row.host.id}`, row });
}

function noteFabric(d: Draft, end: RunEnd): void {
  const fabric = foldedFabricLines(end.results).map((l) => oneLine(`fabric ${l}`));
  const warnings = [
    ...(end.problems ?? []).map((l) => oneLine(`problem ${l}`)),
    ...foldedWarningLines(end.results, end.warnings).map((l) => oneLine(`warning ${l}`)),
  ];
  d.pendingNotes = fabric.length || warnings.length ? { kind: 'notes', key: 'notes', fabric, warnings } : undefined;
}

function endRun(d: Draft, durationMs: number, interrupted: boolean, problems = 0): Draft {
  if (reportsHostState(d.command)) {
    if (d.finished.length > 0)
      d.staticItems.push({
        kind: 'groups',
        key: 'status',
        groups: statusGroups(d.results, d.header?.inventory),
        detailed: true,
      });
    if (d.pendingNotes) d.staticItems.push(d.pendingNotes);
  } else {
    const unfrozen = d.finished.filter((f) => !freezesRow(d, f.status));
    // Rows mode freezes its rows now, in host order; a dry run keeps only the failures as rows (the plan says the rest).
    const rows = keepsRowsLive(d)
      ? unfrozen.filter((f) => !d.header?.dryRun || d.header.showScripts || FAILING_STATUSES.has(f.status))
      : [];
    for (const row of [...rows].sort((a, b) => a.host.id - b.host.id))
      d.staticItems.push({ kind: 'host', key: `host-${row.host.id}`, row });
    // Successes fold by outcome and by what changed (`changed 16,34,40-57: +2 rules …`).
    const folded = unfrozen.filter((f) => !rows.includes(f));
    // A dry run's plan follows, folded by what would change: the outcomes need only say which hosts.
    const byOutcomeOnly = d.header?.dryRun === true && d.command === 'deploy';
    if (folded.length > 0)
      d.staticItems.push({
        kind: 'groups',
        key: 'outcomes',
        groups: foldResults(folded.map(foldInput), { ignoreReasons: byOutcomeOnly }),
        detailed: false,
      });
  }
  if (d.header?.diff) {
    const lines = formatDiffLines(d.results);
    if (lines.length > 0) d.staticItems.push({ kind: 'plan', key: 'diffs', lines });
  }
  if (d.header?.dryRun && d.command === 'deploy') {
    const lines = formatPlanLines(d.results, {
      scriptsHint: d.header.showScripts ? undefined : 'the exact scripts: --show-scripts',
    });
    if (lines.length > 0) d.staticItems.push({ kind: 'plan', key: 'plan', lines });
  }
  const matrix = d.pendingCells.length > 0 ? applyCells(d.matrix, d.pendingCells) : d.matrix;
  d.pendingCells = [];
  if (matrix) d.staticItems.push({ kind: 'matrix', key: 'matrix', matrix, inventory: d.header?.inventory });
  // verify: what the hosts' ports say together, below the matrix.
  if (!reportsHostState(d.command) && d.pendingNotes) d.staticItems.push(d.pendingNotes);
  if (interrupted && d.running.size > 0)
    d.staticItems.push({ kind: 'interrupted', key: 'interrupted', hosts: [...d.running.values()] });
  return {
    ...d,
    matrix,
    running: interrupted ? d.running : new Map(),
    end: { durationMs, interrupted, ...(problems > 0 ? { problems } : {}) },
  };
}

const foldInput = (f: FinishedHost) => ({ id: f.host.id, status: f.status, reasons: f.reasons });

// ---- Derived numbers the live area and the summary need ----

export function waitingCount(state: RunState): number {
  return Math.max(0, state.hosts.length - state.running.size - state.finished.length);
}

export function failingHostSets(
  state: RunState,
): { readonly status: HostStatus; readonly hostSet: string; readonly count: number }[] {
  return (['failed', 'unreachable', 'drift'] as const)
    .map((status) => {
      const ids = state.finished.filter((f) => f.status === status).map((f) => f.host.id);
      return { status, hostSet: foldHosts(ids), count: ids.length };
    })
    .filter((g) => g.count > 0);
}

/** Whether the run, as far as it went, would exit 0. */
export function runSucceeded(state: RunState): boolean {
  const hostsOk = state.finished.every((f) => !FAILING_STATUSES.has(f.status));
  const cellsOk = state.matrix === undefined || state.matrix.counts.failed === 0;
  return hostsOk && cellsOk && !state.end?.problems && !state.end?.interrupted;
}
