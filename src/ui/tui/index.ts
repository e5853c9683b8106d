/**
 * The Ink TUI as a handler of the runner's events. This module is light on purpose: Ink and
 * React load only when createTui() is called (from ./mount.js), so `ibfleet --help`, `--json`
 * and plain output never pay for them.
 */
import type { CommandName, RunEvents } from '../../runner/events.js';

/** The part of a command's Io the TUI needs (src/commands/context.ts `Io` fits). */
export interface TuiStream {
  write(chunk: string): unknown;
  readonly isTTY?: boolean;
  readonly columns?: number;
  readonly rows?: number;
}

export interface TuiIo {
  readonly stdout: TuiStream;
  readonly stderr: TuiStream;
  readonly stdin: NodeJS.ReadableStream;
  readonly env: Readonly<Record<string, string | undefined>>;
}

export interface TuiOptions {
  readonly command: CommandName;
  /** The clock for elapsed times (epoch ms, like the runner's `at`); default Date.now. */
  readonly now?: () => number;
  /** How often the screen is redrawn at most, and the spinner advances; default 100 ms (10×/s). */
  readonly refreshMs?: number;
  /** Override colour detection (default: NO_COLOR / FORCE_COLOR / TTY, from io.env). */
  readonly color?: boolean;
  /** Override the terminal size (default: io.stdout.rows / columns, then 24 × 80). */
  readonly rows?: number;
  readonly columns?: number;
}

export interface Tui extends Required<RunEvents> {
  /** Resolves once Ink is loaded and the app mounted; events sent before are queued, not lost. */
  ready(): Promise<void>;
  /** Resolves once the last frame is on screen: after onRunEnd, or after unmount(). */
  waitUntilExit(): Promise<void>;
  /**
   * Stop drawing now (Ctrl-C): the current state is drawn one last time as interrupted, the
   * cursor is shown again, the final frame stays on screen. Later events are ignored. Idempotent.
   */
  unmount(): void;
}

/**
 * Returns at once: Ink and React take ~0.4 s to load, so events are queued and replayed (with their
 * own timestamps) once the app is mounted, and that load overlaps the run's SSH work instead of
 * delaying it.
 */
export async function createTui(io: TuiIo, options: TuiOptions): Promise<Tui> {
  let mounted: Tui | undefined;
  const queue: ((tui: Tui) => void)[] = [];
  const ready = import('./mount.js').then(async ({ mountTui }) => {
    const tui = await mountTui(io, options);
    for (const replay of queue.splice(0)) replay(tui);
    mounted = tui;
    return tui;
  });
  const later =
    <K extends keyof Tui>(key: K) =>
    (...args: Parameters<Tui[K]>): void => {
      const call = (tui: Tui) => (tui[key] as (...a: Parameters<Tui[K]>) => void)(...args);
      if (mounted) call(mounted);
      else queue.push(call);
    };
  return {
    onRunStart: later('onRunStart'),
    onHostStart: later('onHostStart'),
    onStage: later('onStage'),
    onHostDone: later('onHostDone'),
    onMatrix: later('onMatrix'),
    onCell: later('onCell'),
    onRunEnd: later('onRunEnd'),
    unmount: later('unmount'),
    ready: async () => void (await ready),
    waitUntilExit: async () => (await ready).waitUntilExit(),
  };
}
