/**
 * What each lab host shows under /sys for its RDMA side: a device per NIC under
 * /sys/class/infiniband with its ports, the interface's `device` link to it, `dev_port`/`dev_id`
 * and the IPoIB `mode` — the very files the product's probe and `ibdev2netdev` read. The tree is the
 * upper layer of a read-only overlay on the host's own sysfs (mounted in its mount namespace at
 * boot: the machine's /sys is untouched), so /sys/class/net/IF keeps every real attribute of the
 * host's veth and gains the ones an IPoIB interface has. Pure: paths relative to the layer's root.
 *
 * NetworkManager hosts (the seeds' cpuserver16) carry a dual-port ConnectX-3: one device, mlx4_0,
 * whose ports 1 and 2 are NIC 1 and NIC 2 (told apart by dev_port, as on the real card); the others
 * a ConnectX-5 per NIC (mlx5_0, mlx5_1: port 1 each). Nothing is assumed to sit on port 1.
 *
 * Hosts with more than two NICs are multi-rail GPU nodes (DGX H100 class): a single-port
 * ConnectX-7 per NIC, each on its own PCI bus, the bus read from a predictable interface name
 * (`ibp75s0`: bus 75). The kernel numbers mlx5 devices in PCI order, while the inventory lists NICs
 * in rail order, which need not be the same: NIC 2 (`ibp75s0`) may well be mlx5_2 while NIC 5
 * (`ibp18s0`) is mlx5_1. Nothing is assumed from the order: the product finds each through sysfs.
 *
 * Every port has a GID table (`gids/N`, `gid_attrs/types/N`, `gid_attrs/ndevs/N`) and a P_Key table
 * (`pkeys/N`), GID_SLOTS and PKEY_SLOTS entries, all present from boot (the overlay shows a lower
 * layer's file rewritten in place, not one created later), empty ones zero as the kernel's are. On
 * InfiniBand GID 0 is the subnet prefix the subnet manager gave and the port's GUID; on Ethernet
 * (RoCE: `lab up --link-layer ethernet`) the table follows the interface's addresses as the kernel's
 * does: the link-local GID first (v1, then v2), then a v1 and a v2 entry per IPv4 address.
 */
import type { LabHost, LabNic } from './plan.js';

export interface RdmaNicLayout {
  readonly iface: string;
  readonly device: string;
  readonly port: number;
  /** The PCI function the device and the interface hang off. */
  readonly pci: string;
}

/** Where the emulated devices live, beside the kernel's own /sys/devices/*. */
export const LAB_DEVICE_ROOT = 'devices/ibfleet-lab';

export function dualPort(host: LabHost): boolean {
  return host.manager === 'networkmanager' && !multiRail(host);
}

/** A GPU node's layout: more NICs than a dual-port card carries. */
export function multiRail(host: Pick<LabHost, 'nics'>): boolean {
  return host.nics.length > 2;
}

/** The PCI bus and slot a predictable name gives (`ibp75s0` → 75, 0), else the NIC's place in the list. */
function pciSlotOf(iface: string, index: number): { bus: number; slot: number } {
  const named = /^ibp(\d+)s(\d+)/.exec(iface);
  return named ? { bus: Number(named[1]) % 256, slot: Number(named[2]) % 32 } : { bus: index + 1, slot: 0 };
}

export function rdmaLayout(host: LabHost): RdmaNicLayout[] {
  if (multiRail(host)) {
    const slots = host.nics.map((nic, i) => ({ nic, ...pciSlotOf(nic.iface, i) }));
    const pciOrder = [...slots].sort((a, b) => a.bus - b.bus || a.slot - b.slot || a.nic.index - b.nic.index);
    const hex = (n: number) => n.toString(16).padStart(2, '0');
    return slots.map(({ nic, bus, slot }) => ({
      iface: nic.iface,
      device: `mlx5_${pciOrder.findIndex((b) => b.nic === nic)}`,
      port: 1,
      pci: `0000:${hex(bus)}:${hex(slot)}.0`,
    }));
  }
  return host.nics.map((nic, i) =>
    dualPort(host)
      ? { iface: nic.iface, device: 'mlx4_0', port: 1 + i, pci: '0000:81:00.0' }
      : { iface: nic.iface, device: `mlx5_${i}`, port: 1, pci: `0000:81:00.${i}` },
  );
}

export const PORT_STATES = ['active', 'down', 'init', 'polling', 'no-sm'] as const;
export type PortStateName = (typeof PORT_STATES)[number];

export const IPOIB_MODES = ['datagram', 'connected'] as const;
export type IpoibMode = (typeof IPOIB_MODES)[number];

