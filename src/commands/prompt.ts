/** Asking for a secret: hidden on a terminal, one line from stdin otherwise. Never echoed or logged. */
import type { Io } from './context.js';

export function askSecret(io: Io, prompt: string): Promise<string> {
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
      if (tty) stdin.setRawMode(false);
      stdin.pause();
      io.stderr.write('\n');
      if (error) reject(error);
      else resolve(value);
    };
    const onData = (chunk: string) => {
      for (const ch of chunk) {
        if (ch === '\r' || ch === '\n') return finish();
        if (ch === '\u0003') return finish(new Error('interrupted'));
        if (ch === '\u007f' || ch === '\b') value = value.slice(0, -1);
        else value += ch;
      }
    };
    const onEnd = () => finish();
    stdin.on('data', onData);
    stdin.on('end', onEnd);
    stdin.resume();
  });
}
