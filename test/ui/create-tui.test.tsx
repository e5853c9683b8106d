/** The entry point commands use: events in, terminal bytes out, clean exit. */
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createTui } from '../../src/ui/tui/index.js';
import type { Tui } from '../../src/ui/tui/types.js';
import { fakeIo } from './fake-terminal.js';
import { cpu16, mem34, plain, result, runStart, T0 } from './fixtures.js';

const SHOW_CURSOR = '\u001b[?25h';
const HIDE_CURSOR = '\u001b[?25l';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Ink (is-in-ci) draws no live frames under CI=…, only frozen output and the last frame. */
const INK_IS_LIVE = !['CI', 'CONTINUOUS_INTEGRATION'].some(
  (key) => key in process.env && process.env[key] !== '0' && process.env[key] !== 'false',
);

let open: Tui | undefined;
afterEach(() => {
  open?.unmount();
  open = undefined;
});

/** What is on screen at the end: Ink erases and redraws the live area, so the last frame is the tail. */
function screen(output: string): string {
  return plain(output.split('\u001b[G').at(-1));
}

describe('createTui', () => {
  it('draws the run as events arrive, leaves the last frame and restores the cursor when the run ends', async () => {
    const io = fakeIo();
    let clock = T0;
    const tui = (open = await createTui(io, { command: 'deploy', now: () => clock, refreshMs: 5, color: false }));
    await tui.ready();
    tui.onRunStart(runStart([cpu16, mem34]));
    tui.onHostStart(cpu16, T0);
    tui.onStage(cpu16, 'push', T0 + 500);
    clock = T0 + 1200;
    await sleep(30);
    if (INK_IS_LIVE) expect(plain(io.stdout.output)).toContain('16 cpuserver16  push           1.2s');

    tui.onHostDone(result(cpu16, 'changed', { manager: 'networkmanager', durationMs: 2000 }));
    tui.onHostDone(
      result(mem34, 'failed', {
        manager: 'netplan',
        durationMs: 2100,
        error: { stage: 'apply', message: 'script failed', stderrTail: 'Cannot find device "ib1"' },
      }),
    );
    clock = T0 + 2500;
    tui.onRunEnd({ results: [], cells: [], durationMs: 2500, interrupted: false });
    await tui.waitUntilExit();

    const out = plain(io.stdout.output);
    expect(out).toContain('✓ 16 cpuserver16  changed      networkmanager    2.0s');
    expect(out).toContain('✗ 34 memserver34  failed       netplan           2.1s  apply: script failed');
    expect(out).toContain('     │ Cannot find device "ib1"');
    expect(screen(io.stdout.output)).toContain('✗ deploy finished in 2.5s: 1 failed, 1 changed');
    // Ink hides the cursor on a terminal (not in CI mode); it must be shown again after the last hide.
    const output = io.stdout.output;
    if (output.includes(HIDE_CURSOR))
      expect(output.lastIndexOf(SHOW_CURSOR)).toBeGreaterThan(output.lastIndexOf(HIDE_CURSOR));
    expect(io.stderr.writes).toEqual([]);
  });

  it('queues events sent while Ink is still loading and draws them once mounted: nothing is lost', async () => {
    const io = fakeIo();
    const tui = (open = await createTui(io, { command: 'deploy', now: () => T0 + 2000, refreshMs: 5, color: false }));
    tui.onRunStart(runStart([cpu16, mem34]));
    tui.onHostStart(cpu16, T0);
    tui.onHostDone(result(cpu16, 'changed', { manager: 'networkmanager', durationMs: 2000 }));
    tui.onHostDone(result(mem34, 'unchanged', { manager: 'netplan', durationMs: 1000 }));
    tui.onRunEnd({ results: [], cells: [], durationMs: 2000, interrupted: false });
    await tui.waitUntilExit();
    const out = plain(io.stdout.output);
    expect(out).toContain('✓ 16 cpuserver16  changed      networkmanager    2.0s');
    expect(out).toContain('✓ 34 memserver34  unchanged    netplan           1.0s');
  });

  it('batches events: a burst of 254 hosts changing stage costs a frame or two, not 254', async () => {
    const io = fakeIo();
    let frames = 0;
    const tui = (open = await createTui(io, {
      command: 'deploy',
      now: () => {
        frames++;
        return T0;
      },
      refreshMs: 40,
      color: false,
    }));
    await tui.ready();
    const hosts = Array.from({ length: 254 }, (_, i) => ({ id: i + 1, name: `n${i + 1}`, target: `n${i + 1}` }));
    const before = frames;
    tui.onRunStart(runStart(hosts));
    for (const h of hosts) {
      tui.onHostStart(h, T0);
      tui.onStage(h, 'connect', T0);
    }
    await sleep(60);
    expect(frames - before).toBeGreaterThanOrEqual(1);
    expect(frames - before).toBeLessThanOrEqual(3);
  });

  it('unmount() (Ctrl-C) draws the state as interrupted, keeps it on screen, and ignores later events', async () => {
    const io = fakeIo();
    let clock = T0;
    const tui = (open = await createTui(io, { command: 'deploy', now: () => clock, refreshMs: 5, color: false }));
    await tui.ready();
    tui.onRunStart(runStart([cpu16, mem34]));
    tui.onHostStart(mem34, T0);
    tui.onStage(mem34, 'apply', T0 + 100);
    tui.onHostDone(result(cpu16, 'changed', { manager: 'networkmanager', durationMs: 900 }));
    clock = T0 + 3000;
    tui.unmount();
    tui.unmount(); // idempotent
    tui.onHostDone(result(mem34, 'changed'));
    tui.onRunEnd({ results: [], cells: [], durationMs: 9999, interrupted: true });
    await tui.waitUntilExit();
    const out = plain(io.stdout.output);
    expect(out).toContain('✗ interrupted  34 (apply 1)');
    expect(screen(io.stdout.output)).toContain('✗ deploy interrupted after 3.0s: 1 changed, 1 not finished (34)');
    expect(out).not.toContain('9999');
    expect(out).not.toContain('2 changed');
  });

  it('never puts stdin in raw mode, so Ctrl-C stays a signal the command handles', async () => {
    const io = fakeIo();
    const stdin = Object.assign(new PassThrough(), { isTTY: true, setRawMode: vi.fn() });
    const tui = (open = await createTui({ ...io, stdin }, { command: 'status', color: false, refreshMs: 5 }));
    await tui.ready();
    tui.onRunStart(runStart([cpu16], { command: 'status' }));
    await sleep(20);
    tui.onRunEnd({ results: [result(cpu16, 'ok')], cells: [], durationMs: 10, interrupted: false });
    await tui.waitUntilExit();
    expect(stdin.setRawMode).not.toHaveBeenCalled();
  });

  it('works with a bare writer for stdout (no resize events) and an unknown terminal size', async () => {
    const chunks: string[] = [];
    const io = { ...fakeIo(), stdout: { isTTY: true, write: (chunk: string) => chunks.push(chunk) } };
    const tui = (open = await createTui(io, { command: 'rollback', now: () => T0, color: false }));
    await tui.ready();
    tui.onRunStart(runStart([cpu16], { command: 'rollback' }));
    tui.onRunEnd({
      results: [result(cpu16, 'changed', { reasons: ['removed hook'] })],
      cells: [],
      durationMs: 1500,
      interrupted: false,
    });
    await tui.waitUntilExit();
    expect(plain(chunks.join(''))).toContain('✓ rollback finished in 1.5s: 1 changed');
  });

  it('without a colour override, NO_COLOR in the given env turns colour off', async () => {
    const io = fakeIo({ NO_COLOR: '1' });
    const tui = (open = await createTui(io, { command: 'deploy', now: () => T0 }));
    await tui.ready();
    tui.onRunStart(runStart([cpu16]));
    tui.onRunEnd({
      results: [result(cpu16, 'failed', { error: { stage: 'apply', message: 'x', stderrTail: '' } })],
      cells: [],
      durationMs: 1,
      interrupted: false,
    });
    await tui.waitUntilExit();
    expect(io.stdout.output).not.toMatch(/\u001b\[[0-9;]*m/);
  });
});
