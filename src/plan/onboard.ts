/**
 * Onboarding decisions, pure: from what the read-only probe found on a new machine, which
 * interface is which NIC (the inventory gets the real names, e.g. ibs5f0/ibs5f1), whether its
 * addresses follow the lab convention, which network manager brings the NICs up, and the
 * inventory entry to write. Everything that makes onboard refuse is decided here, before any
 * change is made anywhere.
 */
import { deriveNicAddress } from '../inventory/derive.js';
import type { HostEntry } from '../inventory/entry.js';
import { cidrContains, parseIpv4 } from '../inventory/ipv4.js';
import type { Fabric, Host, Manager, ManagerSetting } from '../inventory/model.js';
import { HOST_NAME } from '../inventory/schema.js';
import { readsAsSelection } from '../inventory/select.js';
import { detectManager } from './detect-manager.js';
import { osName, type HostFacts } from '../facts/host-facts.js';
import type { AddressFact, RouteGetFact } from '../facts/ip-facts.js';
import { rdmaPortOf } from '../facts/rdma-facts.js';

export const ONBOARD_ROLES = ['cpu', 'mem'] as const;
export type OnboardRole = (typeof ONBOARD_ROLES)[number];

/** The lab's naming, from the seeds: cpuserver16, memserver34 (when nothing better is known). */
export function onboardName(role: OnboardRole, id: number): string {
  return `${role}server${id}`;
}

/**
 * The name a host gets in the inventory: the one given with --cpu-name / --mem-name; else the
 * inventory's own entry for it; else what the machine calls itself (unless another host already
 * has that name); else the lab's cpuserverN / memserverN.
 */
export function chooseName(options: {
  readonly flag: string | undefined;
  readonly inventory: string | undefined;
  readonly hostname: string | undefined;
  readonly taken: ReadonlySet<string>;
  readonly role: OnboardRole;
  readonly id: number;
}): string {
  if (options.flag !== undefined) return options.flag;
  if (options.inventory !== undefined) return options.inventory;
  if (options.hostname !== undefined && !options.taken.has(options.hostname)) return options.hostname;
  return onboardName(options.role, options.id);
}

export interface DiscoveredNic {
  readonly nic: number;
  readonly iface: string;
  readonly address: string;
  readonly prefixLength: number;
  /** The interface carries no address yet: the playbook gives it `address` (a machine as it arrives). */
  readonly unaddressed?: boolean;
}

export type ManagerSource = 'flag' | 'inventory' | 'detected';

export interface HostDiscovery {
  readonly id: number;
  readonly role: OnboardRole;
  readonly os: string | undefined;
  /** What the machine calls itself, when that is a name the inventory accepts and --hosts reads as that name. */
  readonly hostname: string | undefined;
  /** NICs found where the convention puts them (all of them when `problems` is empty). */
  readonly nics: readonly DiscoveredNic[];
  readonly manager: Manager | undefined;
  readonly managerSource: ManagerSource | undefined;
  /** Why the manager was chosen (configuration files, running services). */
  readonly evidence: readonly string[];
  /** Why onboard must refuse this host; empty when all is well. */
  readonly problems: readonly string[];
}

export interface DiscoveryInput {
  readonly fabric: Fabric;
  /** The host as the inventory (or onboard's provisional entry) describes it; its interfaces may be placeholders. */
  readonly host: Host;
  readonly role: OnboardRole;
  readonly facts: HostFacts;
  /** --cpu-manager / --mem-manager. */
  readonly managerFlag?: Manager | undefined;
  /** What the playbook needs the manager to have (a hook's dispatcher): the host is refused without it. */
  readonly prerequisite: (manager: Manager, facts: HostFacts) => string | undefined;
  /** The playbook configures the NICs' addresses itself (a step provides them): a machine without any is found by its interfaces. */
  readonly providesAddresses?: boolean;
}

/** Host and NIC number of a fabric address under the convention, if it fits it. */
export function conventionOf(fabric: Fabric, address: string): { host: number; nic: number } | undefined {
  const value = parseIpv4(address);
  if (value === undefined || !cidrContains(fabric.subnet, value)) return undefined;
  if (value >>> 16 !== fabric.subnet.network >>> 16) return undefined;
  return { host: (value >>> 8) & 0xff, nic: value & 0xff };
}

function describe(addresses: readonly AddressFact[]): string {
  return addresses.map((a) => `${a.iface} ${a.address}/${a.prefixLength}`).join(', ');
}

/**
 * Which interface carries NIC n's address (fabric subnet, host `id`, NIC n = 1..count: the host's
 * own NIC count, which may differ from the fabric's), and what is wrong if any.
 */
