/**
 * Scripts that run nothing unless they arrived whole (src/script/shell.ts) still hold a conversation:
 * the probe, then the change written to the same `sh -s`. Whether a cut script runs anything, at
 * every byte offset, needs root for its sandbox: test/root/render/received-whole.test.ts.
 */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { receivedWhole } from '../../src/script/shell.js';

describe('the conversation still works: the probe, then the change written to the same shell', () => {
  it('a wrapped probe followed by a wrapped change runs both, in order, in one sh -s; a cut change runs nothing of the change', () => {
    const first = receivedWhole('__ibfleet_probe_main', 'held=yes\necho probed');
    const second = receivedWhole('__ibfleet_apply_main', 'echo "applied with held=$held"');
    const both = spawnSync('sh', ['-s'], { input: first + second, encoding: 'utf8' });
    expect(both.stdout).toBe('probed\napplied with held=yes\n');
    const cut = spawnSync('sh', ['-s'], { input: first + second.slice(0, second.length - 3), encoding: 'utf8' });
    expect(cut.stdout).toBe('probed\n');
  });
});
