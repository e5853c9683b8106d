/**
 * What a lab consists of, decided before anything is created: hosts, their managers, interfaces,
 * management and fabric addresses, namespace and link names. Pure; the plan is also the lab's
 * state file, so `down` and `reboot` work from exactly what `up` built.
 */
import { UsageError } from '../errors.js';
import { deriveNicAddress, deriveTable } from '../inventory/derive.js';
import { cidrContains, formatCidr, formatIpv4, maskOf, parseCidr, type Cidr } from '../inventory/ipv4.js';
import type { Fleet, Manager, Pair } from '../inventory/model.js';
import { foldHosts } from '../inventory/select.js';
import {
  checkLabName,
  DEFAULT_LAB_NAME,
  fabricPortName,
  gpuNodeInterfaces,
  hostNamespace,
  labDir,
  mgmtPortName,
  rootLinkName,
  switchNamespace,
} from './names.js';
import { DEFAULT_CONTROLLER_ADDRESS, DEFAULT_MGMT_SUBNET, parseControllerAddress, parseMgmtSubnet } from './options.js';
import { DEFAULT_ROOTS_DIR, type Suite } from './suites.js';
import type { LabLinkLayer } from './names.js';

export interface LabNic {
  readonly index: number;
  readonly iface: string;
  readonly address: string;
  readonly prefixLength: number;
  /** The routing table a deploy gives this NIC; `lab reboot` flushes it. */
  readonly table: number;
  /** The veth end on the fabric bridge, in the switch namespace. */
  readonly port: string;
}

export type ManagerSource = 'option' | 'inventory' | 'default';

export interface LabHost {
  readonly id: number;
  readonly name: string;
  readonly role: string | undefined;
  readonly manager: Manager;
  readonly managerFrom: ManagerSource;
  /** Management (SSH) address: the management subnet's network + id. */
  readonly address: string;
  readonly namespace: string;
  readonly mgmtPort: string;
  readonly nics: readonly LabNic[];
  /**
   * false: the host shows no RDMA device (no /sys/class/infiniband entry, no rping), as a machine
   * without driver or rdma-core. Absent in the state of labs brought up before RDMA was emulated.
   */
  readonly rdma?: boolean;
  /**
   * false: the host emulates one systemd does not run (a container, a chroot-like host): no timer
   * runner, the real `systemctl` (it answers `offline`), and PID 1 is not systemd. Absent in the
   * state of labs brought up before systemd was emulated. Hosts of a lab without network daemons
   * run none either.
   */
  readonly systemd?: boolean;
  /** false: python3 is hidden from the host's /usr/bin (lab up --without-python3): verify's prober falls back. */
  readonly python3?: boolean;
  /** true: the machine's fping is on the host's PATH (lab up --with-fping); hidden otherwise, as most hosts lack it. */
  readonly fping?: boolean;
  /**
   * true: the host is as a new machine arrives (lab up --fresh): its fabric NICs are there but
   * nothing configures them (fresh.ts). Absent in the state of labs brought up before.
   */
  readonly fresh?: boolean;
  /**
   * The Debian release whose whole root the host runs on (lab up --suite; suites.ts); absent: the
   * machine's own /usr, as every host of a lab brought up before suites ran.
   */
  readonly suite?: Suite;
  /**
   * `ethernet`: the host's RDMA ports are RoCE (lab up --link-layer ethernet): link layer Ethernet,
   * no LID or subnet manager, a GID table following the NICs' addresses. Absent: InfiniBand.
   */
  readonly linkLayer?: LabLinkLayer;
}

export interface LabPlan {
  readonly version: 1;
  readonly name: string;
  readonly dir: string;
  readonly switchNamespace: string;
  readonly rootLink: string;
  readonly mgmtSubnet: string;
  readonly mgmtPrefixLength: number;
  readonly controllerAddress: string;
  readonly fabric: { readonly subnet: string; readonly nics: number; readonly tableBase: number };
  readonly hosts: readonly LabHost[];
  /** The source inventory's pairs whose two hosts are both in the lab. */
  readonly pairs: readonly Pair[];
  /**
   * Whether hosts run their real network manager (and the timer runner). Without, the lab adds the
   * fabric addresses itself and nothing runs hooks: only for labs too big to afford a daemon per
   * host (the benchmark's).
   */
  readonly networkDaemons: boolean;
  /** Where the suites' roots are cached (suites.ts); present when a host runs on a suite. */
  readonly rootsDir?: string;
}

