/**
 * known_hosts as OpenSSH reads it: plain and hashed (|1|salt|hash) host patterns, wildcards and
 * negation, [host]:port for other ports, @revoked and @cert-authority markers. Checking is pure;
 * reading and appending the file is done by the caller.
 */
import { createHash, createHmac } from 'node:crypto';

export interface KnownHostEntry {
  readonly line: number;
  readonly marker: 'revoked' | 'cert-authority' | undefined;
  readonly patterns: string;
  readonly keyType: string;
  /** The decoded public key blob (SSH wire format), as ssh2 hands it to the host verifier. */
  readonly key: Buffer;
}

export type HostKeyVerdict =
  | { readonly kind: 'known'; readonly line: number }
  | { readonly kind: 'unknown' }
  /** Keys of this host are known, but only of other types. */
  | { readonly kind: 'other-types'; readonly knownTypes: readonly string[] }
  | { readonly kind: 'changed'; readonly lines: readonly number[] }
  | { readonly kind: 'revoked'; readonly line: number };

export function parseKnownHosts(text: string): KnownHostEntry[] {
  const entries: KnownHostEntry[] = [];
  text.split('\n').forEach((raw, i) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const fields = line.split(/\s+/);
    let marker: KnownHostEntry['marker'];
    if (fields[0] === '@revoked' || fields[0] === '@cert-authority') {
      marker = fields[0] === '@revoked' ? 'revoked' : 'cert-authority';
      fields.shift();
    }
    const [patterns, keyType, keyText] = fields;
    if (!patterns || !keyType || !keyText) return;
    const key = Buffer.from(keyText, 'base64');
    if (key.length === 0) return;
    entries.push({ line: i + 1, marker, patterns, keyType, key });
  });
  return entries;
}

/** The name OpenSSH looks up: `host` for port 22, `[host]:port` otherwise. */
export function knownHostsName(host: string, port: number): string {
  return port === 22 ? host : `[${host}]:${port}`;
}

/** Does one host-pattern field (comma list, maybe hashed, wildcards, !negation) match `name`? */
export function patternsMatch(patterns: string, name: string): boolean {
  if (patterns.startsWith('|1|')) return hashedMatches(patterns, name);
  let matched = false;
  for (const pattern of patterns.split(',')) {
    const negated = pattern.startsWith('!');
    const body = negated ? pattern.slice(1) : pattern;
    if (wildcardMatch(body.toLowerCase(), name.toLowerCase())) {
      if (negated) return false;
      matched = true;
    }
  }
  return matched;
}

function hashedMatches(field: string, name: string): boolean {
  const [, , salt, hash] = field.split('|');
  if (!salt || !hash) return false;
  const digest = createHmac('sha1', Buffer.from(salt, 'base64')).update(name).digest('base64');
  return digest === hash;
}

function wildcardMatch(pattern: string, text: string): boolean {
  if (!pattern.includes('*') && !pattern.includes('?')) return pattern === text;
  // Runs of * are one: a hostile or mistyped pattern of many stars must not make matching exponential.
  const re = new RegExp(
    `^${pattern
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replace(/\*+/g, '.*')
      .replace(/\?/g, '.')}$`,
  );
  return re.test(text);
}

/** The key type named inside an SSH public key blob (its first string). */
export function keyTypeOf(blob: Buffer): string {
  if (blob.length < 4) return 'unknown';
  const length = blob.readUInt32BE(0);
  return blob.subarray(4, 4 + length).toString('latin1');
}

export function checkHostKey(entries: readonly KnownHostEntry[], name: string, presented: Buffer): HostKeyVerdict {
  const type = keyTypeOf(presented);
  const forHost = entries.filter((e) => e.marker !== 'cert-authority' && patternsMatch(e.patterns, name));
  const revoked = entries.find((e) => e.marker === 'revoked' && e.key.equals(presented));
  if (revoked) return { kind: 'revoked', line: revoked.line };
  const plain = forHost.filter((e) => e.marker === undefined);
  const exact = plain.find((e) => e.key.equals(presented));
  if (exact) return { kind: 'known', line: exact.line };
  const sameType = plain.filter((e) => e.keyType === type);
  if (sameType.length > 0) return { kind: 'changed', lines: sameType.map((e) => e.line) };
  if (plain.length > 0) return { kind: 'other-types', knownTypes: [...new Set(plain.map((e) => e.keyType))] };
  return { kind: 'unknown' };
}

/** Key types known for `name`, so the handshake can ask for those first (as OpenSSH does). */
export function knownKeyTypes(entries: readonly KnownHostEntry[], name: string): string[] {
  return [
    ...new Set(entries.filter((e) => e.marker === undefined && patternsMatch(e.patterns, name)).map((e) => e.keyType)),
  ];
}

export function formatKnownHostsLine(name: string, blob: Buffer): string {
  return `${name} ${keyTypeOf(blob)} ${blob.toString('base64')}`;
}

/** SHA256:… fingerprint as OpenSSH prints it. */
export function fingerprint(blob: Buffer): string {
  return `SHA256:${createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}`;
}

/**
 * `text` (a known_hosts file) without the entries for `names` (as knownHostsName() writes them:
 * `addr`, `[addr]:port`), hashed ones included. A line listing other names too keeps them and
 * loses only these; wildcard patterns and comments are never touched, they are not one host's.
 */
export function withoutKnownHosts(text: string, names: readonly string[]): { text: string; removed: number } {
  const wanted = new Set(names.map((n) => n.toLowerCase()));
  let removed = 0;
  const lines = text.split('\n').flatMap((raw) => {
    const fields = raw.trim().split(/\s+/);
    const at = fields[0] === '@revoked' || fields[0] === '@cert-authority' ? 1 : 0;
    const patterns = fields[at];
    if (raw.trim().startsWith('#') || !patterns || fields.length < at + 3) return [raw];
    if (patterns.startsWith('|1|')) {
      if (!names.some((n) => patternsMatch(patterns, n))) return [raw];
      removed++;
      return [];
    }
    const list = patterns.split(',');
    const kept = list.filter((p) => !wanted.has(p.toLowerCase()));
    if (kept.length === list.length) return [raw];
    removed++;
    return kept.length === 0 ? [] : [raw.replace(patterns, kept.join(','))];
  });
  return { text: lines.join('\n'), removed };
}