export function discoverFabricNics(
  fabric: Fabric,
  id: number,
  addresses: readonly AddressFact[],
  count: number = fabric.nics,
): { nics: DiscoveredNic[]; problems: string[] } {
  const onFabric = addresses.filter((a) => {
    const value = parseIpv4(a.address);
    return value !== undefined && cidrContains(fabric.subnet, value);
  });
  const nics: DiscoveredNic[] = [];
  const problems: string[] = [];
  for (let nic = 1; nic <= count; nic++) {
    const expected = deriveNicAddress(fabric.subnet, id, nic);
    const carriers = addresses.filter((a) => a.address === expected);
    if (carriers.length === 0) {
      problems.push(`no interface carries ${expected} (NIC ${nic} of host ${id})`);
      continue;
    }
    if (carriers.length > 1) {
      problems.push(
        `${expected} (NIC ${nic}) is on ${carriers.length} interfaces (${carriers.map((c) => c.iface).join(', ')}); each NIC address belongs to one interface`,
      );
      continue;
    }
    const carrier = carriers[0]!;
    if (carrier.prefixLength !== fabric.subnet.prefixLength) {
      problems.push(
        `${carrier.iface} carries ${expected}/${carrier.prefixLength}, but the fabric is ${fabric.subnetText}: the convention gives ${expected}/${fabric.subnet.prefixLength}`,
      );
      continue;
    }
    const twice = nics.find((n) => n.iface === carrier.iface);
    if (twice) {
      problems.push(
        `${carrier.iface} carries both ${twice.address} (NIC ${twice.nic}) and ${expected} (NIC ${nic}); each NIC needs its own interface`,
      );
      continue;
    }
    nics.push({ nic, iface: carrier.iface, address: expected, prefixLength: carrier.prefixLength });
  }
  if (problems.length > 0) {
    const otherHosts = [
      ...new Set(
        onFabric
          .map((a) => conventionOf(fabric, a.address)?.host)
          .filter((h): h is number => h !== undefined && h !== id),
      ),
    ];
    if (nics.length === 0 && otherHosts.length > 0) {
      const wanted = Array.from({ length: count }, (_, i) => deriveNicAddress(fabric.subnet, id, i + 1)).join(', ');
      return {
        nics,
        problems: [
          `it carries none of host ${id}'s addresses (${wanted}) but those of host ${otherHosts.join(', ')} (${describe(onFabric)}): is this machine host ${otherHosts[0]}? check the host number and the address given for it`,
        ],
      };
    } else if (onFabric.length > 0) {
      problems.push(
        `its fabric addresses: ${describe(onFabric)}; the convention is NIC n of host ${id} = ${deriveNicAddress(fabric.subnet, id, 1).replace(/\.1$/, '.n')}/${fabric.subnet.prefixLength}`,
      );
    } else {
      problems.push(
        `it has no address in ${fabric.subnetText} at all (are the IB NICs up and addressed? is the IB driver, e.g. MLNX_OFED, installed?)`,
      );
    }
  }
  return { nics, problems };
}

/**
 * A machine as it arrives, whose NICs carry no fabric address yet: its fabric NICs are the
 * interfaces the inventory names for it, where the machine has them all; else the interfaces with
 * an RDMA device (what `ibdev2netdev` lists), in the order of their devices and ports, when there
 * are as many as the fabric has NICs and none carries an address (a management interface does).
 */
export function discoverUnaddressedNics(
  fabric: Fabric,
  host: Host,
  facts: HostFacts,
): { nics: DiscoveredNic[]; problems: string[] } {
  const as = (ifaces: readonly string[]) =>
    ifaces.map((iface, i) => ({
      nic: i + 1,
      iface,
      address: deriveNicAddress(fabric.subnet, host.id, i + 1),
      prefixLength: fabric.subnet.prefixLength,
      unaddressed: true,
    }));
  const named = host.nics.map((n) => n.iface);
  if (named.every((i) => facts.links.has(i))) return { nics: as(named), problems: [] };
  const rdma = facts.rdma;
  const candidates = rdma
    ? [...rdma.nics.keys()]
        .filter((iface) => facts.links.has(iface) && !facts.addresses.some((a) => a.iface === iface))
        .map((iface) => ({ iface, port: rdmaPortOf(iface, rdma) }))
        .filter((c) => c.port !== undefined)
        .sort(
          (a, b) =>
            a.port!.device.localeCompare(b.port!.device, undefined, { numeric: true }) || a.port!.port - b.port!.port,
        )
    : [];
  if (candidates.length === host.nics.length) return { nics: as(candidates.map((c) => c.iface)), problems: [] };
  const found = candidates.map((c) => `${c.iface} (${c.port!.device} port ${c.port!.port})`).join(', ');
  return {
    nics: [],
    problems: [
      `it has no address in ${fabric.subnetText}, and not its NICs' interfaces ${named.join(', ')}; ${candidates.length ? `${candidates.length} interface(s) without an address have an RDMA device (${found}), not ${host.nics.length}` : 'no interface without an address has an RDMA device (is the HCA driver loaded?)'}: name its NICs' interfaces in the inventory (interfaces:)`,
    ],
  };
}

