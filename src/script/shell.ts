/** Quoting for POSIX sh: every inventory value that reaches a script or a remote command goes through here. */

const SAFE_WORD = /^[A-Za-z0-9_./:=@%+,-]+$/;

/** `ib0` stays `ib0`; anything else is single-quoted with embedded quotes escaped. */
export function shellQuote(value: string | number): string {
  const text = String(value);
  if (text !== '' && SAFE_WORD.test(text)) return text;
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

export function shellCommand(argv: readonly (string | number)[]): string {
  return argv.map(shellQuote).join(' ');
}

/**
 * A script sent on stdin to `sh -s` runs nothing unless it arrived whole. sh reads and runs its
 * input command by command, so a connection that dies mid-transfer would leave the shell running
 * the part it received. Here the whole body is one function definition — one compound command the
 * shell parses completely, to its closing brace, before it runs anything — and the last line
 * calls it: a cut anywhere before that call leaves a syntax error or a name not found. `entry`
 * must be a name none of whose prefixes is a command (a cut inside the last line runs that
 * prefix) nor another script's entry (a conversation defines several in one shell): hence the
 * `__ibfleet_` start and the `_main` end. `body`: its text, or its lines; `definitions`, the shell
 * functions the body calls (host-functions.ts), go first, inside the function too.
 */
export function receivedWhole(entry: ScriptEntry, body: string | readonly string[], definitions = ''): string {
  // One join makes the script: a change is ~75 KB (twice that in memory: its comments are not all
  // Latin-1), and text joined again from a body already joined is copied whole a second time.
  const lines = typeof body === 'string' ? [body] : [...body];
  while (lines.length > 0) {
    const last = withoutTrailingNewlines(lines[lines.length - 1]!);
    if (last !== '') {
      lines[lines.length - 1] = last;
      break;
    }
    lines.pop();
  }
  const whole = definitions ? [definitions, ...lines] : lines.length > 0 ? lines : [''];
  return [`${entry}() {`, ...whole, '}', entry, ''].join('\n');
}

/** `text` without its trailing newlines: what `/\n+$/` removes, without a regular expression that tries every newline of a 50 KB script. */
function withoutTrailingNewlines(text: string): string {
  let end = text.length;
  while (end > 0 && text.charCodeAt(end - 1) === 10) end--;
  return text.slice(0, end);
}

/** The entry functions of the scripts ibfleet sends; none is a prefix of another. */
export const SCRIPT_ENTRIES = [
  '__ibfleet_probe_main',
  '__ibfleet_apply_main',
  '__ibfleet_rollback_main',
  '__ibfleet_restore_main',
  '__ibfleet_settle_main',
  '__ibfleet_caps_main',
  '__ibfleet_ping_main',
  '__ibfleet_rping_server_main',
  '__ibfleet_rping_client_main',
] as const;
export type ScriptEntry = (typeof SCRIPT_ENTRIES)[number];

/** A line a script prints as it is (`printf '%s\n' 'LINE'`): always single-quoted, so no word of it is the printing shell's. */
export function printLine(line: string): string {
  return `printf '%s\\n' '${line.replace(/'/g, `'\\''`)}'`;
}
