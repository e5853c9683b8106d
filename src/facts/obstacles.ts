/**
 * What stands where ibfleet writes: at each path it may own, something that is not a file it can
 * replace (a directory — rename would move the new file into it —, a link to one, a device, a
 * fifo, a socket), and at each directory it writes in, something that is not a directory. The probe
 * reads them (OBSTACLE_PROBE) and the plan refuses a host where one stands in the way of a file it
 * writes, naming it (plan/host-plan.ts), before anything changes. A regular file, or a link to one
 * or to nothing, is ibfleet's to replace: the link itself is replaced, and kept for the rollback.
 * Pure.
 */
import { shellQuote } from '../script/shell.js';

export type ObstacleKind =
  | 'directory'
  | 'link to a directory'
  | 'block device'
  | 'character device'
  | 'fifo'
  | 'socket'
  | 'not a directory'
  | 'link to nothing';

/** Where ibfleet writes: its files' paths, and the directories they and their staged copies live in. */
export interface WriteTargets {
  readonly files: readonly string[];
  readonly dirs: readonly string[];
}

/**
 * The probe's lines: `PATH KIND` per obstacle. The shell's own tests only, no process: `-d` and
 * `-f` follow a link (a link to a directory is a directory to mv), `-L` does not. What is usual —
 * nothing at a file's path, or a file; a directory where one goes — is told by the first test or
 * two (a test is a stat; a probe makes some 70 of them here, not 130).
 */
export function obstacleProbe(targets: WriteTargets): string[] {
  return [
    '\ts in-the-way',
    `\tfor p in ${targets.files.map(shellQuote).join(' ')}; do`,
    '\t\t{ [ -e "$p" ] && [ ! -f "$p" ]; } || continue',
    '\t\tif [ -d "$p" ]; then if [ -L "$p" ]; then echo "link to a directory $p"; else echo "directory $p"; fi',
    '\t\telif [ -b "$p" ]; then echo "block device $p"; elif [ -c "$p" ]; then echo "character device $p"',
    '\t\telif [ -p "$p" ]; then echo "fifo $p"; elif [ -S "$p" ]; then echo "socket $p"; fi',
    '\tdone',
    `\tfor p in ${targets.dirs.map(shellQuote).join(' ')}; do`,
    '\t\t[ ! -d "$p" ] || continue',
    '\t\tif [ -L "$p" ] && [ ! -e "$p" ]; then echo "link to nothing $p"; elif [ -e "$p" ]; then echo "not a directory $p"; fi',
    '\tdone',
  ];
}

const KINDS: readonly ObstacleKind[] = [
  'link to a directory',
  'directory',
  'block device',
  'character device',
  'fifo',
  'socket',
  'not a directory',
  'link to nothing',
];

/** The `in-the-way` section: path → what stands there. */
export function parseObstacles(lines: readonly string[]): Map<string, ObstacleKind> {
  const out = new Map<string, ObstacleKind>();
  for (const line of lines) {
    const kind = KINDS.find((k) => line.startsWith(`${k} /`));
    if (kind) out.set(line.slice(kind.length + 1), kind);
  }
  return out;
}
