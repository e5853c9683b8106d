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
