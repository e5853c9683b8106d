/**
 * What the live area (below the frozen rows) shows, so that it always fits the terminal. Pure.
 *
 * Ink redraws the live area by erasing it line by line; once it is as tall as the terminal, Ink
 * falls back to clearing the whole screen on every frame (flicker, lost scrollback). So the live
 * area is budgeted to `rows - 1` lines, filled by priority: the summary, the hosts that need
 * attention (as one folded line), running hosts (oldest first: a stuck host stays in view), the
 * matrix, then detail. Whatever does not fit is counted, never silently dropped.
 */
import type { HostGroup } from '../text/fold.js';
import { chooseMatrixView, type MatrixView } from './matrix.js';
import { statusGroups, type FinishedHost } from './finished-host.js';
import type { RunningHost, RunState } from './state.js';
import { failingHostSets, freezesRow, keepsRowsLive } from './state.js';
import { reportsHostState } from '../../vocabulary.js';

export interface Viewport {
  readonly rows: number;
  readonly columns: number;
}

export interface LivePlan {
  /** Hosts shown with a spinner, oldest first. */
  readonly running: readonly RunningHost[];
  /** Running hosts that did not fit, counted on one `… N more running` line (if `moreRunning`). */
  readonly hiddenRunning: readonly RunningHost[];
  readonly moreRunning: boolean;
  /** Status (one screen): groups so far. */
  readonly groups: readonly HostGroup[];
  readonly hiddenGroups: readonly HostGroup[];
  readonly moreGroups: boolean;
  /** Verify: the NIC grid or the host grid if one fits, else one line of counts. */
  readonly matrix: MatrixView | undefined;
  /** Compact mode: `… 212 more finished: …`. */
  readonly progress: boolean;
  /** Compact mode: `failed 40,77 · unreachable 100-102` — failures stay on screen after their frozen rows scroll away. */
  readonly failing: boolean;
  /**
   * Rows mode (deploy, rollback): every started host in host order, finished ones with their
   * outcome; `running` is then empty. Hosts that did not fit are counted in `hiddenRunning`.
   */
  readonly rows: readonly ({ readonly running: RunningHost } | { readonly finished: FinishedHost })[];
  /** Lines the plan takes, summary included (always < rows). */
  readonly height: number;
}

export const DEFAULT_ROWS = 24;
export const DEFAULT_COLUMNS = 80;
/** Running rows shown at most in compact mode (the rest are counted by stage). */
export const MAX_COMPACT_RUNNING = 16;

const EMPTY: Omit<LivePlan, 'height'> = {
  rows: [],
  running: [],
  hiddenRunning: [],
  moreRunning: false,
  groups: [],
  hiddenGroups: [],
  moreGroups: false,
  matrix: undefined,
  progress: false,
  failing: false,
};

/** Lines a status group takes: its row, plus one per drift reason when reasons are listed. */
export function groupHeight(group: HostGroup): number {
  return 1 + (group.status === 'drift' ? group.reasons.length : 0);
}

export function planLiveArea(state: RunState, viewport: Viewport): LivePlan {
  const rows = viewport.rows > 0 ? viewport.rows : DEFAULT_ROWS;
  const budget = lineBudget(Math.max(1, rows - 1) - 1); // the summary line is always there
  if (!state.header || state.end) return { ...EMPTY, height: 1 };
  const used = () => Math.max(1, rows - 1) - budget.left;

  const compact = state.mode === 'compact';
  const failing = compact && failingHostSets(state).length > 0 && budget.take(1);
  const liveGroups = reportsHostState(state.command) && !compact;
  const rowsLive = keepsRowsLive(state);
  const progress =
    !liveGroups && !rowsLive && state.finished.some((f) => !freezesRow(state, f.status)) && budget.take(1);

  const running = [...state.running.values()];
  // Keep one line for "… N running" so running hosts are never invisible.
  const runningFloor = running.length > 0 ? 1 : 0;
  const matrix = state.matrix ? planMatrix(state.matrix, viewport.columns, runningFloor, budget) : undefined;

  if (rowsLive) return { ...EMPTY, ...planRows(state, running, budget), matrix, progress, failing, height: used() };
  const shown = planRunning(running, compact ? rows : undefined, runningFloor, budget);
  const groups = liveGroups ? planGroups(state, budget) : { groups: [], hiddenGroups: [], moreGroups: false };
  return { rows: [], ...shown, ...groups, matrix, progress, failing, height: used() };
}

