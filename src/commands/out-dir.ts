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
import { lstat, mkdir, open, readdir, readFile, realpath, rename, rm, stat, unlink } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
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

function kindOf(s: {
  isFile(): boolean;
  isCharacterDevice(): boolean;
  isBlockDevice(): boolean;
  isFIFO(): boolean;
  isSocket(): boolean;
}): string {
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
        throw new UsageError(
          `${out}: ${existing === root ? 'it' : existing} is ${kindOf(found)}, not a directory (give a directory to write the files into)`,
        );
      }
      break;
    } catch (error) {
      if (error instanceof UsageError) throw error;
      const code = (error as NodeJS.ErrnoException).code;
      // ENOTDIR: a component further up is a file; walking up finds it and says so.
      if ((code !== 'ENOENT' && code !== 'ENOTDIR') || dirname(existing) === existing)
        throw fsError(`use ${existing}`, error, out);
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
    throw new UsageError(
      `${out}: ${path} is a symbolic link; refusing to write through it (remove it, or write to a fresh directory)`,
    );
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
    handle = await open(
      staged,
      constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
      0o600,
    );
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
export async function writeTree(
  dir: string,
  cwd: string,
  files: readonly TreeFile[],
  option = 'render --out',
): Promise<string[]> {
  const out = `${option} ${dir}`;
  const root = await prepareRoot(dir, cwd, out);
  const shown = resolve(cwd, dir);
  const made = new Set<string>();
  const written: string[] = [];
  for (const file of files) {
    const parts = file.relative.split('/').filter((p) => p !== '');
    if (parts.length === 0 || parts.some((p) => p === '.' || p === '..'))
      throw new UsageError(`${out}: refusing the path ${file.relative}`);
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

/**
 * What a writer puts at the top of a directory it owns whole (`export ansible --out`): each name
 * and its kind, and the file of its own that marks a directory it wrote before (`begins` its text).
 */
export interface OwnTree {
  readonly entries: Readonly<Record<string, 'file' | 'directory'>>;
  readonly mark: { readonly relative: string; readonly begins: string };
}

/** Why `root` is not a directory this writer may replace: neither empty nor its own earlier tree (only its names, each of its kind, the mark in place). */
async function notReplaceable(root: string, own: OwnTree): Promise<string | undefined> {
  const entries = await readdir(root);
  if (entries.length === 0) return undefined;
  const foreign = entries.filter((e) => !Object.hasOwn(own.entries, e));
  if (foreign.length)
    return `it holds what ibfleet does not write there (${foreign.slice(0, 5).join(', ')}${foreign.length > 5 ? `, … ${foreign.length} in all` : ''})`;
  for (const name of entries) {
    const found = await lstat(join(root, name));
    const want = own.entries[name];
    if (found.isSymbolicLink() || (want === 'directory' ? !found.isDirectory() : !found.isFile()))
      return `its ${name} is ${found.isSymbolicLink() ? 'a symbolic link' : kindOf(found)}, where ibfleet writes a ${want}`;
  }
  const marked = await readFile(join(root, own.mark.relative), 'utf8').then(
    (t) => t.startsWith(own.mark.begins),
    () => false,
  );
  return marked ? undefined : `its ${own.mark.relative} is not one ibfleet wrote`;
}

/**
 * The directory `dir` names, resolved (a link given as `dir` is followed: the user chose it), when
 * it exists; refused (UsageError) unless it is empty or the writer's own earlier tree. Nothing is
 * written: a command checks this before it contacts any host.
 */
export async function checkReplaceable(
  dir: string,
  cwd: string,
  option: string,
  own: OwnTree,
): Promise<string | undefined> {
  const out = `${option} ${dir}`;
  const shown = resolve(cwd, dir);
  const given = await realpath(shown).catch((error: unknown) => {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw fsError(`use ${shown}`, error, out);
  });
  if (given === undefined) return undefined;
  const found = await stat(given);
  if (!found.isDirectory())
    throw new UsageError(
      `${out}: it is ${kindOf(found)}, not a directory (give a new or empty directory to write into)`,
    );
  if (dirname(given) === given)
    throw new UsageError(
      `${out}: refusing to write into the root directory; nothing was written (give a new or empty directory)`,
    );
  const why = await notReplaceable(given, own).catch((error: unknown) => {
    throw fsError(`read ${given}`, error, out);
  });
  if (why)
    throw new UsageError(
      `${out}: ${given} is neither empty nor written by ibfleet before: ${why}; nothing was written (give a new or empty directory)`,
    );
  return given;
}

/**
 * Writes `files` as the whole of `dir`, all or nothing: into a fresh directory beside it first
 * (nothing there can be a link), which then takes its place in one rename — so a failure leaves
 * `dir` as it was, and what an earlier tree had that this one has not (a host no longer exported)
 * is gone. `dir` must be missing, empty, or the writer's own earlier tree (checkReplaceable);
 * anything else is refused before a byte is written: a directory of the user's is never merged
 * into, nor emptied.
 */
export async function replaceTree(
  dir: string,
  cwd: string,
  files: readonly TreeFile[],
  option: string,
  own: OwnTree,
): Promise<string[]> {
  const out = `${option} ${dir}`;
  const shown = resolve(cwd, dir);
  const given = await checkReplaceable(dir, cwd, option, own);
  const target = given ?? shown;
  const parent = await prepareRoot(dirname(target), cwd, out);
  const staged = join(parent, `.${basename(target)}.ibfleet-${randomBytes(6).toString('hex')}`);
  const old = `${staged}-old`;
  try {
    await mkdir(staged, 0o755);
  } catch (error) {
    throw fsError(`create ${staged}`, error, out);
  }
  let movedAside = false;
  try {
    await writeTree(staged, cwd, files, option);
    // rename(2) puts a directory over a missing or empty one; an earlier tree is moved aside first.
    if (given !== undefined && (await readdir(given)).length > 0) {
      await rename(given, old);
      movedAside = true;
    }
    await rename(staged, target);
  } catch (error) {
    await rm(staged, { recursive: true, force: true }).catch(() => undefined);
    if (movedAside) await rename(old, target).catch(() => undefined);
    throw error instanceof UsageError ? error : fsError(`write ${target}`, error, out);
  }
  if (movedAside) await rm(old, { recursive: true, force: true }).catch(() => undefined);
  return files.map((f) => join(shown, ...f.relative.split('/').filter((p) => p !== '')));
}
