/**
 * Wires the runner's events to Ink. Events are queued as they arrive and folded into the view
 * model once per frame by one shared interval (default every 100 ms), which also advances the
 * spinners: a burst of 254 hosts changing stage costs one state copy and one render, not 254.
 */
import { EventEmitter } from 'node:events';
import { render } from 'ink';
import { colorEnabled } from './color.js';
import type { OutStream } from '../stream.js';
import type { Tui, TuiIo, TuiOptions } from './types.js';
import { DEFAULT_COLUMNS, DEFAULT_ROWS } from './layout.js';
import { initialRunState, reduceRun, type RunAction, type RunState } from './state.js';
import { TuiApp } from './tui-app.js';

export function mountTui(io: TuiIo, options: TuiOptions): Tui {
  const now = options.now ?? Date.now;
  const refreshMs = Math.max(1, options.refreshMs ?? 100);
  const color = options.color ?? colorEnabled(io.env, io.stdout);
  const rows = () => options.rows ?? (io.stdout.rows || DEFAULT_ROWS);
  const columns = () => options.columns ?? (io.stdout.columns || DEFAULT_COLUMNS);
  const stdout = asInkStream(io.stdout);

  let state: RunState = initialRunState({ command: options.command, terminalRows: rows() });
  let queue: RunAction[] = [];
  let frame = 0;
  let closed = false;

  const view = () => <TuiApp state={state} now={now()} frame={frame} rows={rows()} columns={columns()} color={color} />;
  const instance = render(view(), {
    stdout,
    stderr: asInkStream(io.stderr),
    stdin: io.stdin as NodeJS.ReadStream,
    // The command owns SIGINT (it aborts the runner, then calls unmount()); Ink never puts
    // stdin in raw mode here, so Ctrl-C reaches the process as a signal.
    exitOnCtrlC: false,
    patchConsole: false,
    maxFps: Math.ceil(1000 / refreshMs),
  });
  // Ask for the exit promise now: Ink only resolves a promise that exists when it unmounts.
  const exited = instance.waitUntilExit().then(() => undefined);

  const paint = () => {
    if (queue.length > 0) {
      state = reduceRun(state, queue);
      queue = [];
    }
    instance.rerender(view());
  };
  // While the run is open every frame changes (spinner, elapsed), so each tick draws.
  const timer = setInterval(() => {
    frame++;
    paint();
  }, refreshMs);
  timer.unref?.();

  const push = (action: RunAction) => {
    if (!closed) queue.push(action);
  };
  const close = (action: RunAction) => {
    if (closed) return;
    queue.push(action);
    closed = true;
    clearInterval(timer);
    paint();
    instance.unmount();
  };

  return {
    onRunStart: (event) => push({ type: 'runStart', event }),
    onHostStart: (host, at) => push({ type: 'hostStart', host, at }),
    onStage: (host, stage, at) => push({ type: 'stage', host, stage, at }),
    onHostDone: (result) => push({ type: 'hostDone', result }),
    // Scripts and their output are for the run log; the screen shows outcomes.
    onOutput: () => undefined,
    onMatrix: (cells, start) => push({ type: 'matrix', cells, ...(start ? { start } : {}) }),
    onCell: (cell) => push({ type: 'cell', cell }),
    onRunEnd: (event) => close({ type: 'runEnd', event }),
    ready: () => Promise.resolve(),
    waitUntilExit: () => exited,
    unmount: () => close({ type: 'detach', at: now() }),
  };
}

/** Ink listens for 'resize' on stdout; a bare writer (tests, wrappers) gets an emitter around it. */
function asInkStream(stream: OutStream): NodeJS.WriteStream {
  const candidate = stream as OutStream & Partial<Pick<EventEmitter, 'on' | 'off'>>;
  if (typeof candidate.on === 'function' && typeof candidate.off === 'function') return stream as NodeJS.WriteStream;
  const proxy = new EventEmitter();
  Object.defineProperties(proxy, {
    isTTY: { get: () => stream.isTTY },
    columns: { get: () => stream.columns },
    rows: { get: () => stream.rows },
    write: {
      value: (chunk: string, callback?: () => void) => {
        stream.write(chunk);
        callback?.();
        return true;
      },
    },
  });
  return proxy as unknown as NodeJS.WriteStream;
}
