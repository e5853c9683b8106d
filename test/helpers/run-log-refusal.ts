/**
 * The harness of the run log's refusals (`--log FILE`): a file standing in for /etc/shadow, the run
 * log opened as a command opens it, and the check that a refusal is ibfleet's UsageError and leaves
 * the file — and what it points to — as it was. Shared by test/unit/run-log-path.test.ts and, for the
 * cases that need root to plant, test/root/unit/run-log-path.test.ts.
 */
import { chmodSync, lstatSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { UsageError } from '../../src/errors.js';
import { openRunLog } from '../../src/ui/run-log-file.js';

export const PRECIOUS = 'precious: not a run log\n';

export interface RefusalCase {
  readonly name: string;
  /** Makes the file to give as --log, and the file it must not touch. */
  readonly plant: () => { file: string; victim?: string };
  readonly says: RegExp;
}

export function refusalKit(scratch: string) {
  /** A file standing in for /etc/shadow: root's, 0640, with content that must survive. */
  const victim = (name: string): string => {
    const path = join(scratch, name);
    writeFileSync(path, PRECIOUS, { mode: 0o640 });
    chmodSync(path, 0o640);
    return path;
  };
  const open = (file: string) => openRunLog({ env: {}, cwd: scratch, file, command: 'status', secrets: () => [] });
  const refuses = ({ plant, says }: RefusalCase) => {
    const { file, victim: target } = plant();
    const before = lstatSync(file);
    const victimBefore = target ? statSync(target) : undefined;
    let thrown: unknown;
    try {
      open(file)?.close();
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(UsageError);
    expect((thrown as Error).message).toMatch(says);
    const after = lstatSync(file);
    expect([after.ino, after.mode, after.uid, after.size]).toEqual([before.ino, before.mode, before.uid, before.size]);
    if (target) {
      expect(readFileSync(target, 'utf8')).toBe(PRECIOUS);
      expect([statSync(target).mode, statSync(target).uid]).toEqual([victimBefore!.mode, victimBefore!.uid]);
    }
    expect(lstatSync(join(scratch, 'created-through-link'), { throwIfNoEntry: false })).toBeUndefined();
  };
  return { victim, open, refuses };
}
