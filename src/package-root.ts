import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The repository / package root: the nearest directory above this module with a package.json,
 * whether it runs from src/ (tests), dist/ or a bundle chunk under dist/chunks/.
 */
function findPackageRoot(from: string): string {
  for (let dir = dirname(from); ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    if (dirname(dir) === dir) throw new Error(`ibfleet: no package.json above ${from}`);
  }
}

export const PACKAGE_ROOT = findPackageRoot(fileURLToPath(import.meta.url));
