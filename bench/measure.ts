/**
 * Measuring one command: wall time, CPU of its whole process tree and its peak memory (GNU time's
 * wait4 rusage, which includes every descendant the tree reaped), CPU of the whole machine
 * (/proc/stat), CPU of the lab hosts' sshd trees (each listener's own and reaped children's ticks:
 * sessions, shells and every command they ran), and SSH logins per host (sshd's "Accepted
 * publickey" lines). Linux only, like the lab.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const GNU_TIME = '/usr/bin/time';
const CLOCK_TICKS = 100;

export interface HostProbe {
  readonly id: number;
  readonly sshdLog: string;
  readonly sshdPidFile: string;
}

export interface Measurement {
  readonly exitCode: number;
  readonly wallS: number;
  /** user + system seconds of the command's process tree. */
  readonly toolCpuS: number;
  /** Largest resident set of any process in the tree (the tool itself for ibfleet and the floor). */
  readonly peakRssMiB: number | null;
  /** Busy seconds of every CPU of the machine while the command ran. */
  readonly machineCpuS: number;
  /** CPU seconds spent by the lab hosts' sshd, their sessions and everything those ran. */
  readonly hostsCpuS: number;
  /** New SSH logins per host id. */
  readonly logins: ReadonlyMap<number, number>;
  readonly stdout: string;
  readonly stderr: string;
}

export interface MeasureOptions {
  readonly env?: NodeJS.ProcessEnv;
  readonly cwd?: string;
  readonly input?: string;
  readonly hosts: readonly HostProbe[];
  /** Runs after the command exits, before the hosts are read (Ansible's persistent masters are stopped here). */
  readonly afterExit?: () => void | Promise<void>;
}

/** Busy jiffies of all CPUs: user nice system irq softirq steal (guest time is inside user). */
export function machineBusyTicks(statText = readFileSync('/proc/stat', 'utf8')): number {
  const fields = statText.split('\n', 1)[0]!.trim().split(/\s+/).slice(1).map(Number);
  const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = fields;
  return user + nice + system + irq + softirq + steal;
}

/** utime + stime + cutime + cstime of one process, in ticks (0 when it is gone). */
export function processTreeTicks(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name, which may itself contain spaces and parentheses.
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(rest[11]) + Number(rest[12]) + Number(rest[13]) + Number(rest[14]);
  } catch {
    return 0;
  }
}

function countLogins(text: string): number {
  let count = 0;
  let at = -1;
  while ((at = text.indexOf('Accepted publickey', at + 1)) >= 0) count++;
  return count;
}

interface HostSnapshot {
  readonly ticks: number;
  readonly logins: ReadonlyMap<number, number>;
}

function sshdPid(host: HostProbe): number {
  return Number(readFileSync(host.sshdPidFile, 'utf8').trim());
}

function hasChildren(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim() !== '';
  } catch {
    return false;
  }
}

/** Waits (up to `limitMs`) until no host's sshd has a session left. */
export async function settleHosts(hosts: readonly HostProbe[], limitMs = 5000): Promise<boolean> {
  const pids = hosts.map(sshdPid);
  const deadline = Date.now() + limitMs;
  while (pids.some(hasChildren)) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 10));
  }
  return true;
}

export function snapshotHosts(hosts: readonly HostProbe[]): HostSnapshot {
  let ticks = 0;
  const logins = new Map<number, number>();
  for (const h of hosts) {
    ticks += processTreeTicks(sshdPid(h));
    logins.set(h.id, existsSync(h.sshdLog) ? countLogins(readFileSync(h.sshdLog, 'utf8')) : 0);
  }
  return { ticks, logins };
}

/** GNU time's -o file: `%e %U %S %M`, after a "Command exited with non-zero status" line when it failed. */
export function parseTimeOutput(text: string): { userS: number; sysS: number; maxRssKiB: number } | undefined {
  const last = text.trim().split('\n').pop() ?? '';
  const match = /^([\d.]+) ([\d.]+) ([\d.]+) (\d+)$/.exec(last.trim());
  if (!match) return undefined;
  return { userS: Number(match[2]), sysS: Number(match[3]), maxRssKiB: Number(match[4]) };
}

/** Our own reaped children's CPU (fields cutime + cstime of /proc/self/stat): the fallback without GNU time. */
function reapedChildrenTicks(): number {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(rest[13]) + Number(rest[14]);
}

