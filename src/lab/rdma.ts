/**
 * The lab's RDMA side, on the machine: each host's emulated sysfs layer (see rdma-emulation.ts)
 * written before it boots, the rping stand-in every RDMA host finds on its PATH, and `lab port`,
 * which changes a port at run time — its state (and with it the interface's carrier, as a real
 * IPoIB interface has carrier only while its port is ACTIVE), its rate, the IPoIB mode and MTU.
 */
import { existsSync } from 'node:fs';
import { chmod, mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { UsageError } from '../errors.js';
import { PACKAGE_ROOT } from '../package-root.js';
import { NETNS_DIR, hostPaths } from './names.js';
import type { LabHost, LabPlan } from './plan.js';
import {
  IPOIB_MTU,
  carrierIn,
  portDir,
  portFiles,
  renderSysfsTree,
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
}

export interface PortChange {
  readonly state?: PortStateName;
  readonly mode?: IpoibMode;
  readonly mtu?: number;
  /** `56 Gb/sec (4X FDR)`: a degraded link. */
  readonly rate?: string;
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

export async function labPort(name: string, id: number, iface: string, change: PortChange): Promise<LabPortResult> {
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
  const changed: string[] = [];
  if (change.state) {
    for (const [file, content] of Object.entries(portFiles(host, nic, change.state)))
      await rewrite(join(root, port, file), content);
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
    changed.push(`state ${change.state}`);
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
