/**
 * What a display writes to: the process's stdout or stderr, or a test's fake of them. Displays own
 * this shape (the commands' Io hands them streams that fit it), so the plain logger, the TUI and
 * the tests agree on one writer.
 */
export interface OutStream {
  write(chunk: string): unknown;
  readonly isTTY?: boolean;
  readonly columns?: number;
  readonly rows?: number;
}