export async function measure(argv: readonly string[], options: MeasureOptions): Promise<Measurement> {
  const dir = await mkdtemp(join(tmpdir(), 'ibfleet-bench-time-'));
  try {
    return await measureWith(join(dir, 'time'), argv, options);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** measure(), GNU time writing its figures to `timeFile` where the machine has it. */
async function measureWith(timeFile: string, argv: readonly string[], options: MeasureOptions): Promise<Measurement> {
  const gnuTime = existsSync(GNU_TIME);
  const command = gnuTime ? [GNU_TIME, '-f', '%e %U %S %M', '-o', timeFile, '--', ...argv] : [...argv];

  const before = snapshotHosts(options.hosts);
  const machineBefore = machineBusyTicks();
  const childrenBefore = gnuTime ? 0 : reapedChildrenTicks();
  const started = process.hrtime.bigint();
  const { exitCode, stdout, stderr } = await new Promise<{ exitCode: number; stdout: string; stderr: string }>(
    (resolve, reject) => {
      const child = spawn(command[0]!, command.slice(1), {
        env: options.env ?? process.env,
        cwd: options.cwd,
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      const out: Buffer[] = [];
      const err: Buffer[] = [];
      child.stdout.on('data', (b: Buffer) => out.push(b));
      child.stderr.on('data', (b: Buffer) => err.push(b));
      child.on('error', reject);
      child.on('close', (code, signal) =>
        resolve({
          exitCode: code ?? (signal ? 128 : 1),
          stdout: Buffer.concat(out).toString('utf8'),
          stderr: Buffer.concat(err).toString('utf8'),
        }),
      );
      child.stdin.end(options.input ?? '');
    },
  );
  const wallS = Number(process.hrtime.bigint() - started) / 1e9;
  await options.afterExit?.();
  // A session's sshd finishes a moment after the client left; its CPU counts once the listener reaps it.
  await settleHosts(options.hosts);
  const machineAfter = machineBusyTicks();
  const after = snapshotHosts(options.hosts);

  let toolCpuS: number;
  let peakRssMiB: number | null = null;
  if (gnuTime) {
    const parsed = parseTimeOutput(await readFile(timeFile, 'utf8').catch(() => ''));
    toolCpuS = parsed ? parsed.userS + parsed.sysS : Number.NaN;
    peakRssMiB = parsed ? parsed.maxRssKiB / 1024 : null;
  } else {
    toolCpuS = (reapedChildrenTicks() - childrenBefore) / CLOCK_TICKS;
  }

  const logins = new Map<number, number>();
  for (const [id, count] of after.logins) logins.set(id, count - (before.logins.get(id) ?? 0));
  return {
    exitCode,
    wallS,
    toolCpuS,
    peakRssMiB,
    machineCpuS: (machineAfter - machineBefore) / CLOCK_TICKS,
    hostsCpuS: (after.ticks - before.ticks) / CLOCK_TICKS,
    logins,
    stdout,
    stderr,
  };
}

/** Busy CPU seconds per second of the machine over `ms`, before anything runs: the background other work adds. */
export async function backgroundLoad(ms = 2000): Promise<number> {
  const before = machineBusyTicks();
  await new Promise((r) => setTimeout(r, ms));
  return (machineBusyTicks() - before) / CLOCK_TICKS / (ms / 1000);
}

const NEIGH = '/proc/sys/net/ipv4/neigh/default';
/** What a fleet of lab hosts needs: every namespace's ARP entries share one kernel table. */
export const NEIGH_THRESHOLDS = { gc_thresh1: 1024, gc_thresh2: 8192, gc_thresh3: 16384 } as const;

/**
 * The kernel keeps one ARP table for all network namespaces, sized by the machine's gc_thresh*
 * (default 128/512/1024). Hundreds of lab hosts — each with management and fabric neighbours, and
 * a verify that pings many peers at once — overflow it, and pings fail with "sendmsg: No buffer
 * space available". Raises the thresholds for the benchmark's duration (never lowers them) and
 * returns the function that puts the old values back.
 */
export function raiseNeighbourTable(log: (line: string) => void): () => void {
  const before = new Map<string, string>();
  for (const [key, want] of Object.entries(NEIGH_THRESHOLDS)) {
    const file = `${NEIGH}/${key}`;
    const current = readFileSync(file, 'utf8').trim();
    if (Number(current) >= want) continue;
    before.set(file, current);
    writeFileSync(file, String(want));
  }
  if (before.size)
    log(
      `raised ${[...before.keys()].map((f) => f.split('/').pop()).join(', ')} of the machine's ARP table for the benchmark (restored at the end)`,
    );
  const restore = () => {
    for (const [file, value] of before) writeFileSync(file, value);
    before.clear();
    pendingRestores.delete(restore);
  };
  pendingRestores.add(restore);
  return restore;
}

const pendingRestores = new Set<() => void>();

/** Puts back every limit still raised: for an interrupt, which skips the benchmark's `finally`. */
export function restoreRaisedLimits(): void {
  for (const restore of [...pendingRestores]) restore();
}
