/**
 * The e2e stories' watch on the machine (test/helpers/machine-view.ts), run for real in a private
 * mount namespace: a node process watching its view is told, with the moment, when /tmp is covered
 * as received-whole's driver covers it — and is not told about the labs' own mounts. Needs root
 * (unshare, mounts).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { PACKAGE_ROOT } from '../../../src/package-root.js';
import { coversPaths, parseMounts, viewChanges, type MachineView } from '../../helpers/machine-view.js';

const IS_ROOT = process.getuid?.() === 0;
if (!IS_ROOT) console.warn('NOTE: test/root/lab/machine-view.test.ts skipped: it needs root (unshare, mounts)');
const work = mkdtempSync(join(tmpdir(), 'ibfleet-view-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('what a lab story watches of the machine', () => {
  it('reads mountinfo as fstype, source and mount point, leaving out the labs’ binds and namespace files', () => {
    const mountinfo = [
      '25 1 254:0 / / rw,relatime - ext4 /dev/vda rw',
      '60 25 254:0 /run/netns /run/netns rw,relatime shared:5 - ext4 /dev/vda rw',
      '61 60 0:4 net:[4026532177] /run/netns/ibfl-x-sw rw shared:5 - nsfs nsfs rw',
      '70 25 254:0 /run/ibfleet-lab/x /run/ibfleet-lab/x rw,relatime - ext4 /dev/vda rw',
      '71 70 0:4 mnt:[4026532400] /run/ibfleet-lab/x/hosts/16/mnt rw - nsfs nsfs rw',
      '80 25 0:50 / /tmp rw,relatime - tmpfs ibfleet-cut rw',
      '81 25 0:51 / /mnt/a\\040b rw,relatime - tmpfs some\\040thing rw',
      '',
    ].join('\n');
    expect(parseMounts(mountinfo)).toEqual([
      'ext4 /dev/vda on /',
      'tmpfs ibfleet-cut on /tmp',
      'tmpfs some thing on /mnt/a b',
    ]);
  });

  it('names what came and went, and fails a story only for what covers a path it reads', () => {
    const view = (mounts: string[], root = '1:2'): MachineView => ({ mountNs: 7, root, mounts });
    const before = view(['devpts devpts on /dev/pts', 'devpts devpts on /dev/pts', 'ext4 /dev/vda on /']);
    const after = view(['devpts devpts on /dev/pts', 'ext4 /dev/vda on /', 'tmpfs ibfleet-cut on /etc'], '3:4');
    const changes = viewChanges(before, after);
    expect(changes).toEqual([
      '/ is another directory: 1:2 → 3:4',
      '+ tmpfs ibfleet-cut on /etc',
      '- devpts devpts on /dev/pts',
    ]);
    const paths = ['/tmp/ibfleet-e2e-fit-x', '/etc/ssl/certs', '/run/ibfleet-lab'];
    expect(changes.map((c) => coversPaths(c, paths))).toEqual([true, true, false]);
    expect(coversPaths('+ tmpfs ibfleet-cut on /run', paths)).toBe(true);
    expect(coversPaths('+ tmpfs x on /mnt/sandbox', paths)).toBe(false);
    expect(coversPaths('+ tmpfs x on /tmpfoo', paths)).toBe(false);
  });

  it.skipIf(!IS_ROOT)(
    'a watching process is told, with the moment, that /tmp was covered beside it — not that a lab mounted its own',
    () => {
      // Everything below happens inside one private mount namespace: the machine's view is never touched.
      const script = join(work, 'watch.mts');
      writeFileSync(
        script,
        `import { spawnSync } from 'node:child_process';
import { watchMachineView } from ${JSON.stringify(join(PACKAGE_ROOT, 'test/helpers/machine-view.ts'))};
const watch = watchMachineView(50);
const mount = (what: string) => spawnSync('sh', ['-c', what], { stdio: 'inherit' });
mount('mount -t tmpfs ibfleet-lab-test /run/netns');
await new Promise((r) => setTimeout(r, 200));
console.log('lab mount: ' + (watch.take(['/tmp', '/run/ibfleet-lab']) ?? 'nothing said'));
const from = new Date().toISOString().slice(11, 23);
mount('mount -t tmpfs ibfleet-cut /tmp');
const to = new Date(Date.now() + 60).toISOString().slice(11, 23);
await new Promise((r) => setTimeout(r, 200));
console.log('window ' + from + ' ' + to);
console.log(watch.take(['/tmp/ibfleet-e2e-x', '/run/ibfleet-lab']) ?? 'nothing said');
watch.stop();
`,
      );
      const result = spawnSync(
        'unshare',
        ['--mount', '--propagation', 'private', process.execPath, '--import', 'tsx', script],
        { cwd: PACKAGE_ROOT, encoding: 'utf8', timeout: 60_000 },
      );
      expect(result.status, result.stderr).toBe(0);
      const [lab, window, ...report] = result.stdout.trimEnd().split('\n');
      expect(lab).toBe('lab mount: nothing said');
      const [from, to] = window!.split(' ').slice(1);
      expect(report[0]).toBe(
        "the machine changed under this test process (a mount in the machine's own namespace, not the product):",
      );
      const moment = /^ {2}at (\d\d:\d\d:\d\d\.\d{3}) UTC: \+ tmpfs ibfleet-cut on \/tmp$/.exec(report[1] ?? '');
      expect(moment, result.stdout).not.toBeNull();
      expect(moment![1]! >= from! && moment![1]! <= to!, `${moment![1]} within ${from}–${to}`).toBe(true);
      expect(report[2]).toBe('  still different from the start: + tmpfs ibfleet-cut on /tmp');
      // The worker's own output says it at the moment it was seen, whatever the test then does.
      expect(result.stderr).toMatch(
        /the machine's view changed under this test process at .* \+ tmpfs ibfleet-cut on \/tmp/,
      );
    },
  );
});
