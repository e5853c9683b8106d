/**
 * SSH identities: the private key files a host's ssh config names, parsed once per run and made
 * cheap to sign with, or the reason one cannot be used (missing, encrypted, not a key).
 */
import { createPrivateKey, type KeyObject } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { ParsedKey } from 'ssh2';
import { parseKey } from './ssh2-parts.js';

export interface Identity {
  readonly file: string;
  /** Parsed once per run, not once per connection. */
  readonly key: ParsedKey | undefined;
  /** Why it cannot be used (missing, encrypted, unreadable). */
  readonly problem: string | undefined;
}

/**
 * ssh2 keeps a parsed private key as PEM text and hands that text to crypto.sign, so OpenSSL decodes
 * the PEM again for every signature — about 0.5 ms, once per connection, which is most of what
 * authentication costs a fleet run. Given a KeyObject, crypto.sign skips the decoding. The swap is
 * made only if the key still signs verifiably afterwards; otherwise the key stays as ssh2 made it.
 */
function withDecodedSigningKey(key: ParsedKey): ParsedKey {
  const slot = Object.getOwnPropertySymbols(key).find((sym) => sym.description === 'Private key PEM');
  const record = key as unknown as Record<symbol, unknown>;
  const pem = slot ? record[slot] : undefined;
  if (!slot || typeof pem !== 'string') return key;
  let decoded: KeyObject;
  try {
    decoded = createPrivateKey(pem);
  } catch {
    return key;
  }
  const probe = Buffer.from('ibfleet signing key check');
  const before = key.sign(probe);
  record[slot] = decoded;
  const after = key.sign(probe);
  const ok = Buffer.isBuffer(before) && Buffer.isBuffer(after) && key.verify(probe, after) === true;
  if (!ok) record[slot] = pem;
  return key;
}

/** Loads identity files on first use; each file is read and parsed once per run, not once per connection. */
export function identityLoader(): (file: string) => Promise<Identity> {
  const identities = new Map<string, Promise<Identity>>();
  return (file) => {
    let found = identities.get(file);
    if (!found) {
      found = readFile(file).then(
        (data): Identity => {
          const parsed = parseKey(data);
          if (parsed instanceof Error) {
            const encrypted = /encrypted/i.test(parsed.message);
            return { file, key: undefined, problem: encrypted ? 'encrypted (load it into ssh-agent)' : parsed.message };
          }
          const key = Array.isArray(parsed) ? parsed[0] : parsed;
          if (!key || !key.isPrivateKey()) return { file, key: undefined, problem: 'not a private key' };
          return { file, key: withDecodedSigningKey(key), problem: undefined };
        },
        (error: NodeJS.ErrnoException): Identity => ({
          file,
          key: undefined,
          problem: error.code === 'ENOENT' ? 'missing' : error.message,
        }),
      );
      identities.set(file, found);
    }
    return found;
  };
}
