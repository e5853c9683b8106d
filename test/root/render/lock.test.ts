/**
 * The host lock, run for real with a private /run: only root can hold it, and the message for a
 * held lock names an ibfleet run only when the holder is one. Needs root (mount namespace).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { LOCKED_EXIT, renderPrelude } from '../../../src/render/apply-script.js';
import { LOCK_DIR, LOCK_PATH } from '../../../src/script/paths.js';

const CAN_RUN = process.getuid?.() === 0;
const work = mkdtempSync(join(tmpdir(), 'ibfleet-lock-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** Runs `scenario` (sh) in a mount namespace whose /run is a fresh tmpfs; $DEPLOY is a deploy's prelude that then sleeps. */
function inPrivateRun(scenario: string): { status: number; stdout: string; stderr: string } {
  const deploy = join(work, 'deploy.sh');
  writeFileSync(deploy, `${renderPrelude('deploy', 'lock-test')}\nsleep "\${1:-0}"\necho deploy-done\n`);
  const result = spawnSync(
    'unshare',
    [
      '--mount',
      '--propagation',
      'private',
      'sh',
      '-c',
      `mount -t tmpfs ibfleet-test /run || exit 99\nDEPLOY=${deploy}\n${scenario}`,
    ],
    { encoding: 'utf8', timeout: 20_000 },
  );
  return { status: result.status ?? 128, stdout: result.stdout, stderr: result.stderr };
}

describe.runIf(CAN_RUN)('the host lock', () => {
  it(`lives in ${LOCK_DIR}, root's alone: an unprivileged user cannot even open it`, () => {
    const r = inPrivateRun(
      `sh "$DEPLOY" && stat -c '%a %U' ${LOCK_DIR} && setpriv --reuid=nobody --regid=nogroup --clear-groups flock -n ${LOCK_PATH} true 2>&1; echo "nobody: $?"`,
    );
    expect(r.stdout).toBe(
      `deploy-done\n700 root\nflock: cannot open lock file ${LOCK_PATH}: Permission denied\nnobody: 66\n`,
    );
  });

  it('held by an ibfleet deploy: the second run says so, naming its shell', () => {
    const r = inPrivateRun(
      `sh "$DEPLOY" 3 & first=$!; sleep 1; sh "$DEPLOY"; echo "second: $?"; wait; echo "first was $first"`,
    );
    const first = /first was (\d+)/.exec(r.stdout)![1];
    expect(r.stdout).toContain(`second: ${LOCKED_EXIT}`);
    expect(r.stderr).toBe(
      `ibfleet: the host lock ${LOCK_PATH} is held by another ibfleet deploy (its shell is pid ${first}); try again when it is free\n`,
    );
  });

  it("held by something else of root's: the message does not blame an ibfleet run, even one that held it before", () => {
    const r = inPrivateRun(`sh "$DEPLOY" && (flock ${LOCK_PATH} sleep 3 &) ; sleep 1; sh "$DEPLOY"; echo "second: $?"`);
    expect(r.stdout).toContain(`second: ${LOCKED_EXIT}`);
    expect(r.stderr).toBe(
      `ibfleet: the host lock ${LOCK_PATH} is held by a process that is not an ibfleet run (find it with: fuser -v ${LOCK_PATH}); try again when it is free\n`,
    );
  });
});
