/**
 * The Ink TUI as a handler of the runner's events. This module is light on purpose: Ink and
 * React load only when createTui() is called (from ./mount.js), so `ibfleet --help`, `--json`
 * and plain output never pay for them.
 */
import type { Tui, TuiIo, TuiOptions } from './types.js';

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
    onOutput: later('onOutput'),
    onMatrix: later('onMatrix'),
    onCell: later('onCell'),
    onRunEnd: later('onRunEnd'),
    unmount: later('unmount'),
    ready: async () => void (await ready),
    waitUntilExit: async () => (await ready).waitUntilExit(),
  };
}