/** The host with its NICs renamed to the interfaces found on the machine. */
export function withInterfaces(host: Host, nics: readonly DiscoveredNic[]): Host {
  return {
    ...host,
    nics: host.nics.map((n) => ({ ...n, iface: nics.find((d) => d.nic === n.index)?.iface ?? n.iface })),
  };
}

export function discoverHost(input: DiscoveryInput): HostDiscovery {
  const { fabric, host, role, facts } = input;
  const byAddress = discoverFabricNics(fabric, host.id, facts.addresses, host.nics.length);
  const onFabric = facts.addresses.some((a) => cidrContains(fabric.subnet, parseIpv4(a.address) ?? -1));
  // Not one fabric address anywhere: a machine as it arrives, which the playbook addresses itself.
  const { nics, problems } =
    byAddress.nics.length === 0 && !onFabric && input.providesAddresses
      ? discoverUnaddressedNics(fabric, host, facts)
      : byAddress;
  const hostname =
    facts.hostname !== undefined && HOST_NAME.test(facts.hostname) && !readsAsSelection(facts.hostname)
      ? facts.hostname
      : undefined;
  const base = { id: host.id, role, os: osName(facts), hostname, nics };
  if (problems.length > 0) return { ...base, manager: undefined, managerSource: undefined, evidence: [], problems };

  const real = withInterfaces(host, nics);
  const flag = `--${role}-manager`;
  const setting: { manager: ManagerSetting; source: ManagerSource } = input.managerFlag
    ? { manager: input.managerFlag, source: 'flag' }
    : { manager: host.manager, source: 'inventory' };
  let manager: Manager;
  let source: ManagerSource;
  let evidence: readonly string[] = [];
  if (setting.manager !== 'auto') {
    manager = setting.manager;
    source = setting.source;
  } else {
    const detection = detectManager(real, facts);
    evidence = detection.evidence;
    if (!detection.ok) {
      const message = detection.message.replace(/; set manager: .*$/, '');
      return {
        ...base,
        manager: undefined,
        managerSource: undefined,
        evidence,
        problems: [`${message}; say which with ${flag} networkmanager|netplan|ifupdown (or manager: in the inventory)`],
      };
    }
    manager = detection.manager;
    source = 'detected';
  }
  const missing = input.prerequisite(manager, facts);
  return { ...base, manager, managerSource: source, evidence, problems: missing ? [`${manager}: ${missing}`] : [] };
}

export interface EntryInput {
  readonly id: number;
  readonly role: OnboardRole;
  readonly owner: string;
  /** The name to write: --cpu-name / --mem-name, the inventory's, or the discovered hostname (chooseName). */
  readonly name: string;
  /** --cpu-address / --mem-address; undefined keeps the inventory's. */
  readonly address: string | undefined;
  readonly user: string | undefined;
  readonly managerFlag: Manager | undefined;
  /** What the machine showed; undefined before discovery (interfaces then not known). */
  readonly discovery: HostDiscovery | undefined;
}

/**
 * The entry onboard asks for a host: the lab's name, the role, the machine's real interface names.
 * `manager:` only when given with a flag — a detected manager stays `auto`, so a later change on
 * the machine is detected again. The inventory editor leaves out what the entry would inherit
 * from `defaults:` anyway (e.g. `interfaces: [ib0, ib1]`).
 */
export function onboardEntry(input: EntryInput): HostEntry {
  const d = input.discovery;
  const comment = d
    ? `${input.owner}'s ${input.role} server${d.os ? `: ${d.os}` : ''}${d.manager ? `, ${d.manager}${d.managerSource === 'detected' ? ' (detected)' : ''}` : ''}`
    : undefined;
  return {
    id: input.id,
    name: input.name,
    address: input.address,
    role: input.role,
    interfaces: d?.nics.map((n) => n.iface),
    user: input.user,
    manager: input.managerFlag,
    comment,
  };
}

/**
 * Discovery probes a machine under its provisional entry, whose interface names may be
 * placeholders, and deploy plans from that same probe under the names discovery found. The probe
 * read the sysctls of every interface and everything else by what the machine calls it; only
 * `ip route get`, asked from each NIC's address, was filed under the provisional name: refile it,
 * NIC by NIC.
 */
export function factsUnderFoundNames(facts: HostFacts, probedAs: Host, found: Host): HostFacts {
  const routeGet = new Map<string, RouteGetFact>();
  for (const nic of found.nics) {
    const probed = probedAs.nics.find((n) => n.index === nic.index);
    const fact = probed && facts.routeGet.get(probed.iface);
    if (fact) routeGet.set(nic.iface, fact);
  }
  return { ...facts, routeGet };
}
