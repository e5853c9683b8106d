/**
 * `lab down`: removes every process, mount, namespace, link and file of a lab. It works from what
 * it finds — namespaces named `ibfl-<name>-…`, the state directory, the mount table — so it also
 * cleans up after a crashed `lab up`, and finding nothing is a quiet success.
 */
import { existsSync, readFileSync } from 'node:fs';
import { readdir, rm, rmdir, stat } from 'node:fs/promises';
import { LabError, tail } from '../errors.js';
import {
  LAB_ROOT,
  NETNS_DIR,
  checkLabName,
  hostPaths,
  isLabName,
  isLabNamespace,
  labDir,
  labOfNamespace,
  rootLinkName,
} from './names.js';
import { pidsIn, signal, waitUntil } from './processes.js';
import { releaseNeighbourTable } from './neigh.js';
import { readLabState, readSshdPid } from './state.js';
import { run } from './system.js';

export interface LabDownResult {
  readonly name: string;
  /** Whether anything of the lab was there. */
  readonly found: boolean;
  readonly processes: number;
  readonly namespaces: number;
  readonly mounts: number;
  readonly rootLink: boolean;
  readonly dir: boolean;
}

const WAIT_MS = 15_000;

export async function labDown(name: string): Promise<LabDownResult> {
  checkLabName(name);
  const dir = labDir(name);
  const state = await readLabState(name);
  const rootLink = state?.plan.rootLink ?? rootLinkName(name);
  const namespaces = await labNamespaces(name);
  const mountsBefore = mountPointsUnder(dir);
  const linkPresent = existsSync(`/sys/class/net/${rootLink}`);
  const dirPresent = existsSync(dir);
  if (!namespaces.length && !mountsBefore.length && !linkPresent && !dirPresent) {
    return { name, found: false, processes: 0, namespaces: 0, mounts: 0, rootLink: false, dir: false };
  }

  const processes = await killLabProcesses(name, namespaces, dir);
  await unmountUnder(dir);
  if (namespaces.length) {
    await run(['ip', '-force', '-batch', '-'], { input: namespaces.map((ns) => `netns delete ${ns}\n`).join('') });
  }
  // The root link's peer lives in the switch namespace; it goes when the kernel has dismantled it.
  if (linkPresent && !(await waitUntil(() => !existsSync(`/sys/class/net/${rootLink}`), WAIT_MS))) {
    await run(['ip', 'link', 'delete', rootLink]);
  }
  await rm(dir, { recursive: true, force: true });
  await releaseNeighbourTable(name);
  await rmdir(LAB_ROOT).catch(() => undefined);

  const leftovers = [
    ...(await labNamespaces(name)),
    ...mountPointsUnder(dir),
    ...(existsSync(`/sys/class/net/${rootLink}`) ? [rootLink] : []),
    ...(existsSync(dir) ? [dir] : []),
  ];
  if (leftovers.length)
    throw new LabError('lab down', `lab ${name} could not be removed completely`, {
      stderrTail: tail(leftovers.join('\n')),
    });
  return {
    name,
    found: true,
    processes,
    namespaces: namespaces.length,
    mounts: mountsBefore.length,
    rootLink: linkPresent,
    dir: dirPresent,
  };
}

/** Names of every lab with anything left on this machine: state directories and namespaces. */
export async function listLabs(): Promise<string[]> {
  const names = new Set<string>();
  if (existsSync(LAB_ROOT)) for (const entry of await readdir(LAB_ROOT)) if (isLabName(entry)) names.add(entry);
  if (existsSync(NETNS_DIR)) {
    for (const ns of await readdir(NETNS_DIR)) {
      const lab = labOfNamespace(ns);
      if (lab !== undefined) names.add(lab);
    }
  }
  return [...names].sort();
}

export async function labDownAll(): Promise<LabDownResult[]> {
  const results: LabDownResult[] = [];
  for (const name of await listLabs()) results.push(await labDown(name));
  return results;
}

async function labNamespaces(name: string): Promise<string[]> {
  if (!existsSync(NETNS_DIR)) return [];
  return (await readdir(NETNS_DIR)).filter((ns) => isLabNamespace(name, ns));
}

function mountPointsUnder(dir: string): string[] {
  const text = readFileSync('/proc/self/mountinfo', 'utf8');
  return text
    .split('\n')
    .map((line) => line.split(' ')[4])
    .filter((mp): mp is string => mp !== undefined && (mp === dir || mp.startsWith(`${dir}/`)));
}

/**
 * Detaches the private bind with every namespace file in it at once (one unmount, not one per
 * file: each waits for an RCU grace period). Its processes are gone, so nothing keeps it busy; the
 * host mount namespaces end with it.
 */
async function unmountUnder(dir: string): Promise<void> {
  if (mountPointsUnder(dir).includes(dir)) await run(['umount', '--lazy', dir]);
  const stray = mountPointsUnder(dir).sort((a, b) => b.length - a.length);
  if (stray.length) await run(['umount', '--lazy', ...stray]);
}

/**
 * Every process in one of the lab's namespaces, found by namespace identity in /proc — never by
 * name. sshd first (its pid file, checked against that set), then the rest; SIGTERM, then SIGKILL.
 */
async function killLabProcesses(name: string, namespaces: readonly string[], dir: string): Promise<number> {
  const nsfsDevice = (await stat('/proc/self/ns/net')).dev;
  const identities = new Set<string>();
  const nsFiles = [...namespaces.map((ns) => `${NETNS_DIR}/${ns}`)];
  const hostIds = existsSync(`${dir}/hosts`)
    ? (await readdir(`${dir}/hosts`)).map(Number).filter(Number.isInteger)
    : [];
  for (const id of hostIds) nsFiles.push(hostPaths(name, id).mountNs, hostPaths(name, id).utsNs);
  for (const file of nsFiles) {
    const st = await stat(file).catch(() => undefined);
    // Only a bound namespace file has the nsfs device; an unbound placeholder is an ordinary file.
    if (st && st.dev === nsfsDevice) identities.add(String(st.ino));
  }
  if (identities.size === 0) return 0;

  const pids = await pidsIn(identities);
  if (pids.size === 0) return 0;
  const sshd: number[] = [];
  for (const id of hostIds) {
    const pid = await readSshdPid(name, id);
    if (pid !== undefined && pids.has(pid)) sshd.push(pid);
  }
  signal(sshd, 'SIGTERM');
  signal([...pids], 'SIGTERM');
  if (!(await waitUntil(async () => (await pidsIn(identities)).size === 0, 2000))) {
    signal([...(await pidsIn(identities))], 'SIGKILL');
    await waitUntil(async () => (await pidsIn(identities)).size === 0, 5000);
  }
  return pids.size;
}
