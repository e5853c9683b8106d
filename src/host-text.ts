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
 * visible, one column wide like the character it replaces, and never a line break.
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
// eslint-disable-next-line no-control-regex
export const UNPRINTABLE = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/** ESC-introduced sequences: CSI (`ESC [ … final`), OSC (`ESC ] … BEL` or `ESC ] … ESC \`), and two-character escapes. */
// eslint-disable-next-line no-control-regex
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
  return chars.length <= max ? line : `${chars.slice(0, max - 1).join('').trimEnd()}…`;
}
