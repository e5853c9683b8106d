/**
 * What a test process sees of the machine, watched while a lab story runs: its mount namespace, the
 * identity of its `/`, and the machine's mount table outside the labs' own paths (every lab binds its
 * directory under /run/ibfleet-lab and its namespaces under /run/netns; nothing else of the table is
 * theirs). A story reads the machine through these — its work directory in /tmp, the built CLI, the
 * lab's key and namespace files under /run — so a change there is the machine changing under the
 * test, not the product failing: the watcher says what changed and when, to the millisecond.
 *
 * Why: on 27 Nov at 13:38 a fit.test.ts run lost /tmp, /etc and /run at once (ENOENT on its own work
 * directory, "Cannot find module" for dist/cli.js, labExec's "is the lab up?", EBUSY from lab down).
 * A copy of received-whole's sandbox driver run by hand, outside its namespaces, had put empty tmpfs
 * ("ibfleet-cut") on the machine's /etc, /run, /var, /root and /tmp for every process on it; nothing
 * in the test's output said so.
 */
import { readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { LAB_ROOT, NETNS_DIR } from '../../src/lab/names.js';

export interface MachineView {
  /** Inode of /proc/self/ns/mnt: which mount namespace the process is in. */
  readonly mountNs: number;
  /** `dev:ino` of `/`: a pivot_root or chroot moves it. */
  readonly root: string;
  /** `fstype source on mountpoint`, one per mount outside the labs' paths, sorted. */
  readonly mounts: readonly string[];
}

/** A mount point as mountinfo escapes it (space, tab, newline, backslash as \ooo), read back. */
function unescape(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8)));
}

/** The labs' own mounts: each lab's private bind and namespace files, and the named network namespaces. */
export function isLabMount(mountPoint: string): boolean {
  return mountPoint === NETNS_DIR || mountPoint.startsWith(`${NETNS_DIR}/`) || mountPoint.startsWith(`${LAB_ROOT}/`);
}

/** The mounts of /proc/self/mountinfo text outside the labs' paths, as `fstype source on mountpoint`. */
export function parseMounts(mountinfo: string): string[] {
  const mounts: string[] = [];
  for (const line of mountinfo.split('\n')) {
    const fields = line.split(' ');
    const dash = fields.indexOf('-', 6);
    if (fields.length < 10 || dash < 0) continue;
    const mountPoint = unescape(fields[4]!);
    if (!isLabMount(mountPoint)) mounts.push(`${fields[dash + 1]} ${unescape(fields[dash + 2]!)} on ${mountPoint}`);
  }
  return mounts.sort();
}

export function readMachineView(): MachineView {
  const root = statSync('/');
  return {
    mountNs: statSync('/proc/self/ns/mnt').ino,
    root: `${root.dev}:${root.ino}`,
    mounts: parseMounts(readFileSync('/proc/self/mountinfo', 'utf8')),
  };
}

/** Each difference from `before` to `after`, as a line: `+ tmpfs ibfleet-cut on /tmp`, `- …`, the root or namespace moved. */
export function viewChanges(before: MachineView, after: MachineView): string[] {
  const changes: string[] = [];
  if (before.mountNs !== after.mountNs) changes.push(`mount namespace ${before.mountNs} → ${after.mountNs}`);
  if (before.root !== after.root) changes.push(`/ is another directory: ${before.root} → ${after.root}`);
  const count = (list: readonly string[]) => {
    const counts = new Map<string, number>();
    for (const m of list) counts.set(m, (counts.get(m) ?? 0) + 1);
    return counts;
  };
  const [was, is] = [count(before.mounts), count(after.mounts)];
  for (const [m, n] of is) for (let i = was.get(m) ?? 0; i < n; i++) changes.push(`+ ${m}`);
  for (const [m, n] of was) for (let i = is.get(m) ?? 0; i < n; i++) changes.push(`- ${m}`);
  return changes;
}

/**
 * Whether a change takes away something the test process reads: its namespace or root moved, or a
 * mount came or went on one of `paths` or a directory above it. Others (a mount under /mnt, say)
 * are reported but do not fail a test.
 */
export function coversPaths(change: string, paths: readonly string[]): boolean {
  const on = change.lastIndexOf(' on ');
  if (!/^[+-] /.test(change) || on < 0) return true;
  const mountPoint = change.slice(on + ' on '.length);
  return paths.some((p) => p === mountPoint || p.startsWith(mountPoint === '/' ? '/' : `${mountPoint}/`));
}

/** What a lab story reads of the machine: its current directory, the temporary directory, node, /etc's CA file, the labs' directories. */
export function storyPaths(): string[] {
  return [process.cwd(), tmpdir(), process.execPath, '/etc/ssl/certs', LAB_ROOT, NETNS_DIR];
}

export interface ViewWatch {
  /**
   * What changed since the last call — each moment the view moved, with its changes, and what is
   * still different from the start — or undefined when nothing that `paths` depend on did.
   */
  take(paths?: readonly string[]): string | undefined;
  stop(): void;
}

const time = (at: Date) => at.toISOString().slice(11, 23);

/** Looks at the view every `everyMs` (a timer that never keeps the process alive) from now on. */
export function watchMachineView(everyMs = 250): ViewWatch {
  const start = readMachineView();
  let last = start;
  let moments: { readonly at: string; readonly changes: readonly string[] }[] = [];
  const look = () => {
    const now = readMachineView();
    const changes = viewChanges(last, now);
    if (changes.length === 0) return;
    last = now;
    const at = time(new Date());
    // Said at once, in the worker's output, whatever the test then does.
    console.warn(`the machine's view changed under this test process at ${at} UTC: ${changes.join('; ')}`);
    if (moments.length < 20) moments.push({ at, changes });
  };
  const timer = setInterval(look, everyMs);
  timer.unref();
  return {
    take(paths = storyPaths()) {
      look();
      const seen = moments;
      moments = [];
      const still = viewChanges(start, last);
      if (![...seen.flatMap((m) => m.changes), ...still].some((c) => coversPaths(c, paths))) return undefined;
      return [
        "the machine changed under this test process (a mount in the machine's own namespace, not the product):",
        ...seen.map((m) => `  at ${m.at} UTC: ${m.changes.join('; ')}`),
        ...(still.length ? [`  still different from the start: ${still.join('; ')}`] : []),
      ].join('\n');
    },
    stop: () => clearInterval(timer),
  };
}