/** IPoIB's MTU per mode: 2048-byte IB MTU less the 4-byte IPoIB header; connected mode's maximum. */
export const IPOIB_MTU: Readonly<Record<IpoibMode, number>> = { datagram: 2044, connected: 65520 };

/** An FDR fabric: the ConnectX-3 and ConnectX-5 ports alike link at 4X FDR. */
export const DEFAULT_RATE = '56 Gb/sec (4X FDR)';

export function isRoce(host: Pick<LabHost, 'linkLayer'>): boolean {
  return host.linkLayer === 'ethernet';
}

/** Unique in the fabric for up to 16 NICs a host (the subnet manager gives each port its own). */
function lid(host: LabHost, nic: LabNic): string {
  return `0x${(host.id * 16 + nic.index).toString(16)}`;
}

/**
 * A port's attribute files in a state: ACTIVE with a subnet manager (SM LID 1, as opensm on the
 * fabric's first port); DOWN with the port disabled; Polling (no link partner); INIT (link up, no
 * SM has configured it: no LID, SM LID 0); no-sm (ACTIVE, but the SM is gone: SM LID 0).
 */
export function portFiles(
  host: LabHost,
  nic: LabNic,
  state: PortStateName,
): Record<'state' | 'phys_state' | 'lid' | 'sm_lid', string> {
  // RoCE has no LIDs and no subnet manager: the port is ACTIVE whenever its Ethernet link is up.
  if (isRoce(host)) {
    const up = carrierIn(state);
    return {
      state: up ? '4: ACTIVE' : '1: DOWN',
      phys_state: up ? '5: LinkUp' : state === 'polling' ? '2: Polling' : '3: Disabled',
      lid: '0x0',
      sm_lid: '0x0',
    };
  }
  switch (state) {
    case 'active':
      return { state: '4: ACTIVE', phys_state: '5: LinkUp', lid: lid(host, nic), sm_lid: '0x1' };
    case 'no-sm':
      return { state: '4: ACTIVE', phys_state: '5: LinkUp', lid: lid(host, nic), sm_lid: '0x0' };
    case 'init':
      return { state: '2: INIT', phys_state: '5: LinkUp', lid: '0x0', sm_lid: '0x0' };
    case 'polling':
      return { state: '1: DOWN', phys_state: '2: Polling', lid: '0x0', sm_lid: '0x0' };
    case 'down':
      return { state: '1: DOWN', phys_state: '3: Disabled', lid: '0x0', sm_lid: '0x0' };
  }
}

/** Whether the IPoIB interface has carrier in that state: only an ACTIVE port gives it one. */
export function carrierIn(state: PortStateName): boolean {
  return state === 'active' || state === 'no-sm';
}

export interface SysfsTree {
  readonly dirs: readonly string[];
  readonly files: readonly { readonly path: string; readonly content: string }[];
  readonly links: readonly { readonly path: string; readonly target: string }[];
}

/**
 * The port's active MTU, which only the HCA knows (`ibv_devinfo` asks it; sysfs has no such file):
 * the lab keeps it beside the port for its `ibv_devinfo` stand-in. The ConnectX-3 links at 2048
 * (the seeds' IPoIB MTU 2044 is 2048 less IPoIB's header), the ConnectX-5s at 4096.
 */
export const ACTIVE_MTU_FILE = 'ibfleet-lab-active-mtu';

export function activeMtu(device: string): number {
  return device.startsWith('mlx4') ? 2048 : 4096;
}

/**
 * An IPoIB interface's 20-byte hardware address: flags and QPN, then the port GID. IPoIB sets the
 * RC flag (0x80) in the first byte where connected mode can run; enhanced IPoIB (mlx5) leaves it
 * clear, which is how the kernel — and ibfleet — tell that `connected` cannot be set there.
 */
export function ipoibAddress(host: LabHost, device: string, port: number): string {
  const flags = device.startsWith('mlx5') ? '00' : '80';
  const qpn = (0x48 + host.id * 4 + port).toString(16).padStart(6, '0');
  const gid = guid(host, device, port).replace(/:/g, '');
  return [flags, ...qpn.match(/../g)!, ...gid.match(/../g)!].join(':');
}

function guid(host: LabHost, device: string, port: number): string {
  const hex = (host.id * 256 + Number(/(\d+)$/.exec(device)?.[1] ?? 0) * 16 + port).toString(16).padStart(4, '0');
  return `fe80:0000:0000:0000:0002:c903:00${hex.slice(0, 2)}:${hex.slice(2)}01`;
}