export interface LabPlanInput {
  readonly name?: string;
  /** Default: the hosts of the source inventory. */
  readonly hosts?: readonly number[];
  readonly mgmtSubnet?: string;
  readonly controllerAddress?: string;
  readonly managers?: ReadonlyMap<number, Manager>;
  readonly interfaces?: ReadonlyMap<number, readonly string[]>;
  /**
   * Fabric NICs per host (`lab up --nics 8`, `--nics 16=8`): `all` for every host, `hosts` for some
   * (winning over `all`). Default: the inventory's count for a host it knows, else the fabric's.
   */
  readonly nics?: { readonly all?: number; readonly hosts?: ReadonlyMap<number, number> };
  /** The source inventory: fabric, and name/role/interfaces/manager of the hosts it knows. */
  readonly fleet: Fleet;
  /** Default true: each host runs its real network manager. */
  readonly networkDaemons?: boolean;
  /** Hosts that get no emulated RDMA device. */
  readonly noRdma?: readonly number[];
  /** Hosts that run no systemd (lab up --without-systemd). */
  readonly noSystemd?: readonly number[];
  /** Hosts without python3 (lab up --without-python3). */
  readonly noPython3?: readonly number[];
  /** Hosts that have fping (lab up --with-fping). */
  readonly fping?: readonly number[];
  /** Hosts as a new machine arrives: fabric NICs without address or configuration (lab up --fresh). */
  readonly fresh?: readonly number[];
  /** The Debian release of each host's root (lab up --suite): `all`, or per host (winning over `all`). */
  readonly suites?: { readonly all?: Suite; readonly hosts?: ReadonlyMap<number, Suite> };
  /** Default DEFAULT_ROOTS_DIR. */
  readonly rootsDir?: string;
  /** The link layer of hosts' RDMA ports (lab up --link-layer): `all`, or per host (winning over `all`). */
  readonly linkLayers?: { readonly all?: LabLinkLayer; readonly hosts?: ReadonlyMap<number, LabLinkLayer> };
}

/**
 * The emulated machines of the seeds: 16 is the Ubuntu 20.04 desktop with NetworkManager, 34 the
 * Ubuntu 18.04 server with netplan; anything else is a netplan server unless told otherwise.
 */
export function defaultManager(id: number): Manager {
  return id === 16 ? 'networkmanager' : 'netplan';
}

