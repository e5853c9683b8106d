/**
 * Finding and ending lab processes. A process belongs to a lab host when it is in one of the host's
 * namespaces (read from /proc, never guessed from a name), and the lab ends processes only by the
 * PIDs found that way — other helpers' and users' daemons of the same name are never touched.
 */
import { existsSync } from 'node:fs';
import { readdir, readFile, readlink, stat } from 'node:fs/promises';
import { HOST_BOOT_DIR } from './manager-boot.js';
import { hostPaths } from './names.js';

export interface LabProcess {
  readonly pid: number;
  readonly ppid: number;
  /** argv joined by spaces. */
  readonly command: string;
}

/** PIDs of every process in one of the namespaces (inode numbers of nsfs files) of `identities`. */
export async function pidsIn(identities: ReadonlySet<string>): Promise<Set<number>> {
  const found = new Set<number>();
  const entries = await readdir('/proc');
  await Promise.all(
    entries
      .filter((e) => /^\d+$/.test(e) && Number(e) !== process.pid)
      .map(async (e) => {
        for (const kind of ['net', 'mnt', 'uts']) {
          const link = await readlink(`/proc/${e}/ns/${kind}`).catch(() => '');
          const ino = /\[(\d+)\]/.exec(link)?.[1];
          if (ino !== undefined && identities.has(ino)) {
            found.add(Number(e));
            return;
          }
        }
      }),
  );
  return found;
}

export function signal(pids: Iterable<number>, sig: NodeJS.Signals): void {
  for (const pid of pids) {
    try {
      process.kill(pid, sig);
    } catch {
      // already gone
    }
  }
}

export async function waitUntil(
  done: () => boolean | Promise<boolean>,
  timeoutMs: number,
  pollMs = 25,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!(await done())) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, pollMs));
  }
  return true;
}

/** The inode of a host's network namespace, or undefined when the host is gone. */
async function hostNetIdentity(lab: string, id: number): Promise<string | undefined> {
  const st = await stat(hostPaths(lab, id).netNs).catch(() => undefined);
  return st ? String(st.ino) : undefined;
}

/** Every process in the host's network namespace, with its parent and command line. */
export async function hostProcesses(lab: string, id: number): Promise<LabProcess[]> {
  const identity = await hostNetIdentity(lab, id);
  if (identity === undefined) return [];
  const pids = await pidsIn(new Set([identity]));
  const out: LabProcess[] = [];
  await Promise.all(
    [...pids].map(async (pid) => {
      const [stat, cmdline] = await Promise.all([
        readFile(`/proc/${pid}/stat`, 'utf8').catch(() => ''),
        readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => ''),
      ]);
      // comm may hold spaces and parentheses: the fields after the last ')' are fixed.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (stat) out.push({ pid, ppid, command: cmdline.split('\0').filter(Boolean).join(' ') });
    }),
  );
  return out.sort((a, b) => a.pid - b.pid);
}

/**
 * The daemons the lab started in a host (their pid files in the host's HOST_BOOT_DIR) and every
 * process below them — NetworkManager's dispatcher, which D-Bus starts, and any hook still running.
 * Each PID is checked to be in the host's namespace before it counts: a stale pid file never
 * names another process.
 */
export async function hostDaemons(lab: string, id: number): Promise<LabProcess[]> {
  const boot = hostPaths(lab, id).boot;
  const processes = await hostProcesses(lab, id);
  const byPid = new Map(processes.map((p) => [p.pid, p]));
  const roots = new Set<number>();
  if (existsSync(boot)) {
    for (const file of (await readdir(boot)).filter((f) => f.endsWith('.pid'))) {
      const pid = Number((await readFile(`${boot}/${file}`, 'utf8').catch(() => '')).trim());
      if (byPid.has(pid)) roots.add(pid);
    }
  }
  const chosen = new Set(roots);
  for (let grew = true; grew;) {
    grew = false;
    for (const p of processes) if (!chosen.has(p.pid) && chosen.has(p.ppid)) grew = chosen.add(p.pid) !== undefined;
  }
  return processes.filter((p) => chosen.has(p.pid));
}

/**
 * Whether process `pid` still runs. A process that has exited but is not reaped yet (a zombie) does
 * not: it holds no namespace, file, socket or lock any more, and its /proc entry stays only until its
 * parent waits for it — for a daemon the lab started, the machine's init, which may take a second or
 * more (what every lab reboot and restart waited for, as long as its /proc/PID/ns directory stayed).
 */
export function isRunning(pid: number): boolean {
  return existsSync(`/proc/${pid}/ns/net`);
}

/** Ends a host's daemons by PID: SIGTERM, and SIGKILL for what is left after 5 s. Returns how many. */
export async function stopHostDaemons(lab: string, id: number): Promise<number> {
  const daemons = (await hostDaemons(lab, id)).map((p) => p.pid);
  if (daemons.length === 0) return 0;
  const alive = () => daemons.filter(isRunning);
  signal(daemons, 'SIGTERM');
  if (!(await waitUntil(() => alive().length === 0, 5000))) {
    signal(alive(), 'SIGKILL');
    await waitUntil(() => alive().length === 0, 5000);
  }
  return daemons.length;
}

/** A hook (or the routing script it runs) is running in the host: its command names a hook directory. */
const HOOK_COMMAND =
  /\/etc\/(NetworkManager\/dispatcher\.d|networkd-dispatcher|network\/if-[a-z-]+\.d)\/|\/etc\/ibfleet\//;

/**
 * Waits until no hook has run in the host for `quietMs` — the dispatchers start hooks a moment after
 * the manager reports a NIC up, so one look is not enough. False after `timeoutMs`.
 */
export async function waitForHooksQuiet(lab: string, id: number, quietMs = 400, timeoutMs = 20_000): Promise<boolean> {
  let quietSince = Date.now();
  return waitUntil(
    async () => {
      const busy = (await hostProcesses(lab, id)).some(
        (p) => HOOK_COMMAND.test(p.command) && !p.command.includes(HOST_BOOT_DIR),
      );
      if (busy) quietSince = Date.now();
      return Date.now() - quietSince >= quietMs;
    },
    timeoutMs,
    100,
  );
}
