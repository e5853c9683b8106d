/**
 * The versions a change keeps under /etc/ibfleet/previous, when one of ibfleet's paths is a
 * symbolic link (issue 22, item 7d): the link itself is kept, never a copy of what it points to
 * (a hook path linked to /etc/shadow must not leave a copy of the shadow file there, mode and
 * all), nothing is chmod-ed through it, and the restore after a failed change puts the link back.
 *
 * The rendered apply, rollback and restore scripts run for real, as root, in a throw-away network
 * namespace (the host's NICs, test/helpers/netns.ts) with a private /run and an overlay on /etc
 * whose upper layer is a tmpfs: every file they write, and the "secret", live only there; the
 * machine's /etc is never written. Skipped with a note when not root.
 */
import { createHash } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { renderApplyScript, renderRollbackScript } from '../../../src/render/apply-script.js';
import { renderRestoreScript, type RestoreSpec } from '../../../src/render/restore-script.js';
import { PREVIOUS_DIR, REPLACED_DIR } from '../../../src/script/paths.js';
import { HOOK_PATHS } from '../../../src/steps/persist/paths.js';
import { filesOf as renderHostFiles, hostOf, loadFixtureFleet, loadFixturePlaybook } from '../../fixtures/fixtures.js';
import { useFabrics, type Fabric } from '../../helpers/netns.js';

const CAN_RUN = process.getuid?.() === 0;
if (!CAN_RUN)
  console.warn(
    'test/root/render/keep-links.test.ts: skipped — running the scripts needs root (network and mount namespaces); CI runs it as root.',
  );

const seeds = loadFixtureFleet('seeds.yaml');
const host = hostOf(seeds, 34);
const files = renderHostFiles(host, seeds, loadFixturePlaybook(), 'netplan');
const HOOK = HOOK_PATHS.netplan;
const OTHER_HOOK = HOOK_PATHS.ifupdown;
const SECRET_PATH = '/etc/ibfleet-test-shadow';
const SECRET = 'root:$6$not-a-real-hash:19000:0:99999:7:::\n';
const SECRET_SHA256 = createHash('sha256').update(SECRET).digest('hex');

const { work, createFor } = useFabrics('ibfleet-keep-links-');

/**
 * Runs `steps` (shell, one string) with /etc overlaid on a tmpfs: the secret file 0640 and a
 * symbolic link to it at each of `linked`, then the steps, then a report of what is where.
 */
function inPrivateEtc(lab: Fabric, linked: readonly string[], steps: string): Record<string, string> {
  const scratch = join(work, `etc-${Math.random().toString(36).slice(2)}`);
  const script = join(work, `run-${Math.random().toString(36).slice(2)}.sh`);
  const report = [
    SECRET_PATH,
    HOOK,
    OTHER_HOOK,
    `${PREVIOUS_DIR}${HOOK}`,
    `${PREVIOUS_DIR}${OTHER_HOOK}`,
    `${REPLACED_DIR}${HOOK}`,
  ];
  writeFileSync(
    script,
    [
      'set -e',
      `mkdir -p ${scratch} && mount -t tmpfs ibfleet-test ${scratch} && mkdir ${scratch}/upper ${scratch}/work`,
      `mount -t overlay overlay -o lowerdir=/etc,upperdir=${scratch}/upper,workdir=${scratch}/work /etc`,
      // Nothing of an earlier ibfleet on this machine (there is none in CI) takes part.
      'rm -rf /etc/ibfleet',
      `printf '%s' '${SECRET}' >${SECRET_PATH} && chmod 0640 ${SECRET_PATH}`,
      ...linked.map((path) => `mkdir -p ${path.replace(/\/[^/]+$/, '')} && ln -s ${SECRET_PATH} ${path}`),
      'set +e',
      steps,
      // What is where: a link's text, a file's mode and content hash, or nothing.
      `for p in ${report.join(' ')}; do`,
      '\tif [ -L "$p" ]; then echo "$p link $(readlink "$p")";',
      '\telif [ -f "$p" ]; then echo "$p file $(stat -c %a "$p") $(sha256sum <"$p" | cut -c1-64)";',
      '\telse echo "$p none"; fi',
      'done',
    ].join('\n'),
  );
  const result = lab.exec(['unshare', '--mount', '--propagation', 'private', 'sh', script]);
  rmSync(scratch, { recursive: true, force: true });
  expect(result.stderr).not.toMatch(/overlay|tmpfs/);
  return Object.fromEntries(
    result.stdout
      .split('\n')
      .filter((l) => report.some((p) => l.startsWith(`${p} `)))
      .map((l) => [l.slice(0, l.indexOf(' ')), l.slice(l.indexOf(' ') + 1)]),
  );
}

