/**
 * Writing `render --out DIR`: a tree of files under a directory the user names, without ever
 * following a symbolic link found *inside* it. DIR itself may be a link (the user chose it); below
 * it, a directory that is a link is refused and a file is written next to its name and renamed
 * over it, so a link planted where a file goes is replaced, never written through. Every failure
 * is a UsageError (exit 2) that names the path and the reason, never a stack trace.
 *
 * What this cannot close: a writer racing us inside a directory it controls, swapping a checked
 * directory for a link between the check and the write. Only openat(2) with O_NOFOLLOW per
 * component closes that, and Node.js has no openat; render writes into directories the user owns.
 */
import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { lstat, mkdir, open, realpath, rename, stat, unlink } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { UsageError } from '../errors.js';

export interface TreeFile {
  /** Path below the output directory, `/`-separated, no `..`. */
  readonly relative: string;
  readonly content: string;
  readonly mode: number;
}

const REASONS: Readonly<Record<string, string>> = {
  ENOTDIR: 'not a directory',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EROFS: 'read-only file system',
  ENOSPC: 'no space left on the device',
  EDQUOT: 'disk quota exceeded',
  ENOENT: 'no such file or directory',
  EISDIR: 'a directory is in the way',
  ELOOP: 'a symbolic link is in the way',
  EEXIST: 'something else is in the way',
  ENAMETOOLONG: 'the path is too long',
};

function fsError(what: string, error: unknown, out: string): UsageError {
  const code = (error as NodeJS.ErrnoException).code ?? '';
  const reason = REASONS[code] ?? (error as Error).message;
  return new UsageError(`${out}: cannot ${what}: ${reason}${code ? ` (${code})` : ''}`);
}

function kindOf(s: { isFile(): boolean; isCharacterDevice(): boolean; isBlockDevice(): boolean; isFIFO(): boolean; isSocket(): boolean }): string {
  if (s.isFile()) return 'a file';
  if (s.isCharacterDevice() || s.isBlockDevice()) return 'a device';
  if (s.isFIFO()) return 'a pipe';
  if (s.isSocket()) return 'a socket';
  return 'not a directory';
}

/**
 * The output directory, created if missing (one level at a time, like `mkdir -p` but without
 * Node's recursive mkdir, which spins forever under /proc), resolved to its real path.
 */
async function prepareRoot(dir: string, cwd: string, out: string): Promise<string> {
  const root = resolve(cwd, dir);
  const missing: string[] = [];
  let existing = root;
  for (;;) {
    try {
      const found = await stat(existing);
      if (!found.isDirectory()) {
        throw new UsageError(`${out}: ${existing === root ? 'it' : existing} is ${kindOf(found)}, not a directory (give a directory to write the files into)`);
      }
      break;
    } catch (error) {
      if (error instanceof UsageError) throw error;
      const code = (error as NodeJS.ErrnoException).code;
      // ENOTDIR: a component further up is a file; walking up finds it and says so.
      if ((code !== 'ENOENT' && code !== 'ENOTDIR') || dirname(existing) === existing) throw fsError(`use ${existing}`, error, out);
      missing.unshift(existing);
      existing = dirname(existing);
    }
  }
  for (const made of missing) {
    try {
      await mkdir(made);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw fsError(`create ${made}`, error, out);
    }
  }
  try {
    const real = await realpath(root);
    if (!(await stat(real)).isDirectory()) throw new UsageError(`${out}: not a directory`);
    return real;
  } catch (error) {
    if (error instanceof UsageError) throw error;
    throw fsError(`use ${root}`, error, out);
  }
}

/** A directory below the root: created, or found as a real directory; a link is refused, not followed. */
async function ensureSubdirectory(path: string, out: string): Promise<void> {
  try {
    await mkdir(path);
    return;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw fsError(`create ${path}`, error, out);
  }
  const found = await lstat(path).catch((error: unknown) => {
    throw fsError(`use ${path}`, error, out);
  });
  if (found.isSymbolicLink()) {
    throw new UsageError(`${out}: ${path} is a symbolic link; refusing to write through it (remove it, or write to a fresh directory)`);
  }
  if (!found.isDirectory()) throw new UsageError(`${out}: ${path} is ${kindOf(found)}, not a directory`);
}

/**
 * The file is created under a fresh random name in its directory (O_EXCL | O_NOFOLLOW: nothing
 * planted there is opened), given its mode, then renamed over the target — rename(2) replaces a
 * link at the target rather than following it.
 */
async function writeOne(dir: string, name: string, file: TreeFile, out: string): Promise<void> {
  const target = join(dir, name);
  const staged = join(dir, `.${name}.ibfleet-${randomBytes(6).toString('hex')}`);
  let handle;
  try {
    handle = await open(staged, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  } catch (error) {
    throw fsError(`write ${target}`, error, out);
  }
  try {
    await handle.writeFile(file.content);
    await handle.chmod(file.mode);
    await handle.close();
    handle = undefined;
    await rename(staged, target);
  } catch (error) {
    await handle?.close().catch(() => undefined);
    await unlink(staged).catch(() => undefined);
    throw fsError(`write ${target}`, error, out);
  }
}

/**
 * Writes every file under `dir` (relative to `cwd`); returns the paths written as the user named
 * them, in order. `option` names the command's option in messages (`render --out DIR`).
 */
export async function writeTree(dir: string, cwd: string, files: readonly TreeFile[], option = 'render --out'): Promise<string[]> {
  const out = `${option} ${dir}`;
  const root = await prepareRoot(dir, cwd, out);
  const shown = resolve(cwd, dir);
  const made = new Set<string>();
  const written: string[] = [];
  for (const file of files) {
    const parts = file.relative.split('/').filter((p) => p !== '');
    if (parts.length === 0 || parts.some((p) => p === '.' || p === '..')) throw new UsageError(`${out}: refusing the path ${file.relative}`);
    let dir = root;
    for (const part of parts.slice(0, -1)) {
      dir = join(dir, part);
      if (!made.has(dir)) {
        await ensureSubdirectory(dir, out);
        made.add(dir);
      }
    }
    await writeOne(dir, parts[parts.length - 1]!, file, out);
    written.push(join(shown, ...parts));
  }
  return written;
}
