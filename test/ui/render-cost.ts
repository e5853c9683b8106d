/**
 * What the TUI costs in CPU for a 254-host deploy: every host goes start → connect, probe, plan,
 * push, apply → done, 32 at a time, one stage a second, as a lab deploy does. Three figures:
 *
 *   reducer   — folding all 1,780 events into the view model, no rendering;
 *   tui       — the real createTui() drawing to a fake 100×24 terminal, one frame per 100 ms
 *               of simulated time (its own batching; ~400 frames for the ~40 s run);
 *   naive     — for comparison, a render after every single event, as an unbatched TUI would.
 *
 * Run: `npx tsx test/ui/render-cost.ts` (the vitest file of the same name prints it too).
 */
import { render } from 'ink';
import { createElement } from 'react';
import type { HostRef, RunEvents, Stage } from '../../src/vocabulary.js';
import { createTui } from '../../src/ui/tui/index.js';
import { initialRunState, reduceRun, type RunAction } from '../../src/ui/tui/state.js';
import { TuiApp } from '../../src/ui/tui/tui-app.js';
import { fakeIo, FakeTerminal } from './fake-terminal.js';
import { host, runStart, T0 } from './fixtures.js';

// Read before anything renders: React picks its build from NODE_ENV when it is first imported
// (createTui sets production when NODE_ENV is unset; vitest sets NODE_ENV=test).
const REACT_BUILD =
  process.env.NODE_ENV === 'production' ? 'production' : `development (NODE_ENV=${process.env.NODE_ENV ?? 'unset'})`;
const HOSTS = 254;
const CONCURRENCY = 32;
const STAGES: readonly Stage[] = ['connect', 'probe', 'plan', 'push', 'apply'];
const TICK_MS = 100;
const STAGE_MS = 1000;

interface Timed {
  readonly at: number;
  readonly action: RunAction;
}

/** The event stream of the simulated deploy, in time order. */
export function simulatedDeploy(): Timed[] {
  const hosts: HostRef[] = Array.from({ length: HOSTS }, (_, i) =>
    host(i + 1, `node${String(i + 1).padStart(3, '0')}`),
  );
  const timed: Timed[] = [
    { at: T0, action: { type: 'runStart', event: runStart(hosts, { concurrency: CONCURRENCY }) } },
  ];
  const slots = Array.from({ length: CONCURRENCY }, (_, i) => T0 + i * 37); // staggered starts
  hosts.forEach((h, i) => {
    const slot = i % CONCURRENCY;
    // Hosts differ a little in speed, so stages do not all change on the same tick.
    const stageMs = STAGE_MS + ((h.id * 53) % 400);
    let at = slots[slot]!;
    timed.push({ at, action: { type: 'hostStart', host: h, at } });
    for (const stage of STAGES) {
      timed.push({ at, action: { type: 'stage', host: h, stage, at } });
      at += stageMs;
    }
    const status = h.id % 50 === 0 ? 'failed' : h.id % 3 === 0 ? 'unchanged' : 'changed';
    timed.push({
      at,
      action: {
        type: 'hostDone',
        result: {
          host: h,
          status,
          manager: 'netplan',
          durationMs: at - slots[slot]!,
          reasons: status === 'changed' ? ['added route 172.16.0.0/16 table 941'] : [],
          ...(status === 'failed'
            ? {
                error: {
                  stage: 'apply' as const,
                  message: 'routing script failed',
                  stderrTail: 'Cannot find device "ib1"\n+ exit 2',
                },
              }
            : {}),
        },
      },
    });
    slots[slot] = at + 20;
  });
  const last = Math.max(...slots);
  timed.push({
    at: last,
    action: { type: 'runEnd', event: { results: [], cells: [], durationMs: last - T0, interrupted: false } },
  });
  return timed.sort((a, b) => a.at - b.at);
}

function cpuMs(since: NodeJS.CpuUsage): number {
  const d = process.cpuUsage(since);
  return (d.user + d.system) / 1000;
}

function deliver(handler: Required<RunEvents>, action: RunAction): void {
  switch (action.type) {
    case 'runStart':
      return handler.onRunStart(action.event);
    case 'hostStart':
      return handler.onHostStart(action.host, action.at);
    case 'stage':
      return handler.onStage(action.host, action.stage, action.at);
    case 'hostDone':
      return handler.onHostDone(action.result);
    case 'matrix':
      return handler.onMatrix(action.cells);
    case 'cell':
      return handler.onCell(action.cell);
    case 'runEnd':
      return handler.onRunEnd(action.event);
    case 'detach':
      return;
  }
}

export interface RenderCost {
  readonly events: number;
  readonly simulatedSeconds: number;
  readonly reducerMs: number;
  readonly tuiMs: number;
  readonly tuiFrames: number;
  readonly tuiBytes: number;
  readonly reactBuild: string;
  readonly naiveMs: number;
  readonly naiveRenders: number;
  readonly finalFrame: string;
}

