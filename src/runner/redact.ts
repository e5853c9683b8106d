/**
 * The -K sudo password never leaves the transport inside anything a host sent. A host can print
 * it back — a login file that reads a line and echoes it, a sudo look-alike's error text — and
 * everything a host prints becomes output, error messages, --json, the TUI and the run log. So it
 * is taken out once, where host text enters the program (ssh-session.ts's collect and the
 * connection errors of ssh-transport.ts), and every layer above only ever sees REDACTED.
 *
 * A host's output arrives in chunks, and a chunk may end inside the password: SecretFilter holds
 * back the longest tail that could be the start of a secret until the next chunk shows whether it
 * is, so no split — at any character — lets part of the password through. At the end of the
 * stream a held tail is let go as it is: it is not the password (that never came whole), and a
 * host that wants to leak part of it can print it any other way too.
 *
 * What this cannot do: recognise the password transformed (reversed, encoded). And a password
 * that is also a word hosts print anyway (a word of the OS name, a number) is removed there too,
 * which can garble what ibfleet reads; docs/security.md says to choose one no host prints.
 */

export const REDACTED = '[secret removed]';

/** Secrets that can be looked for: the empty string is no secret (it is in every text). */
function active(secrets: readonly string[]): string[] {
  return secrets.filter((s) => s !== '');
}

/** The first place in `text` at or after `from` where a secret starts (the longest, when several start there). */
function firstSecret(
  text: string,
  from: number,
  secrets: readonly string[],
): { at: number; length: number } | undefined {
  let found: { at: number; length: number } | undefined;
  for (const secret of secrets) {
    const at = text.indexOf(secret, from);
    if (at < 0) continue;
    if (!found || at < found.at || (at === found.at && secret.length > found.length))
      found = { at, length: secret.length };
  }
  return found;
}

/** Every occurrence of each secret in `text` replaced with REDACTED. */
export function redactText(text: string, secrets: readonly string[]): string {
  return redactUpTo(text, active(secrets), false).safe;
}

/**
 * `text` with its secrets replaced; with `holdTail`, cut where a tail begins that could still grow
 * into a secret (`held`, to be put before the next chunk).
 */
function redactUpTo(text: string, secrets: readonly string[], holdTail: boolean): { safe: string; held: string } {
  let safe = '';
  let from = 0;
  for (let next = firstSecret(text, from, secrets); next; next = firstSecret(text, from, secrets)) {
    safe += `${text.slice(from, next.at)}${REDACTED}`;
    from = next.at + next.length;
  }
  const cut = holdTail ? heldFrom(text, from, secrets) : text.length;
  return { safe: safe + text.slice(from, cut), held: text.slice(cut) };
}

/** Where the longest tail of `text` (after `from`) that is the start of a secret begins; text.length when there is none. */
function heldFrom(text: string, from: number, secrets: readonly string[]): number {
  const longest = Math.max(0, ...secrets.map((s) => s.length));
  for (let at = Math.max(from, text.length - longest + 1); at < text.length; at++) {
    const tail = text.slice(at);
    if (secrets.some((s) => s.startsWith(tail))) return at;
  }
  return text.length;
}

/**
 * One stream of a host's text, secrets removed as it arrives. `secrets` is asked at every chunk:
 * the password becomes known only once it is asked for, and no host can print it before it was
 * sent — after it was asked for.
 */
export class SecretFilter {
  private held = '';
  constructor(private readonly secrets: () => readonly string[]) {}

  /** The part of what came so far that can be passed on. */
  push(chunk: string): string {
    return this.take(this.held + chunk, true);
  }

  /** The end of the stream: whatever was held back. */
  end(): string {
    return this.take(this.held, false);
  }

  private take(text: string, holdTail: boolean): string {
    const { safe, held } = redactUpTo(text, active(this.secrets()), holdTail);
    this.held = held;
    return safe;
  }
}
