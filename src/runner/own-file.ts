/**
 * Opening a file the user names for ibfleet to write into (the run log's `--log FILE`) without
 * letting anyone else choose what is written over. ibfleet often runs as root, and a name in a
 * directory others can write to (/tmp) may be a symbolic link or a hard link another user planted
 * there towards /etc/shadow, or a file of theirs. So:
 *  - the last component is opened with O_NOFOLLOW (a symbolic link there is refused, never
 *    followed) and O_NONBLOCK (a FIFO planted there cannot hang the run), and not truncated until
 *    the open file is checked: a regular file, ours, with no other name (a hard link to someone's
 *    file has two);
 *  - a symbolic link in a directory component that belongs to another user (neither us nor root)
 *    is refused: following it lets that user choose the directory. This is what the kernel's
 *    fs.protected_symlinks does in sticky directories, checked here whatever that sysctl says.
 * `checkOwnFilePath` says the same before a run starts (nothing contacted yet); the open checks
 * again on the descriptor, which is what counts. Every refusal is a UsageError (exit 2) naming the
 * path and the reason.
 *
 * What this cannot close: another user swapping a directory component they own for a link between
 * the check and the open. Only openat(2) component by component closes that, and Node.js has no
 * openat; the path, as given, is the user's choice.
 */
import { closeSync, constants, fstatSync, ftruncateSync, lstatSync, openSync, type Stats } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { UsageError } from '../errors.js';

const FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_NOFOLLOW | constants.O_NONBLOCK;

function euid(): number {
  return process.geteuid?.() ?? -1;
}

function kindOf(s: Stats): string {
  if (s.isDirectory()) return 'a directory';
  if (s.isCharacterDevice() || s.isBlockDevice()) return 'a device';
  if (s.isFIFO()) return 'a pipe';
  if (s.isSocket()) return 'a socket';
  return 'not a regular file';
}

/** Why an existing file at the name is not one to write into, or undefined when it is. */
function refusalOf(found: Stats): string | undefined {
  if (found.isSymbolicLink()) return 'is a symbolic link; refusing to write through it';
  if (!found.isFile()) return `is ${kindOf(found)}, not a file`;
  if (found.uid !== euid()) return `belongs to another user (uid ${found.uid}); refusing to write over it`;
  if (found.nlink > 1)
    return `has ${found.nlink} names (a hard link); refusing to write over a file that is also somewhere else`;
  return undefined;
}

/** The first directory component of `path` that is a symbolic link of another user (not us, not root). */
function foreignLinkAbove(path: string): { dir: string; uid: number } | undefined {
  const dirs: string[] = [];
  for (let dir = dirname(path); dir !== dirname(dir); dir = dirname(dir)) dirs.unshift(dir);
  for (const dir of dirs) {
    const found = lstatSync(dir, { throwIfNoEntry: false });
    if (found === undefined) return undefined; // the open below says "no such directory"
    if (found.isSymbolicLink() && found.uid !== euid() && found.uid !== 0) return { dir, uid: found.uid };
  }
  return undefined;
}

function refuse(
  label: string,
  path: string,
  reason: string,
  next = 'give another file name, or --no-log for none',
): UsageError {
  return new UsageError(`${label}: ${path} ${reason} (${next})`);
}

/**
 * The same refusals as `openOwnFile`, without creating or touching anything: for a run to stop
 * before it contacts any host. `label` names the option in the message (`--log run.log`).
 */
export function checkOwnFilePath(path: string, label: string): void {
  const full = resolve(path);
  const link = foreignLinkAbove(full);
  if (link)
    throw refuse(label, link.dir, `is a symbolic link owned by another user (uid ${link.uid}); refusing to follow it`);
  const found = lstatSync(full, { throwIfNoEntry: false });
  const reason = found && refusalOf(found);
  if (reason) throw refuse(label, full, reason);
}

/**
 * Opens `path` for writing from its start (created 0600 when new), refusing every name that is not
 * a plain file of ours; returns the descriptor. Errors of the file system itself (no such
 * directory, permission denied) are thrown as they are.
 */
export function openOwnFile(path: string, label: string): number {
  checkOwnFilePath(path, label);
  const full = resolve(path);
  let fd: number;
  try {
    fd = openSync(full, FLAGS, 0o600);
  } catch (error) {
    // Planted between the check and the open: O_NOFOLLOW refused it.
    if ((error as NodeJS.ErrnoException).code === 'ELOOP')
      throw refuse(label, full, 'is a symbolic link; refusing to write through it');
    throw error;
  }
  const reason = refusalOf(fstatSync(fd));
  if (reason) {
    closeSync(fd);
    throw refuse(label, full, reason);
  }
  ftruncateSync(fd, 0);
  return fd;
}
