/**
 * ibfleet's own files on this machine: the inventory and the playbook read as text, with one
 * mapping of what went wrong to a message that says what to do, and the inventory written back
 * atomically (onboard). Parsing is pure and lives in src/inventory/ and src/playbook/.
 */
import { chown, open, readFile, realpath, rename, stat, unlink } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { UsageError } from '../errors.js';

/** Reads `path` (relative to `cwd`); a missing or unreadable file is a usage error naming `hint`. */
export async function readConfigText(
  path: string,
  cwd: string,
  what: string,
  hint: string,
  shownAs = path,
): Promise<string> {
  try {
    return await readFile(resolve(cwd, path), 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const reason =
      code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : (error as Error).message;
    throw new UsageError(`cannot read ${what} ${shownAs}: ${reason} (${hint})`);
  }
}

export const INVENTORY_HINT = 'pass -i FILE or set IBFLEET_INVENTORY';

/** The inventory file: read, and written atomically. Injected so tests need no real file. */
export interface InventoryFile {
  /** As the user gave it, for messages. */
  readonly path: string;
  /** Relative paths inside the inventory resolve against this directory. */
  readonly baseDir: string;
  read(): Promise<string>;
  write(text: string): Promise<void>;
}

/** The inventory at `path` (relative to `cwd`), read as text and written with writeFileAtomic. */
export function inventoryFile(path: string, cwd: string): InventoryFile {
  const full = resolve(cwd, path);
  return {
    path,
    baseDir: dirname(full),
    read: () => readConfigText(full, cwd, 'inventory', INVENTORY_HINT, path),
    write: (text) => writeFileAtomic(full, text),
  };
}

/**
 * Writes `text` to `path` atomically: a temp file next to it (same mode and owner), then rename,
 * so a reader or a crash sees the old or the new inventory, never half of one. A symlinked
 * inventory is written where the link points.
 */
export async function writeFileAtomic(path: string, text: string): Promise<void> {
  const target = await realpath(path);
  const info = await stat(target);
  const temp = join(dirname(target), `.${basename(target)}.ibfleet-${process.pid}-${Date.now().toString(36)}.tmp`);
  const handle = await open(temp, 'wx', info.mode & 0o7777);
  try {
    await handle.chmod(info.mode & 0o7777);
    await handle.writeFile(text, 'utf8');
    await handle.sync();
  } catch (error) {
    await handle.close();
    await unlink(temp).catch(() => undefined);
    throw error;
  }
  await handle.close();
  try {
    if (process.getuid?.() === 0) await chown(temp, info.uid, info.gid);
    await rename(temp, target);
  } catch (error) {
    await unlink(temp).catch(() => undefined);
    throw error;
  }
}
