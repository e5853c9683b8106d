/**
 * Which hooks a host's manager runs, as data, for `lab reboot`'s report: which files of the hook
 * directory each dispatcher accepts and in what order (the real dispatchers run them; this only
 * explains a file they skip), and which if-up.d scripts a real `ifup -a -v` ran. Pure.
 */
import type { Manager } from '../inventory/model.js';

/** One line of the listing script: `find -L DIR -printf '%f\t%U\t%G\t%m\t%y\n'`. */
export interface HookDirEntry {
  readonly name: string;
  readonly uid: number;
  readonly gid: number;
  /** Permission bits including set-id bits, e.g. 0o4755. */
  readonly mode: number;
  /** find's %y after following symlinks: f regular, d directory, l broken link, ... */
  readonly type: string;
}

export function parseHookListing(text: string): HookDirEntry[] {
  return text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      const [name = '', uid = '', gid = '', mode = '', type = ''] = line.split('\t');
      return { name, uid: Number(uid), gid: Number(gid), mode: parseInt(mode, 8), type };
    });
}

/** Where each dispatcher looks for the scripts it runs. */
const DISPATCHER_DIRS: Readonly<Record<Exclude<Manager, 'ifupdown'>, string>> = {
  networkmanager: '/etc/NetworkManager/dispatcher.d',
  netplan: '/etc/networkd-dispatcher/routable.d',
};

export function hookDir(manager: Exclude<Manager, 'ifupdown'>): string {
  return DISPATCHER_DIRS[manager];
}

/** NetworkManager-dispatcher skips editor backups and package-manager leftovers by name. */
const NM_IGNORED_SUFFIXES = [
  '~',
  '.rpmsave',
  '.rpmorig',
  '.rpmnew',
  '.dpkg-old',
  '.dpkg-dist',
  '.dpkg-new',
  '.dpkg-bak',
  '.dpkg-tmp',
];

/**
 * Why a dispatcher would skip this file, or undefined if it runs it. Both require a regular file,
 * executable by its owner, owned by root and writable by nobody else (networkd-dispatcher also
 * wants group root; NetworkManager refuses set-UID files and backup names).
 */
export function skipReason(manager: Exclude<Manager, 'ifupdown'>, entry: HookDirEntry): string | undefined {
  if (entry.type !== 'f') return 'not a regular file';
  if ((entry.mode & 0o100) === 0) return 'not executable by its owner';
  if (entry.uid !== 0) return 'not owned by root';
  if ((entry.mode & 0o022) !== 0) return 'writable by group or others';
  if (manager === 'netplan' && entry.gid !== 0) return 'group is not root';
  if (manager === 'networkmanager') {
    if ((entry.mode & 0o4000) !== 0) return 'set-UID';
    if (entry.name.startsWith('.') || NM_IGNORED_SUFFIXES.some((s) => entry.name.endsWith(s)))
      return 'ignored name (hidden or package/editor leftover)';
  }
  return undefined;
}

/** Scripts a dispatcher runs from a listing, in its order (byte order of the names). */
export function runnableHooks(manager: Exclude<Manager, 'ifupdown'>, entries: readonly HookDirEntry[]): string[] {
  return entries
    .filter((e) => skipReason(manager, e) === undefined)
    .map((e) => e.name)
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

export interface IfupHookRun {
  readonly script: string;
  /** The IFACE the script saw: the interface being configured, or `--all` for the final run of `ifup -a`. */
  readonly iface: string;
}

/**
 * The if-up.d scripts a `ifup -a -v` ran, in order, each with the interface it ran for. ifup runs
 * if-up.d once per interface it configures, then once more with IFACE=--all.
 */
export function ifupHookRuns(output: string): IfupHookRun[] {
  const runs: IfupHookRun[] = [];
  let pending: string | undefined;
  let current: string | undefined;
  for (const line of output.split('\n')) {
    const configure = /^ifup: configuring interface ([^=\s]+)=/.exec(line);
    const runParts = /^run-parts\s.*\s(\S+)$/.exec(line);
    const executing = /^run-parts: executing (\S+)/.exec(line);
    if (configure) pending = configure[1];
    else if (executing) {
      if (current !== undefined) runs.push({ script: executing[1]!, iface: current });
    } else if (runParts) {
      // An if-up.d pass belongs to the interface configured just before it; one without is IFACE=--all.
      current = runParts[1]!.endsWith('/if-up.d') ? (pending ?? '--all') : undefined;
      if (current !== undefined) pending = undefined;
    }
  }
  return runs;
}
