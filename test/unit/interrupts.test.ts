/**
 * Giving up is an interrupt wherever it happens: at the -K sudo password prompt, Ctrl-C (ETX in a
 * terminal's raw mode) or an input that ends empty ends the command with 130 and "interrupted",
 * before any host is contacted — never as a defect report.
 */
import { PassThrough, Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { main } from '../../src/cli.js';
import type { Io } from '../../src/commands/context.js';
import { askSecret } from '../../src/commands/prompt.js';
import { InterruptedError } from '../../src/errors.js';
import { PACKAGE_ROOT } from '../../src/package-root.js';

function fakeIo(stdin: NodeJS.ReadableStream) {
  const out = { stdout: '', stderr: '' };
  const io: Io = {
    stdout: { write: (chunk: string) => (out.stdout += chunk), isTTY: false },
    stderr: { write: (chunk: string) => (out.stderr += chunk), isTTY: false },
    stdin,
    env: {},
    cwd: PACKAGE_ROOT,
    interruptSignal: () => new AbortController().signal,
  };
  return { io, out };
}

describe('the -K sudo password prompt', () => {
  for (const [what, typed] of [
    ['Ctrl-C (ETX)', ['sec', '\u0003']],
    ['Ctrl-D before anything was typed (EOT)', ['\u0004']],
    ['an input that ends empty', []],
  ] as const) {
    it(`${what}: exit 130, "ibfleet: interrupted", no host contacted`, async () => {
      const stdin = new PassThrough();
      const { io, out } = fakeIo(stdin);
      const code = main(['deploy', '--hosts', 'all', '-K', '--known-hosts', '/nonexistent/known_hosts'], io);
      for (const chunk of typed) stdin.write(chunk);
      stdin.end();
      expect(await code).toBe(130);
      expect(out.stderr).toBe('sudo password for the selected hosts: \nibfleet: interrupted\n');
      expect(out.stdout).toBe('');
    });
  }

  it('askSecret rejects with InterruptedError on ETX and on Ctrl-C as a signal, and keeps a piped secret that has no final newline', async () => {
    await expect(askSecret(fakeIo(Readable.from(['abc\u0003'])).io, '? ')).rejects.toBeInstanceOf(InterruptedError);
    await expect(askSecret(fakeIo(Readable.from(['s3cret'])).io, '? ')).resolves.toBe('s3cret');
    const stdin = new PassThrough();
    const ctrlC = new AbortController();
    const asked = askSecret(fakeIo(stdin).io, '? ', ctrlC.signal);
    ctrlC.abort();
    await expect(asked).rejects.toBeInstanceOf(InterruptedError);
    await expect(askSecret(fakeIo(Readable.from(['s3c', 'ret\nrest'])).io, '? ')).resolves.toBe('s3cret');
    await expect(askSecret(fakeIo(Readable.from(['s3cx\u007fret\n'])).io, '? ')).resolves.toBe('s3cret');
  });
});
