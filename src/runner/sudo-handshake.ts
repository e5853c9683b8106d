/**
 * How a channel gets from the SSH user to a root shell through sudo, and when the -K password is
 * written to it: only in answer to sudo's own prompt (`sudo -S -p PROMPT`), whose text carries a
 * nonce drawn for this channel alone, only once, and only on a session whose host key was
 * verified — a Session exists only after ssh2's hostVerifier accepted the key and authentication
 * succeeded, so nothing is ever written to a host that has not proved its identity.
 *
 * Threat model. Everything before sudo runs as the SSH user: sshd starts the user's login shell,
 * and bash reads ~/.bashrc even for a command when it sees it was started by sshd. A hostile host,
 * or a compromised account, can therefore print anything on stdout and stderr and read the
 * channel's input before sudo starts. Against that:
 *  - Text that looks like a prompt — ibfleet's old fixed marker `[ibfleet-sudo-password-7f3a]`,
 *    `[sudo] password for …`, anything printed in advance — gets nothing: only the exact nonce
 *    prompt, as the last thing on stderr (sudo then waits for input), is answered.
 *  - The nonce is not on the command line sshd runs (which a start-up file reads in
 *    $BASH_EXECUTION_STRING, and anyone reads in ps): it is the first line of the channel's
 *    input, read by the small sh wrapper that then execs sudo. A start-up file that reads a line
 *    takes the nonce instead: sudo never starts, the host times out, and what it read is useless.
 *  - Not covered, and not coverable from the controller: start-up code written against ibfleet
 *    itself — reading the nonce line and printing the prompt, or defining a `sudo` function —
 *    sees exactly what sudo would, like any password typed into sudo over SSH by hand. Do not
 *    give your sudo password to an account whose start-up files you do not trust: log in as root
 *    with a key, or allow that account NOPASSWD for ibfleet. The same password goes to every
 *    selected host.
 */
import { randomBytes } from 'node:crypto';
import { shellQuote } from '../script/shell.js';

const promptText = (nonce: string) => `[ibfleet sudo ${nonce}] `;
const readyText = (nonce: string) => `ibfleet-sudo-ready-${nonce}`;

/**
 * The command sshd runs for a sudo channel: read the nonce from the first input line, then sudo
 * with that prompt, then a root shell that says it is ready and reads the script. Plain words
 * any login shell (sh, bash, csh, fish) passes to `sh -c` unchanged.
 */
export const SUDO_COMMAND = `sh -c ${shellQuote(`IFS= read -r n || exit 70; exec sudo -S -p "${promptText('$n')}" sh -c "echo ${readyText('$n')}; exec sh -s"`)}`;

export interface SudoHandshake {
  /** Written first: the wrapper reads it before starting sudo. */
  readonly firstInput: string;
  /** sudo's prompt on stderr, answered with the password. */
  readonly prompt: string;
  /** The root shell's first stdout line; the script is sent after it. */
  readonly readyLine: string;
}

export function newSudoHandshake(nonce: string = randomBytes(16).toString('hex')): SudoHandshake {
  return { firstInput: `${nonce}\n`, prompt: promptText(nonce), readyLine: `${readyText(nonce)}\n` };
}
