/**
 * Text a host sent — its output, its error messages, what it says about itself (os-release, its
 * hostname) — is hostile: it may carry characters that move a terminal's cursor, retitle or recolour
 * it, reorder what a reader sees (bidi controls: `gnp.exe` shown for `exe.png`), or start a new
 * line where no line was meant (a YAML 1.1 reader such as PyYAML ends a line at NEL, U+2028 and
 * U+2029, so a comment holding one grows a host entry behind it). This module is the one rule
 * for such text, shared by every layer that shows or stores it: the displays and the run log
 * (src/ui/text/sanitize.ts), the --json writer, and what onboard writes into an inventory. Pure.
 *
 * The rule: complete escape sequences (colour, cursor, title) are dropped — tools print them, they
 * are formatting and not content — and every other character of the classes below becomes `?`:
 * visible, one column wide like the character it replaces, and never a line break. Its length is
 * bounded too: a display shows a few KiB of one message or output line (clipHostText), the run
 * log keeps it whole.
 */

/**
 * What is never printed as it came. Tab (U+0009) is not here: a display decides what a tab
 * becomes (kept, expanded, a space); LF is here, since one line of a display never holds two.
 *  - C0 controls U+0000–U+001F (but tab) and DEL U+007F;
 *  - C1 controls U+0080–U+009F: NEL (U+0085, a line break to YAML 1.1) and CSI (U+009B, which
 *    8-bit terminals read as ESC [);
 *  - U+2028 LINE SEPARATOR and U+2029 PARAGRAPH SEPARATOR (line breaks to YAML 1.1 and JavaScript);
 *  - the bidi controls: embeddings and overrides U+202A–U+202E, isolates U+2066–U+2069, and the
 *    marks U+200E LRM, U+200F RLM and U+061C ALM, which reorder the text around them.
 */
export const UNPRINTABLE =
  /[\u0000-\u0008\u000a-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/** ESC-introduced sequences: CSI (`ESC [ … final`), OSC (`ESC ] … BEL` or `ESC ] … ESC \`), and two-character escapes. */
const ESCAPE_SEQUENCE = /\u001b\[[0-9;?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)|\u001b[@-Z\\-_]/g;

/** The replacement for each unprintable character. */
export const REPLACEMENT = '?';

/**
 * `text` with escape sequences dropped and every UNPRINTABLE character shown as `?`; tabs become
 * `tab` (kept by default). The one function every display, the run log and the inventory writer use.
 */
export function printable(text: string, tab = '\t'): string {
  const stripped = text.replace(ESCAPE_SEQUENCE, '');
  return (tab === '\t' ? stripped : stripped.replace(/\t/g, tab)).replace(UNPRINTABLE, REPLACEMENT);
}

/** How many characters of the OS name a host reports are kept (os-release's PRETTY_NAME). */
export const OS_NAME_MAX = 80;

/**
 * What a host says about itself (its OS name), reduced to one short line of printable text before
 * it goes anywhere — an inventory comment, a message, --json: printable(), runs of white space as
 * one space, and at most `max` characters, the last of them `…` when it was longer. Never throws:
 * whatever the host says, onboarding goes on with the reduced text.
 */
export function printableLine(text: string, max: number): string {
  const line = printable(text, ' ').replace(/\s+/g, ' ').trim();
  const chars = [...line];
  return chars.length <= max
    ? line
    : `${chars
        .slice(0, max - 1)
        .join('')
        .trimEnd()}…`;
}

/**
 * The most a display shows of one piece of a host's text: an error message, or one line of the
 * output tail under it. A failing host may print up to 1 MiB (runner/transport.ts, OUTPUT_KEEP)
 * on a single line, and shown whole that is a megabyte per host on the terminal, three times
 * over (its row, the tail, the recap). The run log writes the whole text; the terminal gets its
 * start and where it was cut.
 */
export const SHOWN_HOST_TEXT = 2048;
/** One line of a host's output tail on a terminal: the tail has up to 8 lines. */
export const SHOWN_TAIL_LINE = 512;

/** `text`, or its first `max` characters followed by where it was cut and where the rest is. */
export function clipHostText(text: string, max = SHOWN_HOST_TEXT): string {
  if (text.length <= max) return text;
  // Never half a surrogate pair: the cut lands before it.
  const end = /[\uD800-\uDBFF]/.test(text[max - 1]!) ? max - 1 : max;
  return `${text.slice(0, end)} … [cut after ${end} of ${text.length} characters: the run log has all of it]`;
}

/** Every line of a host's output tail through clipHostText, each at most `perLine` characters. */
export function clipHostLines(text: string, perLine = SHOWN_TAIL_LINE): string {
  return text.length <= perLine
    ? text
    : text
        .split('\n')
        .map((line) => clipHostText(line, perLine))
        .join('\n');
}