export interface MeasureOptions {
  /** Wall-clock milliseconds per simulated 100 ms tick (and the TUI's refresh period). */
  readonly wallTickMs?: number;
  /** Also time the unbatched, render-per-event variant (slow: ~1,780 full renders). */
  readonly naive?: boolean;
}

export async function measureRenderCost(options: MeasureOptions = {}): Promise<RenderCost> {
  const wallTickMs = options.wallTickMs ?? 10;
  const timed = simulatedDeploy();
  const actions = timed.map((t) => t.action);
  const end = timed[timed.length - 1]!.at;

  // 1. The reducer alone, one event at a time (its worst case).
  let cpu = process.cpuUsage();
  let state = initialRunState({ command: 'deploy', terminalRows: 24 });
  for (const action of actions) state = reduceRun(state, [action]);
  const reducerMs = cpuMs(cpu);

  // 2. The real TUI, with its own 10-frames-a-second batching. Simulated time advances 100 ms per
  //    tick; the TUI refreshes every `wallTickMs` of wall time and the loop waits as long per tick,
  //    so about one frame is drawn per simulated 100 ms (the measurement takes ~5 s, not ~50 s).
  //    Frames are counted exactly: the TUI reads the clock once per frame.
  const io = fakeIo({}, { columns: 100, rows: 24 });
  let clock = T0;
  let frames = 0;
  const waitTick = () => new Promise((resolve) => setTimeout(resolve, wallTickMs));
  // The same loop without a TUI, to subtract the cost of the simulation itself.
  cpu = process.cpuUsage();
  for (let t = T0, i = 0; t <= end + TICK_MS; t += TICK_MS) {
    while (i < timed.length && timed[i]!.at <= t) i++;
    await waitTick();
  }
  const loopMs = cpuMs(cpu);

  cpu = process.cpuUsage();
  const tui = await createTui(io, {
    command: 'deploy',
    now: () => {
      frames++;
      return clock;
    },
    refreshMs: wallTickMs,
    color: false,
  });
  await tui.ready();
  let next = 0;
  for (clock = T0; next < timed.length; clock += TICK_MS) {
    while (next < timed.length && timed[next]!.at <= clock) deliver(tui, timed[next++]!.action);
    await waitTick();
  }
  await tui.waitUntilExit();
  const tuiMs = Math.max(0, cpuMs(cpu) - loopMs);

  // 3. Naive: re-render after every event (no batching), straight into Ink.
  const terminal = new FakeTerminal(100, 24);
  if (options.naive === false) {
    return {
      events: actions.length,
      simulatedSeconds: (end - T0) / 1000,
      reducerMs,
      tuiMs,
      tuiFrames: frames,
      tuiBytes: io.stdout.output.length,
      reactBuild: REACT_BUILD,
      naiveMs: Number.NaN,
      naiveRenders: 0,
      finalFrame: io.stdout.writes.slice(-6).join(''),
    };
  }
  cpu = process.cpuUsage();
  let naiveState = initialRunState({ command: 'deploy', terminalRows: 24 });
  const view = (now: number) =>
    createElement(TuiApp, { state: naiveState, now, frame: 0, rows: 24, columns: 100, color: false });
  const instance = render(view(T0), {
    stdout: terminal as unknown as NodeJS.WriteStream,
    patchConsole: false,
    exitOnCtrlC: false,
    maxFps: 1_000_000,
  });
  for (const t of timed) {
    naiveState = reduceRun(naiveState, [t.action]);
    instance.rerender(view(t.at));
  }
  instance.unmount();
  const naiveMs = cpuMs(cpu);

  return {
    events: actions.length,
    simulatedSeconds: (end - T0) / 1000,
    reducerMs,
    tuiMs,
    tuiFrames: frames,
    tuiBytes: io.stdout.output.length,
    reactBuild: REACT_BUILD,
    naiveMs,
    naiveRenders: timed.length,
    finalFrame: io.stdout.writes.slice(-6).join(''),
  };
}

export function formatRenderCost(c: RenderCost): string {
  return [
    `render cost, ${HOSTS} hosts × (start, ${STAGES.length} stages, done) = ${c.events} events, ${c.simulatedSeconds.toFixed(1)} s simulated deploy at concurrency ${CONCURRENCY}:`,
    `  reducer only (one event at a time):   ${c.reducerMs.toFixed(1)} ms CPU`,
    `  createTui, batched to 10 frames/s:    ${c.tuiMs.toFixed(0)} ms CPU for ${c.tuiFrames} frames = ${(c.tuiMs / c.tuiFrames).toFixed(2)} ms/frame, ${(c.tuiMs / c.tuiFrames).toFixed(1)}% of one core at 10 frames/s (${(c.tuiBytes / 1024).toFixed(0)} KiB written)`,
    ...(c.naiveRenders > 0
      ? [
          `  naive, one render per event:          ${c.naiveMs.toFixed(0)} ms CPU for ${c.naiveRenders} renders = ${(c.naiveMs / c.naiveRenders).toFixed(2)} ms/render`,
        ]
      : []),
    `  React build: ${c.reactBuild}`,
  ].join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(formatRenderCost(await measureRenderCost()));
}
