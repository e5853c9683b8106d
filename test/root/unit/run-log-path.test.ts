/**
 * `--log FILE` refuses what only root can plant for the test (issue 22, item 2): a link another
 * user planted in a sticky directory, another user's file, and a directory reached through another
 * user's link — exit 2 with the reason, and what it points to left as it was. The refusals any user
 * can plant: test/unit/run-log-path.test.ts.
 */
import { chownSync, lchownSync, mkdirSync, chmodSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, it } from 'vitest';
import { PRECIOUS, refusalKit, type RefusalCase } from '../../helpers/run-log-refusal.js';

const IS_ROOT = process.getuid?.() === 0;
if (!IS_ROOT) console.warn('NOTE: test/root/unit/run-log-path.test.ts skipped: files of another uid need root to make');
const OTHER_UID = 65534;
const scratch = mkdtempSync(join(tmpdir(), 'ibfleet-logpath-root-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
const { victim, refuses } = refusalKit(scratch);

describe.skipIf(!IS_ROOT)('opening the run log (--log FILE): what another user planted', () => {
  const cases: RefusalCase[] = [
    {
      name: 'a symbolic link another user planted in a sticky directory',
      plant: () => {
        const sticky = join(scratch, 'sticky');
        mkdirSync(sticky);
        chmodSync(sticky, 0o1777);
        const target = victim('shadow-2');
        symlinkSync(target, join(sticky, 'run.log'));
        lchownSync(join(sticky, 'run.log'), OTHER_UID, OTHER_UID);
        return { file: join(sticky, 'run.log'), victim: target };
      },
      says: /sticky\/run\.log is a symbolic link; refusing to write through it/,
    },
    {
      name: 'a file of another user',
      plant: () => {
        const target = victim('theirs.log');
        chownSync(target, OTHER_UID, OTHER_UID);
        return { file: target, victim: target };
      },
      says: new RegExp(`theirs\\.log belongs to another user \\(uid ${OTHER_UID}\\); refusing to write over it`),
    },
    {
      name: 'a file in a directory reached through a symbolic link of another user',
      plant: () => {
        const real = join(scratch, 'real-dir');
        mkdirSync(real);
        const target = join(real, 'passwd');
        writeFileSync(target, PRECIOUS, { mode: 0o644 });
        symlinkSync(real, join(scratch, 'their-dir'));
        lchownSync(join(scratch, 'their-dir'), OTHER_UID, OTHER_UID);
        return { file: join(scratch, 'their-dir', 'passwd'), victim: target };
      },
      says: new RegExp(
        `their-dir is a symbolic link owned by another user \\(uid ${OTHER_UID}\\); refusing to follow it`,
      ),
    },
  ];
  it.each(cases)('refuses $name, leaving it as it was', refuses);
});
