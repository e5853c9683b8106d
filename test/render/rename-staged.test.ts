/**
 * host/sent/change.sh's rename_staged, run by sh in a scratch directory the way a change calls it
 * (src/render/apply-script.ts: a chmod the change runs only without perl, then one rename_staged):
 * with perl (one process sets the modes and renames) and without it (chmod, then mv -fT per file)
 * the files end the same — content, mode, what is said, the exit status — also when a rename fails
 * (a directory at the path) and when a mode cannot be set (then nothing is renamed, as before).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, symlinkSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SENT_SHELL_DIR } from '../../src/script/sent-shell.js';

const work = mkdtempSync(join(tmpdir(), 'ibfleet-rename-staged-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** A PATH of the tools the two ways and the cases use, with or without perl. */
function toolsDir(withPerl: boolean): string {
  const dir = join(work, withPerl ? 'bin-perl' : 'bin-no-perl');
  mkdirSync(dir, { recursive: true });
  for (const tool of ['mv', 'chmod', 'rm', 'mkdir', ...(withPerl ? ['perl'] : [])])
    symlinkSync(execFileSync('sh', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).trim(), join(dir, tool));
  return dir;
}
const PATHS = { perl: toolsDir(true), 'no perl': toolsDir(false) };

interface Outcome {
  readonly out: string;
  readonly err: string;
  readonly status: string;
  readonly files: Record<string, string>;
}

/** Stages a (0755), b (0755), c (0644) and runs the change's two lines over them in a fresh directory. */
function run(path: string, name: string, setUp = ''): Outcome {
  const dir = join(work, name);
  mkdirSync(dir);
  const script = [
    `. ${join(SENT_SHELL_DIR, 'change.sh')}`,
    `PATH=${path}`,
    `cd ${dir} && umask 022 && status=0`,
    "printf 'a\\n' >.a.new && printf 'b\\n' >.b.new && printf 'c\\n' >.c.new",
    setUp,
    '[ "$status" -ne 0 ] || perl_renames || chmod 0755 .a.new .b.new || status=1',
    '[ "$status" -ne 0 ] || rename_staged 0755 .a.new a - .c.new c 0755 .b.new b || status=1',
    'echo "status $status"',
  ].join('\n');
  const r = spawnSync('sh', ['-c', script], { encoding: 'utf8' });
  const files = Object.fromEntries(
    readdirSync(dir)
      .sort()
      .map((f) => {
        const st = statSync(join(dir, f));
        const what = st.isDirectory() ? 'dir' : readFileSync(join(dir, f), 'utf8').trim();
        return [f, `${(st.mode & 0o7777).toString(8)} ${what}`];
      }),
  );
  const scrub = (s: string) => s.replaceAll(dir, 'DIR');
  return { out: scrub(r.stdout).replace(/^status \d+\n$/m, ''), err: scrub(r.stderr), status: r.stdout, files };
}

describe('rename_staged: with perl and without, the same files', () => {
  it('every file renamed, each with its mode, each said', () => {
    const [perl, noPerl] = [run(PATHS.perl, 'ok-perl'), run(PATHS['no perl'], 'ok-no-perl')];
    expect(perl.files).toEqual({ a: '755 a', b: '755 b', c: '644 c' });
    expect(perl.out).toBe('ibfleet: wrote a\nibfleet: wrote c\nibfleet: wrote b\n');
    expect(perl.status).toMatch(/status 0\n$/);
    expect(noPerl).toEqual({ ...perl, err: noPerl.err });
    expect(perl.err).toBe('');
  });

  it('a directory at a path fails its rename; the others are renamed all the same', () => {
    const setUp = 'mkdir c && : >c/inside';
    const [perl, noPerl] = [run(PATHS.perl, 'dir-perl', setUp), run(PATHS['no perl'], 'dir-no-perl', setUp)];
    expect(perl.files).toEqual({ '.c.new': '644 c', a: '755 a', b: '755 b', c: '755 dir' });
    expect(perl.status).toMatch(/status 1\n$/);
    expect(perl.err).toMatch(/^ibfleet: cannot rename \.c\.new to c: /);
    expect({ ...noPerl, err: '' }).toEqual({ ...perl, err: '' });
  });

  it('a mode that cannot be set: nothing is renamed', () => {
    const setUp = 'rm .b.new';
    const [perl, noPerl] = [run(PATHS.perl, 'mode-perl', setUp), run(PATHS['no perl'], 'mode-no-perl', setUp)];
    expect(perl.files).toEqual({ '.a.new': '755 a', '.c.new': '644 c' });
    expect(perl.out).toBe('');
    expect(perl.status).toMatch(/status 1\n$/);
    expect(perl.err).toMatch(/^ibfleet: cannot set mode 0755 of \.b\.new: No such file/);
    expect({ ...noPerl, err: '' }).toEqual({ ...perl, err: '' });
  });
});
