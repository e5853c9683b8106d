import * as crypto from 'node:crypto';

/** One-shot hashing (Node ≥ 20.12) skips a Hash object per call; a fleet run hashes every file of every host twice. */
const oneShot = (crypto as { hash?: (algorithm: string, data: string, encoding: 'hex') => string }).hash;

/** Hex SHA-256 of a file's exact bytes, as `sha256sum` prints it on the host. */
export function sha256(content: string): string {
  return oneShot
    ? oneShot('sha256', content, 'hex')
    : crypto.createHash('sha256').update(content, 'utf8').digest('hex');
}
