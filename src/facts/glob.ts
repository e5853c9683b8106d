/**
 * Shell patterns as the managers match interface names with them — fnmatch(3) without flags, as
 * NetworkManager's match.interface-name, netplan's `match: name:` and networkd's `Name=` do:
 * `*`, `?`, `[…]` (negated by `!` or `^`), `\` taking the next character as it is. Pure.
 */

function escapeRe(c: string): string {
  return c.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');
}

/** The pattern as an anchored RegExp. */
export function globRegExp(pattern: string): RegExp {
  let out = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '\\' && i + 1 < pattern.length) out += escapeRe(pattern[++i]!);
    else if (c === '*') out += '[\\s\\S]*';
    else if (c === '?') out += '[\\s\\S]';
    else if (c === '[' && pattern.indexOf(']', i + 2) >= 0) {
      const end = pattern.indexOf(']', i + 2);
      const body = pattern.slice(i + 1, end);
      const negated = body.startsWith('!') || body.startsWith('^');
      out += `[${negated ? '^' : ''}${(negated ? body.slice(1) : body).replace(/[\\\]^]/g, '\\$&')}]`;
      i = end;
    } else out += escapeRe(c);
  }
  return new RegExp(`^${out}$`);
}

export function globMatches(pattern: string, name: string): boolean {
  return globRegExp(pattern).test(name);
}
