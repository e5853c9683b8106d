/**
 * `ibfleet lab` refusing a lab that is not up, as root meets it (a user who is not root is told
 * that the lab needs root first): the usage errors any user meets are in test/lab/format-cli.test.ts.
 */
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { main } from '../../../src/cli.js';
import type { Io } from '../../../src/commands/context.js';

const IS_ROOT = process.getuid?.() === 0;
if (!IS_ROOT) console.warn('NOTE: test/root/lab/format-cli.test.ts skipped: the lab commands need root');

describe.skipIf(!IS_ROOT)('ibfleet lab on the command line, as root', () => {
  async function ibfleet(argv: readonly string[]) {
    let stdout = '';
    let stderr = '';
    const io = {
      stdout: { write: (chunk: string) => (stdout += chunk), isTTY: false },
      stderr: { write: (chunk: string) => (stderr += chunk), isTTY: false },
      stdin: Readable.from([]),
      env: {},
      cwd: process.cwd(),
      interruptSignal: () => new AbortController().signal,
    } as unknown as Io;
    const code = await main(argv, io);
    return { code, stdout, stderr };
  }

  it.each([
    [
      ['lab', 'reboot', '0', '--name', 'no-such-lab'],
      /lab no-such-lab is not up \((no lab is up on this machine|labs up here: .*)\); start it with: ibfleet lab up --name no-such-lab/,
    ],
  ])('%j is a usage error (exit 2, nothing created)', async (argv, message) => {
    const result = await ibfleet(argv);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(message);
  });
});