export function planLab(input: LabPlanInput): LabPlan {
  const name = checkLabName(input.name ?? DEFAULT_LAB_NAME);
  const { fleet } = input;
  const mgmt = parseMgmtSubnet(input.mgmtSubnet ?? DEFAULT_MGMT_SUBNET);
  const controller = parseControllerAddress(input.controllerAddress ?? DEFAULT_CONTROLLER_ADDRESS);
  const ids = input.hosts ?? fleet.hosts.map((h) => h.id);
  if (ids.length === 0) throw new UsageError(`no lab hosts: ${fleet.file} has none; pass --hosts, e.g. --hosts 16,34`);

  checkMgmtSubnet(mgmt, controller, fleet, ids);
  for (const [option, list] of [
    ['--without-rdma', input.noRdma],
    ['--without-systemd', input.noSystemd],
    ['--fresh', input.fresh],
    ['--without-python3', input.noPython3],
    ['--with-fping', input.fping],
  ] as const) {
    const stray = (list ?? []).filter((id) => !ids.includes(id));
    if (stray.length)
      throw new UsageError(
        `${option} names host${stray.length > 1 ? 's' : ''} ${foldHosts(stray)}, not in the lab (--hosts ${foldHosts(ids)})`,
      );
  }
  for (const [option, map] of [
    ['--manager', input.managers],
    ['--interfaces', input.interfaces],
    ['--nics', input.nics?.hosts],
    ['--suite', input.suites?.hosts],
    ['--link-layer', input.linkLayers?.hosts],
  ] as const) {
    const stray = [...(map?.keys() ?? [])].filter((id) => !ids.includes(id));
    if (stray.length)
      throw new UsageError(
        `${option} names host${stray.length > 1 ? 's' : ''} ${foldHosts(stray)}, which ${stray.length > 1 ? 'are' : 'is'} not in the lab (--hosts ${foldHosts(ids)})`,
      );
  }

  const takenNames = new Set(fleet.hosts.filter((h) => ids.includes(h.id)).map((h) => h.name));
  const hosts = [...ids].sort((a, b) => a - b).map((id) => planHost(id, input, name, mgmt, takenNames));
  const counts = new Set(hosts.map((h) => h.nics.length));
  const inLab = new Set(ids);
  return {
    version: 1,
    name,
    dir: labDir(name),
    switchNamespace: switchNamespace(name),
    rootLink: rootLinkName(name),
    mgmtSubnet: formatCidr(mgmt),
    mgmtPrefixLength: mgmt.prefixLength,
    controllerAddress: formatIpv4(controller),
    // One count for every host is the lab's fabric count; mixed, each host that differs says its own.
    fabric: {
      subnet: fleet.fabric.subnetText,
      nics: counts.size === 1 ? hosts[0]!.nics.length : fleet.fabric.nics,
      tableBase: fleet.fabric.tableBase,
    },
    hosts,
    pairs: fleet.pairs.filter((p) => inLab.has(p.cpu) && inLab.has(p.mem)),
    networkDaemons: input.networkDaemons ?? true,
    ...(hosts.some((h) => h.suite !== undefined) ? { rootsDir: input.rootsDir ?? DEFAULT_ROOTS_DIR } : {}),
  };
}

/** The lab's interface names for a host it knows no names for: ib0, ib1 — or a GPU node's PCI-slot names. */
export function defaultLabInterfaces(count: number): string[] {
  return count > 2 ? gpuNodeInterfaces(count) : Array.from({ length: count }, (_, i) => `ib${i}`);
}

function planHost(id: number, input: LabPlanInput, labName: string, mgmt: Cidr, takenNames: Set<string>): LabHost {
  const { fleet } = input;
  const known = fleet.hosts.find((h) => h.id === id);
  let hostName = known?.name;
  if (hostName === undefined) {
    hostName = takenNames.has(`node${id}`) ? `node${id}-lab` : `node${id}`;
    takenNames.add(hostName);
  }
  const option = input.managers?.get(id);
  const fromInventory = known && known.manager !== 'auto' ? known.manager : undefined;
  const [manager, managerFrom]: [Manager, ManagerSource] = option
    ? [option, 'option']
    : fromInventory
      ? [fromInventory, 'inventory']
      : [defaultManager(id), 'default'];
  // netplan and networkd-dispatcher are python3 programs: a netplan host without python3 could not apply a change.
  if (manager === 'netplan' && (input.noPython3 ?? []).includes(id) && (input.networkDaemons ?? true))
    throw new UsageError(
      `--without-python3 names host ${id}, a netplan host: netplan and networkd-dispatcher are python3 programs; give it --manager ${id}=networkmanager or ${id}=ifupdown`,
    );
  const suite = input.suites?.hosts?.get(id) ?? input.suites?.all;
  const linkLayer = input.linkLayers?.hosts?.get(id) ?? input.linkLayers?.all;
  const asked = input.nics?.hosts?.get(id) ?? input.nics?.all;
  const count = asked ?? known?.nics.length ?? fleet.fabric.nics;
  // The inventory's names fit only its own count; another count asked for gets the lab's names.
  const interfaces =
    input.interfaces?.get(id) ??
    (known && known.nics.length === count ? known.nics.map((n) => n.iface) : defaultLabInterfaces(count));
  if (interfaces.length !== count) {
    const whose =
      asked !== undefined
        ? `host ${id} has ${count} NICs (--nics)`
        : known
          ? `host ${id} has ${count} NICs in the inventory`
          : `the fabric has ${count} NICs per host`;
    throw new UsageError(
      `host ${id}: ${interfaces.length} interface(s) given (${interfaces.join(',')}) but ${whose}; give one name per NIC, or the count with --nics ${id}=${interfaces.length}`,
    );
  }
  return {
    id,
    name: hostName,
    role: known?.role,
    manager,
    managerFrom,
    address: formatIpv4(mgmt.network + id),
    namespace: hostNamespace(labName, id),
    mgmtPort: mgmtPortName(id),
    nics: interfaces.map((iface, i) => ({
      index: i + 1,
      iface,
      address: deriveNicAddress(fleet.fabric.subnet, id, i + 1),
      prefixLength: fleet.fabric.subnet.prefixLength,
      table: deriveTable(fleet.fabric.tableBase, i + 1),
      port: fabricPortName(id, i + 1),
    })),
    rdma: !(input.noRdma ?? []).includes(id),
    systemd: (input.networkDaemons ?? true) && !(input.noSystemd ?? []).includes(id),
    ...((input.noPython3 ?? []).includes(id) ? { python3: false } : {}),
    ...((input.fping ?? []).includes(id) ? { fping: true } : {}),
    ...((input.fresh ?? []).includes(id) ? { fresh: true } : {}),
    ...(suite !== undefined ? { suite } : {}),
    ...(linkLayer === 'ethernet' ? { linkLayer } : {}),
  };
}

