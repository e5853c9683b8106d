/**
 * Asking for a secret: hidden on a terminal, one line from stdin otherwise. Never echoed or logged.
 * Giving up is an interrupt like any other (exit 130): Ctrl-C, which a terminal in raw mode hands
 * over as the character ETX instead of a signal, Ctrl-C as a signal (`interrupt`), or an input that
 * ends before anything was typed.
 */
import { InterruptedError } from '../errors.js';
import type { Io } from './context.js';

const ETX = '\u0003';
/** Ctrl-D in raw mode: the end of input, as the terminal would say it outside raw mode. */
const EOT = '\u0004';

export function askSecret(io: Io, prompt: string, interrupt?: AbortSignal): Promise<string> {
  const stdin = io.stdin as NodeJS.ReadStream;
  io.stderr.write(prompt);
  return new Promise((resolve, reject) => {
    let value = '';
    const tty = stdin.isTTY === true && typeof stdin.setRawMode === 'function';
    if (tty) stdin.setRawMode(true);
    stdin.setEncoding('utf8');
    const finish = (error?: Error) => {
      stdin.removeListener('data', onData);
      stdin.removeListener('end', onEnd);
      interrupt?.removeEventListener('abort', onInterrupt);
      if (tty) stdin.setRawMode(false);
      stdin.pause();
      io.stderr.write('\n');
      if (error) reject(error);
      else resolve(value);
    };
    // A piped secret without a final newline is still a secret; an input with nothing in it is not.
    const endOfInput = () => finish(value === '' ? new InterruptedError() : undefined);
    const onData = (chunk: string) => {
      for (const ch of chunk) {
        if (ch === '\r' || ch === '\n') return finish();
        if (ch === ETX) return finish(new InterruptedError());
        if (ch === EOT) return endOfInput();
        if (ch === '\u007f' || ch === '\b') value = value.slice(0, -1);
        else value += ch;
      }
    };
    const onEnd = () => endOfInput();
    const onInterrupt = () => finish(new InterruptedError());
    if (interrupt?.aborted) return onInterrupt();
    interrupt?.addEventListener('abort', onInterrupt, { once: true });
    stdin.on('data', onData);
    stdin.on('end', onEnd);
    stdin.resume();
  });
}
