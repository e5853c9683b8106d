import { createHash } from 'node:crypto';

/** Hex SHA-256 of a file's exact bytes, as `sha256sum` prints it on the host. */
export function sha256(content: string): string {
  return createHash('sha256').update(content, 'utf8').digest('hex');
}
