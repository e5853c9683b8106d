/**
 * Colour on a real colour terminal, and none at all with NO_COLOR. Ink colours through chalk,
 * which decides its level once, from process.env, when first imported — so this file forces a
 * level before anything loads Ink, and the imports below are dynamic on purpose.
 */
import { describe, expect, it } from 'vitest';
import { fakeIo } from './fake-terminal.js';

process.env.FORCE_COLOR = '1';
const { createTui } = await import('../../src/ui/tui/index.js');
const { cpu16, mem34, result, runStart, T0 } = await import('./fixtures.js');

const SGR = /\u001b\[[0-9;]*m/;

async function run(env: Record<string, string>): Promise<string> {
  const io = fakeIo(env);
  const tui = await createTui(io, { command: 'deploy', now: () => T0 + 1000, refreshMs: 5 });
  await tui.ready();
  tui.onRunStart(runStart([cpu16, mem34]));
  tui.onHostStart(mem34, T0);
  await new Promise((resolve) => setTimeout(resolve, 20));
  tui.onHostDone(result(cpu16, 'failed', { error: { stage: 'apply', message: 'boom', stderrTail: 'tail' } }));
  tui.onRunEnd({ results: [result(mem34, 'changed')], cells: [], durationMs: 1000, interrupted: false });
  await tui.waitUntilExit();
  return io.stdout.output;
}

describe('colours', () => {
  it('a colour terminal gets coloured outcomes (red for the failure)', async () => {
    const out = await run({});
    expect(out).toMatch(SGR);
    expect(out).toContain('\u001b[31m✗');
  });

  it('NO_COLOR: not a single SGR code, whatever the terminal could do', async () => {
    const out = await run({ NO_COLOR: '1' });
    expect(out).not.toMatch(SGR);
    expect(out).toContain('✗ 16');
  });
});
