/**
 * What remote hosts print is untrusted: escape sequences in it could move the cursor, recolour or
 * retitle the terminal (under Ink's feet in the TUI, anywhere in plain output on a terminal). Every
 * display shows a host's text through these. Pure.
 */

// eslint-disable-next-line no-control-regex
const ANSI_SEQUENCE = /\u001b\[[0-9;?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)|\u001b[@-Z\\-_]/g;
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

/**
 * Escape sequences stripped, other control characters shown as `?`. Tabs are expanded for the TUI,
 * which must know every line's width; plain lines keep them (a terminal only moves to the next stop).
 */
export function sanitizeLine(text: string, tabs: 'expand' | 'keep' = 'expand'): string {
  const stripped = text.replace(ANSI_SEQUENCE, '');
  return (tabs === 'expand' ? stripped.replace(/\t/g, '  ') : stripped).replace(/\r$/, '').replace(CONTROL, '?');
}

/** Every line of a block of text, sanitised, without the block's trailing blank lines. */
export function sanitizeLines(text: string, tabs: 'expand' | 'keep' = 'expand'): string[] {
  return text.trimEnd().split('\n').map((line) => sanitizeLine(line, tabs));
}

/** Collapses any text to one line for a row: first non-empty line, whitespace squeezed. */
export function oneLine(text: string): string {
  const line = text.split('\n').map((l) => sanitizeLine(l).trim()).find((l) => l !== '') ?? '';
  return line.replace(/\s+/g, ' ');
}

/** The last `max` non-blank lines of a host's error output, sanitised. */
export function tailLines(text: string, max: number): string[] {
  const lines = text.split('\n').map((l) => sanitizeLine(l).trimEnd()).filter((l) => l.trim() !== '');
  return lines.slice(-max);
}