const SECRET_AS_IT_WAS = `file 640 ${SECRET_SHA256}`;

describe.runIf(CAN_RUN)("a symbolic link at one of ibfleet's paths", () => {
  const lab = () => createFor(host);

  it('deploy replaces it with the hook and keeps the link itself under previous, not a copy of the secret', () => {
    const apply = join(work, 'apply.sh');
    writeFileSync(
      apply,
      renderApplyScript(host, seeds, { write: files, remove: [OTHER_HOOK], parts: new Map() }, 'keep-links'),
    );
    const seen = inPrivateEtc(lab(), [HOOK, OTHER_HOOK], `sh ${apply} >/dev/null 2>&1`);
    expect(seen).toMatchObject({
      [SECRET_PATH]: SECRET_AS_IT_WAS,
      [HOOK]: expect.stringMatching(/^file 755 /),
      [`${PREVIOUS_DIR}${HOOK}`]: `link ${SECRET_PATH}`,
      // Another manager's hook path retired: the link removed, and kept as a link.
      [OTHER_HOOK]: 'none',
      [`${PREVIOUS_DIR}${OTHER_HOOK}`]: `link ${SECRET_PATH}`,
    });
  });

  it('a second deploy keeps its version without writing through the link kept before', () => {
    const apply = join(work, 'apply-twice.sh');
    writeFileSync(apply, renderApplyScript(host, seeds, { write: files, remove: [], parts: new Map() }, 'keep-links'));
    // The first deploy keeps the link; the second finds ibfleet's own hook and keeps that.
    const seen = inPrivateEtc(lab(), [HOOK], `sh ${apply} >/dev/null 2>&1; sh ${apply} >/dev/null 2>&1`);
    expect(seen[SECRET_PATH]).toBe(SECRET_AS_IT_WAS);
    expect(seen[`${PREVIOUS_DIR}${HOOK}`]).toMatch(/^file 644 /);
  });

  it("rollback leaves it (a link is an admin's, never ibfleet's), keeps nothing under previous, and leaves the secret as it was", () => {
    const rollback = join(work, 'rollback.sh');
    writeFileSync(rollback, renderRollbackScript(host, seeds, [], 'keep-links'));
    const seen = inPrivateEtc(lab(), [HOOK], `sh ${rollback} >/dev/null 2>&1`);
    expect(seen).toMatchObject({
      [SECRET_PATH]: SECRET_AS_IT_WAS,
      [HOOK]: `link ${SECRET_PATH}`,
      [`${PREVIOUS_DIR}${HOOK}`]: 'none',
    });
  });

  it('rollback after two deploys puts back the links deploy replaced and retired, same targets, and keeps nothing', () => {
    const script = join(work, 'deploy-twice-rollback.sh');
    const apply = renderApplyScript(
      host,
      seeds,
      { write: files, remove: [OTHER_HOOK], parts: new Map() },
      'keep-links',
    );
    writeFileSync(join(work, 'apply.sh'), apply);
    writeFileSync(join(work, 'rollback.sh'), renderRollbackScript(host, seeds, [], 'keep-links'));
    writeFileSync(
      script,
      // The second deploy keeps ibfleet's own hook under previous/, where the first kept the link.
      `sh ${join(work, 'apply.sh')}; echo '# edited' >>${HOOK}; sh ${join(work, 'apply.sh')}; sh ${join(work, 'rollback.sh')}`,
    );
    const seen = inPrivateEtc(lab(), [HOOK, OTHER_HOOK], `sh ${script} >/dev/null 2>&1`);
    expect(seen).toMatchObject({
      [SECRET_PATH]: SECRET_AS_IT_WAS,
      [HOOK]: `link ${SECRET_PATH}`,
      [OTHER_HOOK]: `link ${SECRET_PATH}`,
      [`${PREVIOUS_DIR}${HOOK}`]: 'none',
      [`${REPLACED_DIR}${HOOK}`]: 'none',
    });
  });

  describe("the restore after a failed change (the probe saw the link as mode 777, its target's checksum)", () => {
    const spec: RestoreSpec = {
      files: [{ path: HOOK, before: { mode: 0o777, sha256: SECRET_SHA256 } }],
      createdDirs: [],
      steps: [],
    };

    it('puts the link back in place of the hook the change wrote', () => {
      const apply = join(work, 'apply-then-restore.sh');
      const restore = join(work, 'restore.sh');
      writeFileSync(
        apply,
        renderApplyScript(host, seeds, { write: files, remove: [], parts: new Map() }, 'keep-links'),
      );
      writeFileSync(restore, renderRestoreScript(host, seeds, spec, 'keep-links'));
      const seen = inPrivateEtc(
        lab(),
        [HOOK],
        `sh ${apply} >/dev/null 2>&1; sh ${restore} >/dev/null 2>&1; echo "restore=$?"`,
      );
      expect(seen).toMatchObject({ [SECRET_PATH]: SECRET_AS_IT_WAS, [HOOK]: `link ${SECRET_PATH}` });
    });

    it("a change that failed after keeping the link but before replacing it keeps no record of it: a rollback after the admin's file and a deploy brings no old link back (issue 29)", () => {
      const restore = join(work, 'restore-kept.sh');
      const apply = join(work, 'apply-after-restore.sh');
      const rollback = join(work, 'rollback-after-restore.sh');
      writeFileSync(restore, renderRestoreScript(host, seeds, spec, 'keep-links'));
      writeFileSync(
        apply,
        renderApplyScript(host, seeds, { write: files, remove: [], parts: new Map() }, 'keep-links'),
      );
      writeFileSync(rollback, renderRollbackScript(host, seeds, [], 'keep-links'));
      const dir = HOOK.replace(/\/[^/]+$/, '');
      const seen = inPrivateEtc(
        lab(),
        [HOOK],
        [
          // What keep (host/sent/change.sh) leaves before the rename that did not come.
          `mkdir -p ${PREVIOUS_DIR}${dir} ${REPLACED_DIR}${dir} && cp -P ${HOOK} ${PREVIOUS_DIR}${HOOK} && cp -P ${HOOK} ${REPLACED_DIR}${HOOK}`,
          `sh ${restore} >/dev/null 2>&1`,
          `rm -f ${HOOK} && echo '# the admin' >${HOOK}`,
          `sh ${apply} >/dev/null 2>&1; sh ${rollback} >/dev/null 2>&1`,
        ].join('\n'),
      );
      expect(seen).toMatchObject({
        [SECRET_PATH]: SECRET_AS_IT_WAS,
        [HOOK]: 'none',
        [`${REPLACED_DIR}${HOOK}`]: 'none',
      });
    });

    it('a link the change never replaced stays, and what it points to keeps its mode (no chmod 777 through it)', () => {
      const restore = join(work, 'restore-untouched.sh');
      writeFileSync(restore, renderRestoreScript(host, seeds, spec, 'keep-links'));
      const seen = inPrivateEtc(lab(), [HOOK], `sh ${restore} >/dev/null 2>&1`);
      expect(seen).toMatchObject({ [SECRET_PATH]: SECRET_AS_IT_WAS, [HOOK]: `link ${SECRET_PATH}` });
    });
  });
});
