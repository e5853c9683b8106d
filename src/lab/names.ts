/**
 * Every name and path a lab uses, derived from the lab name alone — so `lab down` can find the
 * leftovers of a crashed `lab up` without any state file, and `labExec` needs nothing but the name.
 * Pure.
 */
import { createHash } from 'node:crypto';
import { BugError, UsageError } from '../errors.js';

export const LAB_ROOT = '/run/ibfleet-lab';
export const NETNS_DIR = '/run/netns';
export const DEFAULT_LAB_NAME = 'default';

/** Short enough for every derived name, and made of characters that never need quoting. */
const LAB_NAME = /^[a-z0-9][a-z0-9_-]{0,31}$/;
/** Linux IFNAMSIZ is 16 with the NUL. */
const IFNAME_MAX = 15;
const ROOT_LINK_PREFIX = 'ibfl-';

export function isLabName(name: string): boolean {
  return LAB_NAME.test(name);
}

export function checkLabName(name: string): string {
  if (!isLabName(name)) {
    throw new UsageError(
      `lab name ${JSON.stringify(name)} is not allowed: use 1-32 characters of a-z 0-9 _ -, starting with a letter or digit`,
    );
  }
  return name;
}

/** ` --name NAME` as printed in a command line; nothing for the default lab. */
export function labNameOption(name: string): string {
  return name === DEFAULT_LAB_NAME ? '' : ` --name ${name}`;
}

export function labDir(name: string): string {
  return `${LAB_ROOT}/${name}`;
}

export function switchNamespace(name: string): string {
  return `ibfl-${name}-sw`;
}

export function hostNamespace(name: string, id: number): string {
  return `ibfl-${name}-h${id}`;
}

/** `ibfl-<name>-sw` and `ibfl-<name>-h<H>`, and nothing that belongs to a lab whose name merely starts the same. */
export function isLabNamespace(name: string, namespace: string): boolean {
  const rest = namespace.startsWith(`ibfl-${name}-`) ? namespace.slice(`ibfl-${name}-`.length) : undefined;
  return rest !== undefined && /^(sw|h\d+)$/.test(rest);
}

/** The lab a namespace belongs to, for `lab down --all`; undefined for anything not ours. */
export function labOfNamespace(namespace: string): string | undefined {
  const match = /^ibfl-(.+)-(sw|h\d+)$/.exec(namespace);
  return match && isLabName(match[1]!) ? match[1] : undefined;
}

/**
 * The one link a lab puts in the machine's own namespace: `ibfl-<name>` when that fits in 15
 * characters, else a prefix of the name plus a hash of all of it, so long names stay distinct.
 */
export function rootLinkName(name: string): string {
  const room = IFNAME_MAX - ROOT_LINK_PREFIX.length;
  if (name.length <= room) return ROOT_LINK_PREFIX + name;
  const hash = createHash('sha256').update(name).digest('hex').slice(0, 5);
  return `${ROOT_LINK_PREFIX}${name.slice(0, room - hash.length)}${hash}`;
}

/** Switch-side ends of a host's veths (they live in the switch namespace, so they never collide). */
export function mgmtPortName(id: number): string {
  return `m${id}`;
}
export function fabricPortName(id: number, nic: number): string {
  return `f${id}n${nic}`;
}

export const MGMT_IFACE = 'mgmt0';
export const SWITCH_UPLINK = 'up0';
export const MGMT_BRIDGE = 'br-mgmt';
export const FABRIC_BRIDGE = 'br-fabric';

export interface LabPaths {
  readonly dir: string;
  readonly state: string;
  readonly inventory: string;
  readonly knownHosts: string;
  readonly identity: string;
}

export function labPaths(name: string): LabPaths {
  const dir = labDir(name);
  return {
    dir,
    state: `${dir}/state.json`,
    inventory: `${dir}/inventory.yaml`,
    knownHosts: `${dir}/known_hosts`,
    identity: `${dir}/id_ed25519`,
  };
}

/** A host's corner of the state directory: its /etc overlay layers, /root, /run and namespace files. */
export interface HostPaths {
  readonly dir: string;
  /** Overlay upper directory mirrors the host's `/`: `upper/etc/...`. */
  readonly upper: string;
  readonly work: string;
  /** A host on a suite: where its root overlay is mounted before it becomes its `/` (scripts.ts). */
  readonly newRoot: string;
  readonly root: string;
  readonly run: string;
  /** Bind-mounted mount and UTS namespace files (kept alive without a process). */
  readonly mountNs: string;
  readonly utsNs: string;
  readonly netNs: string;
  readonly sshdPid: string;
  readonly sshdLog: string;
  /** Bound on /var/lib/NetworkManager: NetworkManager's state (timestamps, secret key) is the host's own. */
  readonly nmState: string;
  /** The lab's bookkeeping in the host's /run (HOST_BOOT_DIR): daemons' pid files and logs. */
  readonly boot: string;
}

export function hostPaths(name: string, id: number): HostPaths {
  const dir = `${labDir(name)}/hosts/${id}`;
  return {
    dir,
    upper: `${dir}/upper`,
    work: `${dir}/work`,
    newRoot: `${dir}/rootfs`,
    root: `${dir}/root`,
    run: `${dir}/run`,
    mountNs: `${dir}/mnt`,
    utsNs: `${dir}/uts`,
    netNs: `${NETNS_DIR}/${hostNamespace(name, id)}`,
    sshdPid: `${dir}/run/sshd.pid`,
    sshdLog: `${dir}/run/sshd.log`,
    nmState: `${dir}/var-lib-NetworkManager`,
    boot: `${dir}/run/ibfleet-lab-host`,
  };
}

/**
 * Where a path of the host's own view (`/etc/...`, `/run/...`, `/root/...`) is kept on the machine
 * before the host's mounts exist.
 */
export function backingPath(paths: HostPaths, viewPath: string): string {
  for (const [prefix, dir] of [
    ['/etc', `${paths.upper}/etc`],
    ['/run', paths.run],
    ['/root', paths.root],
  ] as const) {
    if (viewPath === prefix || viewPath.startsWith(`${prefix}/`)) return dir + viewPath.slice(prefix.length);
  }
  throw new BugError(`${viewPath} is outside the host's private /etc, /run and /root`);
}

/**
 * The PCI buses of a GPU node's NICs in rail order, as a DGX-class node spreads them over two CPU
 * sockets: the lab's interface names for a host of more than two NICs (`ibp12s0`, `ibp75s0`, …).
 */
export const GPU_NODE_BUSES: readonly number[] = [
  12, 75, 141, 186, 18, 84, 151, 200, 13, 76, 142, 187, 19, 85, 152, 201,
];

export function gpuNodeInterfaces(count: number): string[] {
  return GPU_NODE_BUSES.slice(0, count).map((bus) => `ibp${bus}s0`);
}

/** The link layers a lab host's RDMA ports can have: InfiniBand (the default) or Ethernet (RoCE). */
export const LINK_LAYERS = ['infiniband', 'ethernet'] as const;
export type LabLinkLayer = (typeof LINK_LAYERS)[number];
