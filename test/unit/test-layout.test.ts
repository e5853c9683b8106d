/**
 * A test that needs root says so by where it lives: test/e2e/ or test/root/ (the `root` project of
 * vitest.config.ts). Any other test file runs in `npm run test:unit` as a user who is not root, so
 * none may ask whether it is root, bring up a lab or a network namespace, or skip itself for want of
 * root — it would skip there, unseen, or fail.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PACKAGE_ROOT } from '../../src/package-root.js';

const NEEDS_ROOT = /\bgetuid\b|\bIS_ROOT\b|\buseLab\(|\bcreateFabric\(|\bnoteIfNotRoot\(|\blabUp\(/;
const ROOT_DIRS = ['test/e2e/', 'test/root/'];

function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return testFiles(path);
    return /\.test\.tsx?$/.test(entry.name) ? [relative(PACKAGE_ROOT, path)] : [];
  });
}

describe('where a test lives says whether it needs root', () => {
  const files = testFiles(join(PACKAGE_ROOT, 'test'));

  it('finds the test files, root ones among them', () => {
    expect(files.length).toBeGreaterThan(100);
    expect(files.filter((f) => ROOT_DIRS.some((d) => f.startsWith(d))).length).toBeGreaterThan(20);
  });

  it('no test file outside test/e2e/ and test/root/ needs root or a lab', () => {
    const outside = files.filter((f) => !ROOT_DIRS.some((d) => f.startsWith(d)));
    expect(outside.filter((f) => NEEDS_ROOT.test(readFileSync(join(PACKAGE_ROOT, f), 'utf8')))).toEqual([]);
  });
});