/** Entries of each port's GID table: enough for the link-local pair and a few addresses (mlx5 has 256). */
export const GID_SLOTS = 16;
/** Entries of each port's P_Key table (ConnectX has 128). */
export const PKEY_SLOTS = 16;
export const ZERO_GID = '0000:0000:0000:0000:0000:0000:0000:0000';
/** The subnet prefix of a subnet manager that was not told another (opensm's default). */
export const DEFAULT_SUBNET_PREFIX = 'fe80:0000:0000:0000';
/** The default partition, full membership: on every port's table, at index 0. */
export const DEFAULT_PKEY = '0xffff';

export const GID_ORDERS = ['kernel', 'reorder', 'linklocal-only'] as const;
/**
 * kernel: as the kernel registers them from the interface's addresses; reorder: as after a port
 * flap where an IPv6 address re-registered first and took the IPv4 entries' slots (the v2 GID of
 * the NIC's address moves from 3 to 5: a job told NCCL_IB_GID_INDEX=3 uses the IPv6 one);
 * linklocal-only: the link-local pair alone (the address not on the interface when the GIDs were
 * made): what NCCL and UCX pick then is fe80::, and the queue pair never reaches RTR.
 */
export type GidOrder = (typeof GID_ORDERS)[number];

export interface GidEntry {
  readonly gid: string;
  /** `IB/RoCE v1`, `RoCE v2`; '' for an empty slot. */
  readonly type: string;
}

function hex4(n: number): string {
  return n.toString(16).padStart(4, '0');
}

function ipv4Gid(address: string): string {
  const [a = 0, b = 0, c = 0, d = 0] = address.split('.').map(Number);
  return `0000:0000:0000:0000:0000:ffff:${hex4(a * 256 + b)}:${hex4(c * 256 + d)}`;
}

/** A RoCE port's table, pure: `iid` the interface identifier (last four groups), `addresses` its IPv4 addresses in order. */
export function roceGidTable(iid: string, addresses: readonly string[], order: GidOrder): GidEntry[] {
  const pair = (gid: string): GidEntry[] => [
    { gid, type: 'IB/RoCE v1' },
    { gid, type: 'RoCE v2' },
  ];
  const linkLocal = pair(`fe80:0000:0000:0000:${iid}`);
  const ipv4 = addresses.flatMap((a) => pair(ipv4Gid(a)));
  const entries =
    order === 'linklocal-only'
      ? linkLocal
      : order === 'reorder'
        ? [...linkLocal, ...pair(`fd00:0000:0000:0000:${iid}`), ...ipv4]
        : [...linkLocal, ...ipv4];
  return Array.from({ length: GID_SLOTS }, (_, i) => entries[i] ?? { gid: ZERO_GID, type: '' });
}

/** The interface identifier of a RoCE port's link-local GID (from its GUID, as from a MAC). */
export function roceIid(host: LabHost, device: string, port: number): string {
  return guid(host, device, port).slice(20);
}

/** A P_Key table: `pkeys` in order after the default partition, the rest empty. */
export function pkeyTable(pkeys: readonly string[]): string[] {
  const entries = [DEFAULT_PKEY, ...pkeys.filter((p) => p !== DEFAULT_PKEY)];
  return Array.from({ length: PKEY_SLOTS }, (_, i) => entries[i] ?? '0x0000');
}

/** The files of a port's GID table for `entries` (relative to the port directory); ndevs name the RoCE netdev. */
export function gidFiles(entries: readonly GidEntry[], iface: string | undefined): { path: string; content: string }[] {
  return entries.flatMap((e, i) => [
    { path: `gids/${i}`, content: e.gid },
    { path: `gid_attrs/types/${i}`, content: e.type },
    { path: `gid_attrs/ndevs/${i}`, content: iface !== undefined && e.type !== '' ? iface : '' },
  ]);
}