function cidrsOverlap(a: Cidr, b: Cidr): boolean {
  const shorter = a.prefixLength <= b.prefixLength ? a : b;
  const longer = shorter === a ? b : a;
  return cidrContains(shorter, longer.network);
}

function checkMgmtSubnet(mgmt: Cidr, controller: number, fleet: Fleet, ids: readonly number[]): void {
  const text = formatCidr(mgmt);
  const broadcast = (mgmt.network | (~maskOf(mgmt.prefixLength) >>> 0)) >>> 0;
  const tooHigh = ids.filter((id) => mgmt.network + id >= broadcast);
  if (tooHigh.length)
    throw new UsageError(
      `--mgmt-subnet ${text} has no room for host${tooHigh.length > 1 ? 's' : ''} ${foldHosts(tooHigh)} (host H gets <network>+H); use a /24 or larger`,
    );
  if (cidrsOverlap(mgmt, fleet.fabric.subnet))
    throw new UsageError(
      `--mgmt-subnet ${text} overlaps the fabric subnet ${fleet.fabric.subnetText}; the default is ${DEFAULT_MGMT_SUBNET}`,
    );
  if (cidrContains(mgmt, controller))
    throw new UsageError(
      `the controller address ${formatIpv4(controller)} lies inside --mgmt-subnet ${text}; choose a management subnet that does not contain it`,
    );
}

/** Fabric routing tables of the lab (tableBase+1 .. tableBase+the most NICs a host has), flushed by `lab reboot`. */
export function fabricTables(plan: LabPlan): number[] {
  const most = Math.max(plan.fabric.nics, ...plan.hosts.map((h) => h.nics.length));
  return Array.from({ length: most }, (_, i) => deriveTable(plan.fabric.tableBase, i + 1));
}

/** Routes of the machine (as `ip -j route` lists them) that the lab's management route would clash with. */
/** Do two networks written as CIDR share an address? False for anything that is not a network. */
export function subnetsOverlap(a: string, b: string): boolean {
  const [x, y] = [parseCidr(a), parseCidr(b)];
  return x !== undefined && y !== undefined && cidrsOverlap(x.cidr, y.cidr);
}

export function conflictingRoutes(routes: readonly { dst?: string; dev?: string }[], mgmtSubnet: string): string[] {
  const mgmt = parseMgmtSubnet(mgmtSubnet);
  const out: string[] = [];
  for (const route of routes) {
    if (!route.dst || route.dst === 'default') continue;
    const parsed = parseCidr(route.dst.includes('/') ? route.dst : `${route.dst}/32`);
    if (parsed && cidrsOverlap(mgmt, parsed.cidr)) out.push(`${route.dst}${route.dev ? ` dev ${route.dev}` : ''}`);
  }
  return out;
}

/** Whether a lab host emulates a host systemd runs (its timer runner, the systemctl stand-in). */
export function runsSystemd(host: LabHost): boolean {
  return host.systemd !== false;
}
