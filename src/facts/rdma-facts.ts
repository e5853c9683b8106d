/**
 * The probe's `rdma` section → facts, and the mapping `ibdev2netdev` makes from an interface to the
 * RDMA device and port behind it. Pure.
 *
 * The mapping never assumes port 1: a dual-port card (ConnectX-3, mlx4) carries both NICs on one
 * device, told apart by the interface's `dev_port` (older kernels: `dev_id`), while ConnectX-4 and
 * later give each port its own PCI function and device (mlx5_0, mlx5_1: port 1 each). RoCE and
 * software devices (rxe) name the netdev of each port in `gid_attrs/ndevs/0`, which wins when present.
 */

export interface PortFact {
  /** `4: ACTIVE` as sysfs prints it. */
  readonly state: string;
  /** `5: LinkUp`. */
  readonly physState: string;
  /** `100 Gb/sec (4X EDR)`. */
  readonly rate: string;
  /** `InfiniBand` or `Ethernet` (RoCE). */
  readonly linkLayer: string;
  readonly lid: string;
  readonly smLid: string;
}

export interface NicRdmaHints {
  /** IPoIB `datagram` / `connected`; '' when the interface has no such file (not IPoIB). */
  readonly mode: string;
  readonly devPort: string;
  readonly devId: string;
  /** Devices of the interface's PCI function. */
  readonly devices: readonly string[];
}

export interface GidFact {
  readonly device: string;
  readonly port: number;
  readonly index: number;
  readonly gid: string;
  /** `RoCE v2` or `IB/RoCE v1`. */
  readonly type: string;
}

export interface PkeyFact {
  readonly device: string;
  readonly port: number;
  readonly index: number;
  /** `0x8002`, lower case, four digits. */
  readonly pkey: string;
}

export interface RdmaFacts {
  /** Every RDMA device of the host (/sys/class/infiniband). */
  readonly devices: readonly string[];
  readonly nics: ReadonlyMap<string, NicRdmaHints>;
  /** `device/port` → the netdev its GID 0 belongs to (RoCE, rxe). */
  readonly ndevs: ReadonlyMap<string, string>;
  /** `device/port` → port attributes, for the devices the NICs lead to. */
  readonly ports: ReadonlyMap<string, PortFact>;
  /** Every GID entry in use of an Ethernet (RoCE) port; GID 0 of an InfiniBand port. */
  readonly gids: readonly GidFact[];
  /** The P_Key table entries in use of InfiniBand ports. */
  readonly pkeys: readonly PkeyFact[];
}

/** What a host prints is hostile: a GID is eight groups of four hex digits, or it is not taken. */
const GID_TEXT = /^[0-9a-f]{4}(:[0-9a-f]{4}){7}$/;
const GID_TYPES = new Set(['IB/RoCE v1', 'RoCE v2']);
const PKEY_TEXT = /^0x[0-9a-f]{1,4}$/;
const INDEX_TEXT = /^\d{1,4}$/;

function gidFact(rest: readonly string[]): GidFact | undefined {
  const [device = '', port = '', index = '', gid = '', ...type] = rest;
  const text = type.join(' ');
  if (!device || !INDEX_TEXT.test(port) || !INDEX_TEXT.test(index) || !GID_TEXT.test(gid.toLowerCase()))
    return undefined;
  return {
    device,
    port: Number(port),
    index: Number(index),
    gid: gid.toLowerCase(),
    type: GID_TYPES.has(text) ? text : '',
  };
}

function pkeyFact(rest: readonly string[]): PkeyFact | undefined {
  const [device = '', port = '', index = '', pkey = ''] = rest;
  const value = pkey.toLowerCase();
  if (!device || !INDEX_TEXT.test(port) || !INDEX_TEXT.test(index) || !PKEY_TEXT.test(value)) return undefined;
  return { device, port: Number(port), index: Number(index), pkey: `0x${value.slice(2).padStart(4, '0')}` };
}

export function parseRdmaSection(lines: readonly string[]): RdmaFacts {
  let devices: string[] = [];
  const nics = new Map<string, NicRdmaHints>();
  const ndevs = new Map<string, string>();
  const ports = new Map<string, PortFact>();
  const gids: GidFact[] = [];
  const pkeys: PkeyFact[] = [];
  for (const line of lines) {
    const [kind, ...rest] = line.split(' ');
    const text = rest.join(' ');
    if (kind === 'devices') devices = rest.filter(Boolean);
    else if (kind === 'ndev' && rest.length >= 3) ndevs.set(`${rest[0]}/${rest[1]}`, rest[2]!);
    else if (kind === 'nic') {
      const [iface, mode = '', devPort = '', devId = '', devs = ''] = text.split('|');
      if (iface) nics.set(iface, { mode, devPort, devId, devices: devs.split(' ').filter(Boolean) });
    } else if (kind === 'port' && rest.length >= 3) {
      const [state = '', physState = '', rate = '', linkLayer = '', lid = '', smLid = ''] = rest
        .slice(2)
        .join(' ')
        .split('|');
      ports.set(`${rest[0]}/${rest[1]}`, { state, physState, rate, linkLayer, lid, smLid });
    } else if (kind === 'gid') {
      const gid = gidFact(rest);
      if (gid) gids.push(gid);
    } else if (kind === 'pkey') {
      const pkey = pkeyFact(rest);
      if (pkey) pkeys.push(pkey);
    }
  }
  return { devices, nics, ndevs, ports, gids, pkeys };
}

export interface RdmaPortRef {
  readonly device: string;
  readonly port: number;
}

/** The RDMA device and port behind `iface`, as ibdev2netdev maps them, or undefined. */
export function rdmaPortOf(iface: string, rdma: RdmaFacts): RdmaPortRef | undefined {
  for (const [key, netdev] of rdma.ndevs) {
    if (netdev !== iface) continue;
    const [device, port] = key.split('/');
    return { device: device!, port: Number(port) };
  }
  const hints = rdma.nics.get(iface);
  for (const device of hints?.devices ?? []) {
    const has = (port: number) => rdma.ports.has(`${device}/${port}`);
    const fromDevPort = parseIndex(hints!.devPort, 10);
    const fromDevId = parseIndex(hints!.devId, 16);
    if (fromDevPort !== undefined && fromDevPort > 0 && has(fromDevPort + 1)) return { device, port: fromDevPort + 1 };
    if (fromDevId !== undefined && fromDevId > 0 && has(fromDevId + 1)) return { device, port: fromDevId + 1 };
    if (has(1)) return { device, port: 1 };
    const only = [...rdma.ports.keys()].filter((k) => k.startsWith(`${device}/`));
    if (only.length === 1) return { device, port: Number(only[0]!.split('/')[1]) };
  }
  return undefined;
}

function parseIndex(text: string, radix: number): number | undefined {
  const value = parseInt(text.replace(/^0x/i, ''), radix);
  return Number.isInteger(value) && value >= 0 ? value : undefined;
}

/** `ACTIVE` from `4: ACTIVE`; the whole text when it has no number. */
export function stateName(text: string): string {
  return text.replace(/^\d+:\s*/, '').trim();
}

/** 100 from `100 Gb/sec (4X EDR)`; undefined when unreadable. */
export function rateGbps(text: string): number | undefined {
  const match = /^([\d.]+)\s*Gb\/sec/.exec(text.trim());
  return match ? Number(match[1]) : undefined;
}

/** A LID as sysfs prints it (`0x3`) → 3. */
export function lidValue(text: string): number | undefined {
  const value = parseInt(text, text.trim().toLowerCase().startsWith('0x') ? 16 : 10);
  return Number.isInteger(value) ? value : undefined;
}
