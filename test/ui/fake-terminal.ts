import { EventEmitter } from 'node:events';
import { PassThrough } from 'node:stream';

/** A terminal-shaped stdout for createTui: records every write, has a size, says it is a TTY. */
export class FakeTerminal extends EventEmitter {
  readonly isTTY = true;
  columns: number;
  rows: number;
  readonly writes: string[] = [];

  constructor(columns = 100, rows = 24) {
    super();
    this.columns = columns;
    this.rows = rows;
  }

  write(chunk: string): boolean {
    this.writes.push(String(chunk));
    return true;
  }

  get output(): string {
    return this.writes.join('');
  }
}

export function fakeIo(env: Record<string, string | undefined> = {}, size: { columns?: number; rows?: number } = {}) {
  const stdout = new FakeTerminal(size.columns, size.rows);
  const stderr = new FakeTerminal(size.columns, size.rows);
  return { stdout, stderr, stdin: new PassThrough(), env };
}
