/**
 * The TUI's contract with the commands: what it is given (TuiIo, TuiOptions) and what it is (Tui,
 * a handler of the run's events). Types only, so the light entry (index.ts) and the Ink half
 * (mount.tsx) both take them from here.
 */
import type { CommandName, RunEvents } from '../../vocabulary.js';
import type { OutStream } from '../stream.js';

/** The part of a command's Io the TUI needs (src/commands/context.ts `Io` fits). */
export interface TuiIo {
  readonly stdout: OutStream;
  readonly stderr: OutStream;
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
