/**
 * The machine's neighbour (ARP) table limits while labs are up. Every network namespace's ARP
 * entries count against one kernel-wide table sized by net.ipv4.neigh.default.gc_thresh1..3
 * (default 128/512/1024): a 20-host lab verifying its full matrix holds ~1 600 fabric entries at
 * once and, past gc_thresh3, every send fails with "No buffer space available". So `lab up` raises
 * the thresholds to what all labs that are up need together, and the last `lab down` puts back what
 * the machine had. The record (original values, which labs hold a raise) lives in LAB_ROOT under a
 * lock, so several labs coming and going at once agree; values someone raised higher meanwhile are
 * never lowered.
 */
import { existsSync } from 'node:fs';
import { mkdir, readFile, rename, rm, rmdir, stat, writeFile } from 'node:fs/promises';
import { LAB_ROOT } from './names.js';
import type { LabPlan } from './plan.js';

const KEYS = ['gc_thresh1', 'gc_thresh2', 'gc_thresh3'] as const;
type Thresholds = Record<(typeof KEYS)[number], number>;

/** Where the limits and the record live; tests point them at a directory of their own. */
export interface NeighPlaces {
  /** The directory holding gc_thresh1..3. */
  readonly neigh: string;
  /** The directory holding the record and its lock. */
  readonly root: string;
}

export const MACHINE: NeighPlaces = { neigh: '/proc/sys/net/ipv4/neigh/default', root: LAB_ROOT };
const recordOf = (at: NeighPlaces) => `${at.root}/.neigh.json`;
const lockOf = (at: NeighPlaces) => `${at.root}/.neigh.lock`;

interface NeighRecord {
  /** What the machine had before the first lab raised anything. */
  readonly original: Thresholds;
  /** Lab name → the entries it may hold. */
  readonly labs: Record<string, number>;
  /** What the labs set last (a later change by someone else is left alone). */
  readonly set: Thresholds;
}

/**
 * Entries a lab may hold at once: each fabric NIC one per other fabric NIC of its lab (a full
 * verify matrix), each host one for the controller, and the machine one per host.
 */
export function labNeighbourEntries(plan: Pick<LabPlan, 'hosts'>): number {
  const nics = plan.hosts.reduce((sum, h) => sum + h.nics.length, 0);
  return nics * nics + 2 * plan.hosts.length;
}

/** gc_thresh3 twice the entries, a power of two; 2 and 1 keep the kernel's 1:2 and 1:8. */
export function thresholdsFor(entries: number): Thresholds {
  let third = 1024;
  while (third < 2 * entries) third *= 2;
  return { gc_thresh1: third / 8, gc_thresh2: third / 2, gc_thresh3: third };
}

async function readThresholds(at: NeighPlaces): Promise<Thresholds> {
  const out = {} as Thresholds;
  for (const key of KEYS) out[key] = Number((await readFile(`${at.neigh}/${key}`, 'utf8')).trim());
  return out;
}

/** gc_thresh3 first when raising, last when lowering: the kernel wants 1 ≤ 2 ≤ 3 at every step. */
async function writeThresholds(at: NeighPlaces, values: Thresholds, raising: boolean): Promise<void> {
  for (const key of raising ? [...KEYS].reverse() : KEYS) await writeFile(`${at.neigh}/${key}`, String(values[key]));
}

/**
 * A lock directory: mkdir is atomic; one left by a crashed process is taken over after 30 s. The lab
 * root is made again where it went before the lock was taken: the last lab down of another process
 * removes it once empty (labDown), and may do so between the two mkdirs.
 */
async function locked<T>(at: NeighPlaces, fn: () => Promise<T>): Promise<T> {
  const LOCK = lockOf(at);
  for (let attempt = 0; ; attempt++) {
    try {
      await mkdir(at.root, { recursive: true, mode: 0o755 });
      await mkdir(LOCK);
      break;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' && attempt < 300) continue;
      if (code !== 'EEXIST') throw error;
      const age = Date.now() - ((await stat(LOCK).catch(() => undefined))?.mtimeMs ?? Date.now());
      if (age > 30_000 || attempt > 300) await rmdir(LOCK).catch(() => undefined);
      else await new Promise((r) => setTimeout(r, 100));
    }
  }
  try {
    return await fn();
  } finally {
    await rmdir(LOCK).catch(() => undefined);
  }
}

async function readRecord(at: NeighPlaces): Promise<NeighRecord | undefined> {
  try {
    return JSON.parse(await readFile(recordOf(at), 'utf8')) as NeighRecord;
  } catch {
    return undefined;
  }
}

async function writeRecord(at: NeighPlaces, record: NeighRecord): Promise<void> {
  await writeFile(`${recordOf(at)}.tmp`, `${JSON.stringify(record, null, 2)}\n`, { mode: 0o600 });
  await rename(`${recordOf(at)}.tmp`, recordOf(at));
}

/** Raises the machine's thresholds for every lab up, this one included; returns what they are now. */
export async function raiseNeighbourTable(
  plan: Pick<LabPlan, 'name' | 'hosts' | 'fabric'>,
  at: NeighPlaces = MACHINE,
): Promise<Thresholds | undefined> {
  if (!existsSync(at.neigh)) return undefined;
  return locked(at, async () => {
    const current = await readThresholds(at);
    const record = (await readRecord(at)) ?? { original: current, labs: {}, set: current };
    const labs = { ...record.labs, [plan.name]: labNeighbourEntries(plan) };
    const want = thresholdsFor(Object.values(labs).reduce((a, b) => a + b, 0));
    const next = Object.fromEntries(KEYS.map((k) => [k, Math.max(current[k], want[k])])) as Thresholds;
    if (KEYS.some((k) => next[k] !== current[k])) await writeThresholds(at, next, true);
    await writeRecord(at, { original: record.original, labs, set: next });
    return next;
  });
}

/**
 * This lab no longer needs a raise. The last lab to go puts back the machine's original values —
 * for each value still at what the labs set (one changed by someone else since is theirs).
 */
export async function releaseNeighbourTable(name: string, at: NeighPlaces = MACHINE): Promise<void> {
  if (!existsSync(recordOf(at))) return;
  await locked(at, async () => {
    const record = await readRecord(at);
    if (!record || !(name in record.labs)) return;
    const labs = Object.fromEntries(Object.entries(record.labs).filter(([lab]) => lab !== name));
    if (Object.keys(labs).length > 0) return void (await writeRecord(at, { ...record, labs }));
    const current = await readThresholds(at);
    const back = Object.fromEntries(
      KEYS.map((k) => [k, current[k] === record.set[k] ? record.original[k] : current[k]]),
    ) as Thresholds;
    await writeThresholds(at, back, false);
    await rm(recordOf(at), { force: true });
  });
}