/** The live area's lines still free; `take` spends them, and refuses what does not fit. */
interface LineBudget {
  readonly left: number;
  take(lines: number): boolean;
}

function lineBudget(lines: number): LineBudget {
  let left = lines;
  return {
    get left() {
      return left;
    },
    take(wanted: number): boolean {
      if (wanted > left) return false;
      left -= wanted;
      return true;
    },
  };
}

function planMatrix(
  matrix: NonNullable<RunState['matrix']>,
  columns: number,
  runningFloor: number,
  budget: LineBudget,
): MatrixView | undefined {
  // With room for a line of running hosts if possible; else the summary line counts them.
  let view = chooseMatrixView(matrix, columns, budget.left - runningFloor);
  if (view.kind === 'counts') view = chooseMatrixView(matrix, columns, budget.left);
  return budget.take(view.height) ? view : undefined;
}

/** Rows mode: every started host in host order while they fit; the running ones past that are counted. */
function planRows(
  state: RunState,
  running: readonly RunningHost[],
  budget: LineBudget,
): Pick<LivePlan, 'rows' | 'hiddenRunning' | 'moreRunning'> {
  const all = [
    ...state.finished.map((finished) => ({ id: finished.host.id, entry: { finished } })),
    ...running.map((r) => ({ id: r.host.id, entry: { running: r } })),
  ].sort((a, b) => a.id - b.id);
  const fit = all.length <= budget.left ? all.length : Math.max(0, budget.left - 1);
  budget.take(fit);
  const hiddenRows = all.slice(fit).flatMap(({ entry }) => ('running' in entry ? [entry.running] : []));
  const moreRunning = all.length > fit && budget.take(1);
  return { rows: all.slice(0, fit).map(({ entry }) => entry), hiddenRunning: hiddenRows, moreRunning };
}

/**
 * The running hosts shown, oldest first, and those counted on one `… N more running` line.
 * `compactRows`: the terminal's rows in compact mode, which caps them; undefined otherwise.
 */
function planRunning(
  running: readonly RunningHost[],
  compactRows: number | undefined,
  runningFloor: number,
  budget: LineBudget,
): Pick<LivePlan, 'running' | 'hiddenRunning' | 'moreRunning'> {
  // Compact mode shows at most half a screen (and never more than 16) of running hosts: the rest
  // of the screen keeps the latest frozen failures in view, and every live line costs CPU on every
  // frame (Ink lays out and re-tokenises the whole live area ~10 times a second).
  const cap =
    compactRows !== undefined
      ? Math.max(2, Math.min(MAX_COMPACT_RUNNING + 1, Math.floor(compactRows / 2) - 2))
      : budget.left; // lines, "… N more" included
  const forRunning = Math.max(Math.min(runningFloor, budget.left), Math.min(budget.left, cap));
  let shown = running;
  let hidden: readonly RunningHost[] = [];
  if (running.length > forRunning) {
    const fit = Math.max(0, forRunning - 1);
    shown = running.slice(0, fit);
    hidden = running.slice(fit);
  }
  budget.take(shown.length);
  const moreRunning = hidden.length > 0 && budget.take(1);
  return { running: shown, hiddenRunning: hidden, moreRunning };
}

/** Status's groups so far, each with its drift reasons, while they fit; the rest counted on one line. */
function planGroups(state: RunState, budget: LineBudget): Pick<LivePlan, 'groups' | 'hiddenGroups' | 'moreGroups'> {
  const all = statusGroups(state.results, state.header?.inventory);
  let index = 0;
  for (; index < all.length; index++) {
    const last = index === all.length - 1;
    const need = groupHeight(all[index]!) + (last ? 0 : 1); // keep room for "… N more"
    if (need > budget.left) break;
    budget.take(groupHeight(all[index]!));
  }
  const hiddenGroups = all.slice(index);
  return { groups: all.slice(0, index), hiddenGroups, moreGroups: hiddenGroups.length > 0 && budget.take(1) };
}
