import { fileURLToPath } from 'node:url';

/** The repository / package root, whether running from src/ (tests) or dist/ (built). */
export const PACKAGE_ROOT = fileURLToPath(new URL('..', import.meta.url));
