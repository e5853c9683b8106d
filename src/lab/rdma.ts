/**
 * The lab's RDMA side, on the machine: each host's emulated sysfs layer (see rdma-emulation.ts)
 * written before it boots, the rping stand-in every RDMA host finds on its PATH, and `lab port`,
 * which changes a port at run time — its state (and with it the interface's carrier, as a real
 * IPoIB interface has carrier only while its port is ACTIVE), its rate, the IPoIB mode and MTU —
 * and the breaks a fabric has that the routing cannot see: `lab gid` (a RoCE port's GID table
 * reordered, or left with the link-local entries only), `lab sm` (a port under another subnet
 * manager: its SM LID and subnet prefix), `lab pkey` (a port's P_Key table).
 */
import { existsSync } from 'node:fs';
import { chmod, mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { UsageError } from '../errors.js';
import { PACKAGE_ROOT } from '../package-root.js';
import { NETNS_DIR, hostPaths } from './names.js';
import type { LabHost, LabPlan } from './plan.js';
import {
  CONFIGFS_DIR,
  DEFAULT_SUBNET_PREFIX,
  IPOIB_MTU,
  carrierIn,
  gidFiles,
  isRoce,
  pkeyTable,
  portDir,
  portFiles,
  renderRdmaCmConfigfs,
  renderSysfsTree,
  roceGidTable,
  roceIid,
  type GidOrder,
  type IpoibMode,
  type PortStateName,
} from './rdma-emulation.js';
import { requireLab } from './state.js';
import { renderIbvDevinfoStandIn } from './ibv-devinfo-standin.js';
import { runOk } from './system.js';

/** The layer's root on the machine; inside the host it is HOST_BOOT_DIR/sys. */
export function sysfsLayer(plan: Pick<LabPlan, 'name'>, id: number): string {
  return `${hostPaths(plan.name, id).boot}/sys`;
}

/** The directory holding the stand-in `rping`, laid over each RDMA host's /usr/bin. */
export function labBinDir(plan: Pick<LabPlan, 'dir'>): string {
  return `${plan.dir}/bin`;
}

export function hasRdma(host: LabHost): boolean {
  return host.rdma !== false;
}

export async function writeRpingStandIn(plan: LabPlan): Promise<void> {
  const dir = labBinDir(plan);
  await mkdir(dir, { recursive: true, mode: 0o755 });
  await writeFile(join(dir, 'rping'), await readFile(join(PACKAGE_ROOT, 'src/lab/rping-standin.py'), 'utf8'), {
    mode: 0o755,
  });
  await chmod(join(dir, 'rping'), 0o755);
  // ibv_devinfo: what provisioning a NIC reads of its port (the active MTU), for the emulated devices.
  await writeFile(join(dir, 'ibv_devinfo'), renderIbvDevinfoStandIn(), { mode: 0o755 });
  await chmod(join(dir, 'ibv_devinfo'), 0o755);
}

export async function writeSysfsLayer(plan: LabPlan, host: LabHost): Promise<void> {
  const root = sysfsLayer(plan, host.id);
  const tree = renderSysfsTree(host);
  for (const d of tree.dirs) await mkdir(join(root, d), { recursive: true });
  for (const f of tree.files) {
    await mkdir(dirname(join(root, f.path)), { recursive: true });
    await writeFile(join(root, f.path), `${f.content}\n`);
  }
  for (const l of tree.links) {
    await mkdir(dirname(join(root, l.path)), { recursive: true });
    await symlink(l.target, join(root, l.path));
  }
  const configfs = `${hostPaths(plan.name, host.id).boot}/${CONFIGFS_DIR}`;
  for (const f of renderRdmaCmConfigfs(host)) {
    await mkdir(dirname(join(configfs, f.path)), { recursive: true });
    await writeFile(join(configfs, f.path), `${f.content}\n`);
  }
}

export interface PortChange {
  readonly state?: PortStateName;
  readonly mode?: IpoibMode;
  readonly mtu?: number;
  /** `56 Gb/sec (4X FDR)`: a degraded link. */
  readonly rate?: string;
  /**
   * The order a RoCE port coming back ACTIVE registers its GIDs in (default kernel): after a real
   * flap it can be another, as the addresses come back racing the manager (GID_ORDERS).
   */
  readonly gids?: GidOrder;
}

export interface LabPortResult {
  readonly id: number;
  readonly iface: string;
  readonly port: string;
  readonly changed: readonly string[];
}

/**
 * A file of the layer rewritten in place (same inode): the overlay reads a lower layer's file
 * through, so the host sees the new content at once; a renamed-over file would not be seen.
 */
async function rewrite(path: string, content: string): Promise<void> {
  await writeFile(path, `${content}\n`, { flag: 'w' });
}

/** The lab, host, NIC and port directory (on the machine) a port command names; usage errors otherwise. */
async function emulatedPort(name: string, id: number, iface: string) {
  const plan = await requireLab(name);
  const host = plan.hosts.find((h) => h.id === id);
  if (!host)
    throw new UsageError(`lab ${name} has no host ${id} (its hosts: ${plan.hosts.map((h) => h.id).join(', ')})`);
  const nic = host.nics.find((n) => n.iface === iface);
  if (!nic)
    throw new UsageError(
      `host ${id} has no fabric NIC ${iface} (its NICs: ${host.nics.map((n) => n.iface).join(', ')})`,
    );
  const root = sysfsLayer(plan, id);
  const port = portDir(host, iface)!;
  if (!hasRdma(host) || !existsSync(join(root, port)))
    throw new UsageError(
      `host ${id} of lab ${name} has no emulated RDMA device (brought up with lab up --without-rdma, or by an older ibfleet)`,
    );
  const l = port.split('/');
  return { plan, host, nic, dir: join(root, port), label: `${l[l.length - 3]}/${l[l.length - 1]}` };
}

/** The IPv4 addresses on the host's interface now, in the kernel's order. */
async function liveAddresses(host: LabHost, iface: string): Promise<string[]> {
  const out = await runOk('lab: addresses', ['ip', '-n', host.namespace, '-o', '-4', 'addr', 'show', 'dev', iface]);
  return [...out.stdout.matchAll(/\binet (\d+\.\d+\.\d+\.\d+)\//g)].map((m) => m[1]!);
}

/** How long a RoCE port coming back waits for its manager to put the NIC's address back (lab port … active). */
const ADDRESS_RETURN_MS = 15_000;

/**
 * A RoCE port's GID table written anew from the interface's addresses, in `order`. The kernel adds
 * an address's GIDs when the address comes; the lab's table is files written once, so with `awaited`
 * (a port coming back, whose manager re-adds the address after the carrier) it waits for that
 * address first, within ADDRESS_RETURN_MS, and registers without it if it does not come.
 */
async function registerGids(
  host: LabHost,
  iface: string,
  dir: string,
  order: GidOrder,
  awaited?: string,
): Promise<void> {
  const [device, , port] = dir.split('/').slice(-3);
  let addresses = await liveAddresses(host, iface);
  for (const until = Date.now() + ADDRESS_RETURN_MS; awaited && !addresses.includes(awaited) && Date.now() < until;) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    addresses = await liveAddresses(host, iface);
  }
  const table = roceGidTable(roceIid(host, device!, Number(port)), addresses, order);
  for (const f of gidFiles(table, iface)) await rewrite(join(dir, f.path), f.content);
}

export async function labPort(name: string, id: number, iface: string, change: PortChange): Promise<LabPortResult> {
  const { plan, host, nic, dir } = await emulatedPort(name, id, iface);
  const root = sysfsLayer(plan, id);
  const port = portDir(host, iface)!;
  const changed: string[] = [];
  if (change.gids && !(isRoce(host) && change.state && carrierIn(change.state)))
    throw new UsageError(
      `lab port: --gids is the order a RoCE port's GIDs register in as it comes back: it goes with the state active (or no-sm) on a RoCE host${isRoce(host) ? '' : `, and host ${id}'s ports are InfiniBand`}`,
    );
  if (change.state) {
    for (const [file, content] of Object.entries(portFiles(host, nic, change.state)))
      await rewrite(join(root, port, file), content);
    // ACTIVE under the fabric's own subnet manager again: its subnet prefix too (lab sm changed it).
    if (!isRoce(host) && change.state === 'active') {
      const gid = (await readFile(join(dir, 'gids/0'), 'utf8')).trim();
      await rewrite(join(dir, 'gids/0'), `${DEFAULT_SUBNET_PREFIX}${gid.slice(DEFAULT_SUBNET_PREFIX.length)}`);
    }
    const sw = [
      'nsenter',
      `--net=${NETNS_DIR}/${plan.switchNamespace}`,
      'ip',
      'link',
      'set',
      nic.port,
      carrierIn(change.state) ? 'up' : 'down',
    ];
    await runOk('lab port: carrier', sw);
    // A RoCE port coming back registers its GIDs again from the interface's addresses, in the kernel's order.
    if (isRoce(host) && carrierIn(change.state))
      await registerGids(host, iface, dir, change.gids ?? 'kernel', nic.address);
    changed.push(`state ${change.state}${change.gids ? `, GIDs registered ${change.gids}` : ''}`);
  }
  if (change.rate) {
    await rewrite(join(root, port, 'rate'), change.rate);
    changed.push(`rate ${change.rate}`);
  }
  if (change.mode || change.mtu !== undefined) {
    if (change.mode) await rewrite(join(root, 'devices/virtual/net', iface, 'mode'), change.mode);
    const mtu = change.mtu ?? IPOIB_MTU[change.mode!];
    await runOk('lab port: mtu', ['ip', '-n', host.namespace, 'link', 'set', iface, 'mtu', String(mtu)]);
    changed.push(`${change.mode ? `mode ${change.mode}, ` : ''}MTU ${mtu}`);
  }
  const l = port.split('/');
  return { id, iface, port: `${l[l.length - 3]}/${l[l.length - 1]}`, changed };
}

export interface LabBreakResult {
  readonly id: number;
  readonly iface: string;
  readonly port: string;
  readonly changed: string;
}

/** `lab gid H NIC ORDER`: a RoCE port's GID table made again from the interface's addresses, in ORDER. */
export async function labGid(name: string, id: number, iface: string, order: GidOrder): Promise<LabBreakResult> {
  const { host, dir, label } = await emulatedPort(name, id, iface);
  if (!isRoce(host))
    throw new UsageError(
      `lab gid: host ${id}'s ports are InfiniBand, whose GID table the subnet manager makes; lab gid is for RoCE hosts (lab up --link-layer ethernet); lab sm changes an InfiniBand port's subnet prefix`,
    );
  await registerGids(host, iface, dir, order);
  return { id, iface, port: label, changed: `GID table ${order}` };
}

/**
 * `lab sm H NIC LID [--subnet-prefix P]`: the port as a port under another subnet manager sees it
 * (SM LID, and GID 0's subnet prefix when given). `lab port H NIC active` puts the fabric's own back.
 */
export async function labSm(
  name: string,
  id: number,
  iface: string,
  smLid: number,
  subnetPrefix?: string,
): Promise<LabBreakResult> {
  const { host, dir, label } = await emulatedPort(name, id, iface);
  if (isRoce(host))
    throw new UsageError(`lab sm: host ${id}'s ports are RoCE (Ethernet): no subnet manager configures them`);
  await rewrite(join(dir, 'sm_lid'), `0x${smLid.toString(16)}`);
  if (subnetPrefix !== undefined) {
    const gid = (await readFile(join(dir, 'gids/0'), 'utf8')).trim();
    await rewrite(join(dir, 'gids/0'), `${subnetPrefix}${gid.slice(subnetPrefix.length)}`);
  }
  return {
    id,
    iface,
    port: label,
    changed: `SM LID ${smLid}${subnetPrefix !== undefined ? `, subnet prefix ${subnetPrefix}` : ''}`,
  };
}

/** `lab pkey H NIC [PKEY...]`: the port's P_Key table: the default partition and PKEYs (none: the default alone). */
export async function labPkey(
  name: string,
  id: number,
  iface: string,
  pkeys: readonly string[],
): Promise<LabBreakResult> {
  const { host, dir, label } = await emulatedPort(name, id, iface);
  if (isRoce(host)) throw new UsageError(`lab pkey: host ${id}'s ports are RoCE (Ethernet): they have no partitions`);
  const table = pkeyTable(pkeys);
  for (const [i, content] of table.entries()) await rewrite(join(dir, 'pkeys', String(i)), content);
  return { id, iface, port: label, changed: `P_Key table ${table.filter((p) => p !== '0x0000').join(' ')}` };
}
