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
import type { FinishedHost, RunningHost, RunState } from './state.js';
import { failingHostSets, freezesRow, keepsRowsLive, statusGroups } from './state.js';
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
  let budget = Math.max(1, rows - 1) - 1; // the summary line is always there
  if (!state.header || state.end) return { ...EMPTY, height: 1 };

  const take = (lines: number): boolean => {
    if (lines > budget) return false;
    budget -= lines;
    return true;
  };

  const compact = state.mode === 'compact';
  const failing = compact && failingHostSets(state).length > 0 && take(1);
  const liveGroups = reportsHostState(state.command) && !compact;
  const rowsLive = keepsRowsLive(state);
  const progress = !liveGroups && !rowsLive && state.finished.some((f) => !freezesRow(state, f.status)) && take(1);

  const running = [...state.running.values()];
  // Keep one line for "… N running" so running hosts are never invisible.
  const runningFloor = running.length > 0 ? 1 : 0;

  let matrix: MatrixView | undefined;
  if (state.matrix) {
    // With room for a line of running hosts if possible; else the summary line counts them.
    let view = chooseMatrixView(state.matrix, viewport.columns, budget - runningFloor);
    if (view.kind === 'counts') view = chooseMatrixView(state.matrix, viewport.columns, budget);
    if (take(view.height)) matrix = view;
  }

  if (rowsLive) {
    const all = [
      ...state.finished.map((finished) => ({ id: finished.host.id, entry: { finished } })),
      ...running.map((r) => ({ id: r.host.id, entry: { running: r } })),
    ].sort((a, b) => a.id - b.id);
    const fit = all.length <= budget ? all.length : Math.max(0, budget - 1);
    take(fit);
    const hiddenRows = all.slice(fit).flatMap(({ entry }) => ('running' in entry ? [entry.running] : []));
    const moreRunning = all.length > fit && take(1);
    const used = Math.max(1, rows - 1) - budget;
    return {
      ...EMPTY,
      rows: all.slice(0, fit).map(({ entry }) => entry),
      hiddenRunning: hiddenRows,
      moreRunning,
      matrix,
      progress,
      failing,
      height: used,
    };
  }

  // Compact mode shows at most half a screen (and never more than 16) of running hosts: the rest
  // of the screen keeps the latest frozen failures in view, and every live line costs CPU on every
  // frame (Ink lays out and re-tokenises the whole live area ~10 times a second).
  const cap = compact ? Math.max(2, Math.min(MAX_COMPACT_RUNNING + 1, Math.floor(rows / 2) - 2)) : budget; // lines, "… N more" included
  const forRunning = Math.max(Math.min(runningFloor, budget), Math.min(budget, cap));
  let shown = running;
  let hidden: RunningHost[] = [];
  if (running.length > forRunning) {
    const fit = Math.max(0, forRunning - 1);
    shown = running.slice(0, fit);
    hidden = running.slice(fit);
  }
  take(shown.length);
  const moreRunning = hidden.length > 0 && take(1);

  let groups: HostGroup[] = [];
  let hiddenGroups: HostGroup[] = [];
  let moreGroups = false;
  if (liveGroups) {
    const all = statusGroups(state.results, state.header?.inventory);
    let index = 0;
    for (; index < all.length; index++) {
      const last = index === all.length - 1;
      const need = groupHeight(all[index]!) + (last ? 0 : 1); // keep room for "… N more"
      if (need > budget) break;
      take(groupHeight(all[index]!));
    }
    groups = all.slice(0, index);
    hiddenGroups = all.slice(index);
    moreGroups = hiddenGroups.length > 0 && take(1);
  }

  const used = Math.max(1, rows - 1) - budget;
  return {
    rows: [],
    running: shown,
    hiddenRunning: hidden,
    moreRunning,
    groups,
    hiddenGroups,
    moreGroups,
    matrix,
    progress,
    failing,
    height: used,
  };
}
