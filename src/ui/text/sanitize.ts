/**
 * What remote hosts print is untrusted: escape sequences in it could move the cursor, recolour or
 * retitle the terminal (under Ink's feet in the TUI, anywhere in plain output on a terminal), and
 * bidi controls could make a line read as something it is not. Every display and the run log show
 * a host's text through these, which all apply the one rule of src/host-text.ts (printable()):
 * escape sequences dropped, every control, C1, line-separator and bidi character shown as `?`.
 * Pure.
 */
import { printable, UNPRINTABLE } from '../../host-text.js';

/**
 * One line of a host's text as a display shows it: a CRLF's `\r` dropped, then printable(). Tabs
 * are expanded for the TUI, which must know every line's width; plain lines and the run log keep
 * them (a terminal only moves to the next stop). A line break inside `text` shows as `?`: one line
 * of output never becomes two (a host cannot print a line that passes for one of ibfleet's).
 */
export function sanitizeLine(text: string, tabs: 'expand' | 'keep' = 'expand'): string {
  return printable(text.replace(/\r$/, ''), tabs === 'expand' ? '  ' : '\t');
}

/** Every line of a block of text, sanitised, without the block's trailing blank lines. */
export function sanitizeLines(text: string, tabs: 'expand' | 'keep' = 'expand'): string[] {
  return text
    .trimEnd()
    .split('\n')
    .map((line) => sanitizeLine(line, tabs));
}

/** Collapses any text to one line for a row: first non-empty line, whitespace squeezed. */
export function oneLine(text: string): string {
  const line =
    text
      .split('\n')
      .map((l) => sanitizeLine(l).trim())
      .find((l) => l !== '') ?? '';
  return line.replace(/\s+/g, ' ');
}

/** The last `max` non-blank lines of a host's error output, sanitised. */
export function tailLines(text: string, max: number): string[] {
  const lines = text
    .split('\n')
    .map((l) => sanitizeLine(l).trimEnd())
    .filter((l) => l.trim() !== '');
  return lines.slice(-max);
}

/**
 * UNPRINTABLE without C0: a C0 character in JSON.stringify's output is one of its own line breaks
 * (strings have theirs escaped), and matching each one called the replacer once a line — 1.6 s of
 * a 25 MB verify document (55 680 cells).
 */
const UNPRINTABLE_BEYOND_C0 = new RegExp(UNPRINTABLE.source.replace('\\u0000-\\u0008\\u000a-\\u001f', ''), 'g');

/**
 * A --json document as text. It carries what hosts said exactly — a program reading it gets the
 * host's own characters, to compare or to store — but never as raw bytes a terminal acts on:
 * JSON.stringify already writes C0 controls as `\u00XX`, and here every other UNPRINTABLE
 * character (DEL, C1 such as U+009B, U+2028/2029, bidi controls) is written as its `\uXXXX` escape
 * too. Valid JSON that parses to the same value, safe to print (`ibfleet status --json` in a
 * terminal). Those characters only occur inside JSON strings, where the escape means the same.
 */
export function jsonText(value: unknown): string {
  // A line break of JSON.stringify's stays one, should the pattern ever match C0 again.
  return (JSON.stringify(value, null, 2) ?? 'null').replace(UNPRINTABLE_BEYOND_C0, (c) =>
    c < ' ' ? c : `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}