/** The whole layer for a host at boot: every port ACTIVE, IPoIB in datagram mode. */
export function renderSysfsTree(host: LabHost): SysfsTree {
  // kernel/config: where a RoCE host's RDMA CM configfs is mounted (renderRdmaCmConfigfs).
  const dirs: string[] = ['class/infiniband', ...(isRoce(host) ? ['kernel/config'] : [])];
  const files: { path: string; content: string }[] = [];
  const links: { path: string; target: string }[] = [];
  const layout = rdmaLayout(host);
  const devices = new Set<string>();
  layout.forEach((l, i) => {
    const nic = host.nics[i]!;
    const pciDir = `${LAB_DEVICE_ROOT}/${l.pci}`;
    const deviceDir = `${pciDir}/infiniband/${l.device}`;
    const portDir = `${deviceDir}/ports/${l.port}`;
    if (!devices.has(l.device)) {
      devices.add(l.device);
      dirs.push(`${deviceDir}/ports`, `${pciDir}/net`);
      const ca = l.device.startsWith('mlx4')
        ? { type: 'MT4099', board: 'MT_1090120019', fw: '2.42.5000' }
        : multiRail(host)
          ? { type: 'MT4129', board: 'MT_0000000838', fw: '28.39.1002' }
          : { type: 'MT4119', board: 'MT_0000000008', fw: '16.35.2000' };
      files.push(
        { path: `${deviceDir}/node_type`, content: '1: CA' },
        { path: `${deviceDir}/hca_type`, content: ca.type },
        { path: `${deviceDir}/board_id`, content: ca.board },
        { path: `${deviceDir}/fw_ver`, content: ca.fw },
        { path: `${deviceDir}/node_guid`, content: guid(host, l.device, 0).slice(20) },
      );
      links.push({ path: `class/infiniband/${l.device}`, target: `../../${deviceDir}` });
    }
    dirs.push(`${portDir}/gids`, `${portDir}/pkeys`, `devices/virtual/net/${l.iface}`);
    const attributes = portFiles(host, nic, 'active');
    const roce = isRoce(host);
    files.push(
      { path: `${portDir}/state`, content: attributes.state },
      { path: `${portDir}/phys_state`, content: attributes.phys_state },
      { path: `${portDir}/lid`, content: attributes.lid },
      { path: `${portDir}/sm_lid`, content: attributes.sm_lid },
      { path: `${portDir}/rate`, content: DEFAULT_RATE },
      { path: `${portDir}/link_layer`, content: roce ? 'Ethernet' : 'InfiniBand' },
      { path: `${portDir}/lid_mask_count`, content: '0' },
      ...gidFiles(bootGids(host, nic, l), roce ? l.iface : undefined).map((f) => ({
        path: `${portDir}/${f.path}`,
        content: f.content,
      })),
      ...pkeyTable([]).map((content, i) => ({ path: `${portDir}/pkeys/${i}`, content })),
      { path: `${portDir}/${ACTIVE_MTU_FILE}`, content: String(activeMtu(l.device)) },
      // A RoCE interface is an Ethernet one: no IPoIB mode, its own MAC address.
      ...(roce
        ? []
        : [
            { path: `devices/virtual/net/${l.iface}/mode`, content: 'datagram' },
            { path: `devices/virtual/net/${l.iface}/address`, content: ipoibAddress(host, l.device, l.port) },
          ]),
      { path: `devices/virtual/net/${l.iface}/dev_port`, content: String(l.port - 1) },
      { path: `devices/virtual/net/${l.iface}/dev_id`, content: `0x${(l.port - 1).toString(16)}` },
    );
    links.push(
      { path: `devices/virtual/net/${l.iface}/device`, target: `../../../ibfleet-lab/${l.pci}` },
      { path: `${pciDir}/net/${l.iface}`, target: `../../../virtual/net/${l.iface}` },
    );
  });
  return { dirs, files, links };
}

/**
 * A port's GID table at boot. InfiniBand: GID 0 the default subnet prefix and the port GUID. RoCE:
 * from the address the host's manager gives the NIC (none yet on a fresh host).
 */
function bootGids(host: LabHost, nic: LabNic, l: RdmaNicLayout): GidEntry[] {
  if (!isRoce(host)) {
    const entries = [{ gid: guid(host, l.device, l.port), type: 'IB/RoCE v1' }];
    return Array.from({ length: GID_SLOTS }, (_, i) => entries[i] ?? { gid: ZERO_GID, type: '' });
  }
  return roceGidTable(roceIid(host, l.device, l.port), host.fresh ? [] : [nic.address], 'kernel');
}

/**
 * The RDMA CM's configfs (`/sys/kernel/config/rdma_cm`) of a RoCE host: per port its
 * `default_roce_mode`, RoCE v2 as the kernel prefers where the port supports it. A writable
 * directory bind-mounted over the layer's `kernel/config` (the machine need not have configfs), so
 * the routing script's roceMode is set and read as on a real host. The kernel makes
 * `rdma_cm/<device>` on mkdir; the lab has it from boot. Paths relative to that directory.
 */
export function renderRdmaCmConfigfs(host: LabHost): { path: string; content: string }[] {
  if (!isRoce(host)) return [];
  return rdmaLayout(host).map((l) => ({
    path: `rdma_cm/${l.device}/ports/${l.port}/default_roce_mode`,
    content: 'RoCE v2',
  }));
}

/** Where a RoCE host's configfs directory lies, relative to its boot directory (HOST_BOOT_DIR). */
export const CONFIGFS_DIR = 'configfs';

/** The port directory of a NIC inside the layer. */
export function portDir(host: LabHost, iface: string): string | undefined {
  const l = rdmaLayout(host).find((x) => x.iface === iface);
  return l && `${LAB_DEVICE_ROOT}/${l.pci}/infiniband/${l.device}/ports/${l.port}`;
}
