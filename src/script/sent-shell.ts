/**
 * The shell of the scripts ibfleet sends (a change, the probe, the settle wait) that is the same for
 * every host: real files of the repository, host/sent/*.sh, each defining functions (or the
 * prelude every change starts with) that the renderers call with a host's words as arguments.
 * shellcheck reads the files themselves. Read once per name, from the package; what travels drops
 * the files' comment lines (every host receives them on every run), but keeps shellcheck's
 * directives, which the rendered script is checked with too. The files hold no multi-line string
 * and no here-document, so a line that starts with `#` is always a comment.
 *
 * Beside host-functions.ts: that one gives a script the steps' functions it calls, found by name;
 * these are the renderers' own fixed parts (a prelude with top-level commands among them), which a
 * renderer places where its script needs them, so each is sent whole and by name.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PACKAGE_ROOT } from '../package-root.js';

export const SENT_SHELL_DIR = join(PACKAGE_ROOT, 'host', 'sent');

export type SentShell =
  | 'host-lock'
  | 'settle'
  | 'change'
  | 'put-back'
  | 'give-back'
  | 'probe'
  | 'probe-host'
  | 'probe-managers'
  | 'verify'
  | 'capabilities'
  | 'rping-server'
  | 'self-restore';

const read = new Map<SentShell, string>();

/** host/sent/NAME.sh as a script sends it: its lines but comments and blank ones, ending in a newline. */
export function sentShell(name: SentShell): string {
  let text = read.get(name);
  if (text === undefined) {
    const lines = readFileSync(join(SENT_SHELL_DIR, `${name}.sh`), 'utf8').split('\n');
    text = lines
      .filter((l) => l.trim() !== '' && (!/^\s*#/.test(l) || /^\s*# shellcheck disable=/.test(l)))
      .map((l) => `${l}\n`)
      .join('');
    read.set(name, text);
  }
  return text;
}
