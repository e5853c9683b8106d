import * as crypto from 'node:crypto';

/** One-shot hashing (Node ≥ 20.12) skips a Hash object per call; a fleet run hashes every file of every host twice. */
const oneShot = (crypto as { hash?: (algorithm: string, data: string, encoding: 'hex') => string }).hash;

/**
 * Digests by the exact text: a host's files are checked when its change is planned and again after
 * it ran, and the routing program (~40 KB) is the same text on every host. Keyed on the content
 * itself, so never stale; bounded.
 */
const DIGESTS = new Map<string, string>();
const DIGESTS_MAX = 4096;

/** Hex SHA-256 of a file's exact bytes, as `sha256sum` prints it on the host. */
export function sha256(content: string): string {
  let digest = DIGESTS.get(content);
  if (digest === undefined) {
    digest = oneShot
      ? oneShot('sha256', content, 'hex')
      : crypto.createHash('sha256').update(content, 'utf8').digest('hex');
    if (DIGESTS.size >= DIGESTS_MAX) DIGESTS.clear();
    DIGESTS.set(content, digest);
  }
  return digest;
}
