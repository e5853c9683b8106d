/**
 * Which fabric NICs the links step configures, and how, from the probe: a NIC that carries its
 * convention address and is as asked is left as it is, however it got there; one without it, one
 * whose IPoIB mode, MTU or P_Key child is not as asked, and one ibfleet configured before (its
 * record) are configured in the host's manager — an existing NetworkManager profile bound to the
 * NIC changed (never a second one), else a profile of ibfleet's; an entry in ibfleet's netplan
 * file; a stanza in ibfleet's interfaces.d file. What cannot be done — the manager's configuration
 * in the way, or hardware that cannot take it (hardware.ts) — refuses the host before anything
 * changes. Pure.
 */
import { factOf, type HostFacts } from '../../facts/host-facts.js';
import { claimConfigures, claimText, deviceClaim, netplanClaims, netplanNetwork } from '../../facts/netplan-claims.js';
import { cidrContains, parseIpv4 } from '../../inventory/ipv4.js';
import type { Fleet, Host, Manager, Nic } from '../../inventory/model.js';
import { profileName, profileUuid } from './own-profile.js';
import { generatedFor } from '../../script/header.js';
import type { Blocker } from '../step.js';
import { LINKS_FACT, ARPHRD_INFINIBAND, type LinksFacts, type NmLink } from './facts.js';
import { hardwareIface, hardwareRefusal } from './hardware.js';
import { bindingText, profileApplies, type NmDevice } from './nm-match.js';
import { splitChild, type LinksParams } from './params.js';
import { recordOf, type LinksRecord, type RecordEntry } from './record.js';

/** ibfleet's netplan file for the NICs it configures (before 60-ibfleet.yaml, which adds routing to them). */
export const LINKS_NETPLAN_PATH = '/etc/netplan/50-ibfleet-links.yaml';
/** ibfleet's ifupdown stanzas (a name run-parts and source-directory both take). */
export const LINKS_STANZA_DIR = '/etc/network/interfaces.d';
export const LINKS_STANZA_PATH = `${LINKS_STANZA_DIR}/ibfleet-links`;

/** The profile a NIC is brought up with: one it had, or ibfleet's own (created with this uuid and name). */
export interface LinkProfile {
  readonly uuid: string;
  readonly name: string;
  /** The profile as found; undefined: ibfleet creates it. */
  readonly existing: NmLink | undefined;
  /** ibfleet's own profile (its uuid), whose type and interface are ibfleet's to keep. */
  readonly own: boolean;
}

/** A NIC links configures, with what it is to be. */
export interface ManagedNic {
  readonly nic: Nic;
  readonly want: LinksParams;
  /** The kernel's type for it is InfiniBand (32): an `infiniband` profile, IPoIB settings. */
  readonly ipoib: boolean;
  /** NetworkManager hosts: the profile that carries it. */
  readonly profile: LinkProfile | undefined;
  /** netplan hosts: another netplan file already gives it its address, so ibfleet's adds only mode and MTU. */
  readonly addressElsewhere: boolean;
}

export interface LinksPlan {
  readonly managed: readonly ManagedNic[];
  /** NICs links would configure but cannot (its blockers say why): what they lack is no blocker of the engine's besides. */
  readonly refused: readonly Nic[];
  readonly blockers: readonly Blocker[];
  /** What the host's record says after this deploy. */
  readonly record: LinksRecord;
}

interface Ctx {
  readonly host: Host;
  readonly fleet: Fleet;
  readonly facts: HostFacts;
  readonly manager: Manager;
}

/** The host's netplan files but ibfleet's own (each says in its header that ibfleet generated it). */
function othersNetplan(facts: HostFacts): HostFacts['netplan'] {
  return facts.netplan.filter((f) => f.file !== LINKS_NETPLAN_PATH && !generatedFor(f.text));
}

/** The addresses netplan files give an interface (its definitions by id, set-name or match, a name pattern too). */
function netplanAddresses(files: HostFacts['netplan'], iface: string, hwaddr: string | undefined): string[] {
  return files.flatMap(({ text }) => {
    const network = netplanNetwork(text);
    if (!network) return [];
    return Object.values(network).flatMap((section) => {
      if (!section || typeof section !== 'object') return [];
      return Object.entries(section as Record<string, unknown>).flatMap(([id, device]) => {
        const d = (device ?? {}) as { addresses?: unknown };
        if (!claimConfigures(deviceClaim(id, device), iface, hwaddr) || !Array.isArray(d.addresses)) return [];
        // An address is a string, or (netplan 0.103+) a mapping from it to its options.
        return d.addresses.flatMap((a: unknown) =>
          typeof a === 'string' ? [a] : a && typeof a === 'object' ? Object.keys(a) : [],
        );
      });
    });
  });
}

/** The host's netplan definition (not ibfleet's) that configures the NIC, as netplan matches one. */
function netplanClaimOf(facts: HostFacts, nic: Nic) {
  return netplanClaims(othersNetplan(facts)).find((c) =>
    claimConfigures(c, nic.iface, facts.links.get(nic.iface)?.hwaddr),
  );
}

function carries(facts: HostFacts, nic: Nic): boolean {
  return facts.addresses.some((a) => a.iface === nic.iface && a.address === nic.address);
}

function otherFabricAddress(ctx: Ctx, nic: Nic, addresses: readonly string[]): string | undefined {
  return addresses.find((text) => {
    const [address] = text.split('/');
    const value = parseIpv4(address ?? '');
    return address !== nic.address && value !== undefined && cidrContains(ctx.fleet.fabric.subnet, value);
  });
}

/** What differs from what is asked, in the kernel: the reasons to configure a NIC that carries its address. */
export function kernelDiffers(facts: HostFacts, links: LinksFacts, nic: Nic, want: LinksParams): boolean {
  const link = facts.links.get(nic.iface);
  if (!link) return true;
  if (want.mtu !== undefined && link.mtu !== want.mtu) return true;
  return want.mode !== undefined && links.sys.get(nic.iface)?.mode !== want.mode;
}

/** The NIC as NetworkManager compares a profile with it; a P_Key child's address is its parent's, so it is matched by name only. */
export function nmDevice(facts: HostFacts, links: LinksFacts, nic: Nic): NmDevice {
  const child = hardwareIface(nic) !== nic.iface;
  return {
    iface: nic.iface,
    hwaddr: child ? undefined : facts.links.get(nic.iface)?.hwaddr,
    ipoib: links.sys.get(hardwareIface(nic))?.type === ARPHRD_INFINIBAND,
  };
}

/**
 * The profiles that apply to the NIC (by name, hardware address or match.interface-name), not one
 * NetworkManager keeps in memory only: it made that of an address set by hand, and drops it with the address.
 */
function applying(ctx: Ctx, links: LinksFacts, nic: Nic): NmLink[] {
  const device = nmDevice(ctx.facts, links, nic);
  return (links.nm ?? []).filter((p) => !p.volatile && profileApplies(p, device));
}

/** The profile bound to the NIC: the one it is active with, the one ibfleet made, one that names it, or the first that applies. */
function boundProfile(ctx: Ctx, links: LinksFacts, nic: Nic, entry: RecordEntry | undefined): NmLink | undefined {
  const bound = applying(ctx, links, nic);
  const active = ctx.facts.nm?.active.get(nic.iface);
  const recorded = entry?.manager === 'networkmanager' ? entry.uuid : undefined;
  return (
    bound.find((p) => p.uuid === active) ??
    bound.find((p) => p.uuid === recorded) ??
    bound.find((p) => p.uuid === profileUuid(ctx.host, nic.iface)) ??
    bound.find((p) => p.iface === nic.iface) ??
    bound[0]
  );
}

/**
 * Another interface of the host the profile applies to as well (a pattern, a profile bound to no
 * name): ibfleet gives each NIC its own address, which one profile cannot carry for two.
 */
function sharedWith(ctx: Ctx, links: LinksFacts, nic: Nic, p: NmLink): string | undefined {
  if (p.iface === nic.iface) return undefined;
  const fabric = ctx.host.nics
    .filter((n) => n.iface !== nic.iface && profileApplies(p, nmDevice(ctx.facts, links, n)))
    .map((n) => n.iface);
  // Other interfaces by name only (their kind unread): the loopback takes no profile of these types.
  const others =
    p.match.length && !p.mac
      ? [...ctx.facts.links.keys()].filter(
          (i) =>
            i !== nic.iface &&
            i !== 'lo' &&
            !fabric.includes(i) &&
            profileApplies(p, { iface: i, hwaddr: undefined, ipoib: p.type === 'infiniband' }),
        )
      : [];
  return [...fabric, ...others][0];
}

/** Why the host's manager cannot take ibfleet's configuration of any NIC; undefined when it can. */
function hostRefusal(ctx: Ctx, links: LinksFacts, nics: readonly Nic[]): string | undefined {
  const which = nics.map((n) => n.iface).join(', ');
  switch (ctx.manager) {
    case 'networkmanager':
      return links.nm
        ? undefined
        : `NetworkManager did not answer nmcli, and ibfleet configures ${which} through it; start NetworkManager (or set the host's manager)`;
    case 'netplan':
      return ctx.facts.tools.has('netplan')
        ? undefined
        : `netplan is not installed, and ibfleet configures ${which} in netplan's configuration`;
    case 'ifupdown':
      return links.sources === undefined || sourcesStanzas(links.sources)
        ? undefined
        : `/etc/network/interfaces does not source ${LINKS_STANZA_DIR}, where ibfleet puts the stanzas for ${which}; add the line "source ${LINKS_STANZA_DIR}/*" to it (Debian's default has it)`;
  }
}

/** Why the manager's own configuration keeps links from configuring the NIC; undefined when nothing does. */
function managerRefusal(
  ctx: Ctx,
  links: LinksFacts,
  nic: Nic,
  existing: NmLink | undefined,
  hasAddress: boolean,
): string | undefined {
  switch (ctx.manager) {
    case 'networkmanager': {
      const other = existing && otherFabricAddress(ctx, nic, existing.addresses);
      if (other)
        return `${nic.iface}: its connection profile ${existing.name} gives it ${other}, not ${nic.address}/${nic.prefixLength}: someone may be using that address; change the profile or remove it`;
      const shared = existing && sharedWith(ctx, links, nic, existing);
      return shared
        ? `${nic.iface}: connection profile ${existing.name} applies to it and to ${shared} (${bindingText(existing)}); ibfleet gives each NIC its own address, which one profile cannot carry for both: bind the profile to one interface (connection.interface-name) or remove it`
        : undefined;
    }
    case 'netplan': {
      const claim = netplanClaimOf(ctx.facts, nic);
      return claim && !hasAddress
        ? `${nic.iface}: ${claim.file} configures it (${claimText(claim)}) without ${nic.address}/${nic.prefixLength}; ibfleet does not edit that file: add the address there, or remove ${nic.iface} from it`
        : undefined;
    }
    case 'ifupdown': {
      const stanza = ctx.facts.ifupdown.find(
        (s) => s.keyword === 'iface' && s.iface === nic.iface && s.file !== LINKS_STANZA_PATH,
      );
      return stanza
        ? `${nic.iface}: ${stanza.file} has an "iface ${nic.iface}" stanza; ibfleet does not edit it: configure ${nic.iface} there, or remove that stanza`
        : undefined;
    }
  }
}

/** `source` arguments of /etc/network/interfaces that take in ibfleet's stanza file. */
function sourcesStanzas(sources: readonly string[]): boolean {
  const absolute = (s: string) => (s.startsWith('/') ? s : `/etc/network/${s}`);
  const glob = (pattern: string) =>
    new RegExp(
      `^${pattern
        .replace(/[.+^${}()|\\]/g, '\\$&')
        .replace(/\*/g, '[^/]*')
        .replace(/\?/g, '[^/]')}$`,
    );
  return sources
    .map(absolute)
    .some((s) => s.replace(/\/+$/, '') === LINKS_STANZA_DIR || glob(s).test(LINKS_STANZA_PATH));
}

/**
 * A NIC that carries no address yet, as deploy configures it: `want`, and ibfleet's own profile
 * where NetworkManager runs. What `render` previews and what the exported role's program gives a
 * bare NIC, neither of which has the host's probe.
 */
export function bareNic(host: Host, manager: Manager, nic: Nic, want: LinksParams, ipoib: boolean): ManagedNic {
  return {
    nic,
    want,
    ipoib,
    addressElsewhere: false,
    profile:
      manager === 'networkmanager'
        ? { uuid: profileUuid(host, nic.iface), name: profileName(nic.iface), existing: undefined, own: true }
        : undefined,
  };
}

function managedNic(
  ctx: Ctx,
  links: LinksFacts,
  nic: Nic,
  want: LinksParams,
  existing: NmLink | undefined,
): ManagedNic {
  const ipoib = links.sys.get(hardwareIface(nic))?.type === ARPHRD_INFINIBAND;
  const uuid = existing?.uuid ?? profileUuid(ctx.host, nic.iface);
  const profile =
    ctx.manager === 'networkmanager'
      ? {
          uuid,
          name: existing?.name ?? profileName(nic.iface),
          existing,
          own: uuid === profileUuid(ctx.host, nic.iface),
        }
      : undefined;
  const claimed = netplanClaimOf(ctx.facts, nic) !== undefined;
  return {
    nic,
    want,
    ipoib,
    profile,
    addressElsewhere: ctx.manager === 'netplan' && claimed && carries(ctx.facts, nic),
  };
}

/** The record after this deploy: what it said, and an entry for each NIC links takes over now. */
function nextRecord(ctx: Ctx, before: LinksRecord | undefined, managed: readonly ManagedNic[]): LinksRecord {
  const entries: RecordEntry[] = [...(before?.entries ?? [])];
  for (const m of managed) {
    if (recordOf(before, m.nic.iface)) continue;
    const link = ctx.facts.links.get(m.nic.iface);
    const was = { ...(link?.up !== true ? { down: true } : {}), ...(link?.mtu !== undefined ? { mtu: link.mtu } : {}) };
    if (ctx.manager !== 'networkmanager') entries.push({ iface: m.nic.iface, manager: ctx.manager, ...was });
    else {
      const e = m.profile!.existing;
      entries.push({
        iface: m.nic.iface,
        manager: ctx.manager,
        uuid: m.profile!.uuid,
        before: e
          ? { method: e.method, addresses: e.addresses, mtu: e.mtu, transportMode: e.transportMode }
          : 'created',
        ...was,
      });
    }
  }
  return { entries };
}

export function planLinks(ctx: Ctx, settings: LinksParams): LinksPlan {
  const links = factOf(ctx.facts, LINKS_FACT);
  const managed: ManagedNic[] = [];
  const refused: Nic[] = [];
  const blockers: Blocker[] = [];
  const refuse = (nic: Nic, message: string) => {
    blockers.push({ kind: 'step', iface: nic.iface, message });
    refused.push(nic);
  };
  const wanted = ctx.host.nics.filter((nic) => wantsManaging(ctx, links, nic, settings));
  const host = wanted.length ? hostRefusal(ctx, links, wanted) : undefined;
  if (host)
    return {
      managed,
      refused: wanted,
      blockers: [{ kind: 'step', message: host }],
      record: nextRecord(ctx, links.record, []),
    };
  for (const nic of ctx.host.nics) {
    const roce =
      settings.roceMode !== undefined &&
      hardwareRefusal(nic, { roceMode: settings.roceMode }, ctx.facts, links, ctx.manager);
    if (roce) refuse(nic, roce);
    if (roce || !wanted.includes(nic)) continue;
    const existing =
      ctx.manager === 'networkmanager' ? boundProfile(ctx, links, nic, recordOf(links.record, nic.iface)) : undefined;
    const refusal =
      managerRefusal(ctx, links, nic, existing, carries(ctx.facts, nic)) ??
      hardwareRefusal(nic, { ...settings, roceMode: undefined }, ctx.facts, links, ctx.manager);
    if (refusal) refuse(nic, refusal);
    else managed.push(managedNic(ctx, links, nic, settings, existing));
  }
  return { managed, refused, blockers, record: nextRecord(ctx, links.record, managed) };
}

/**
 * Whether links takes the NIC over: ibfleet configured it before, or it lacks its address (or its
 * P_Key child), or the kernel differs from what is asked. Not an interface the host lacks (but a
 * P_Key child of a parent it has). Not a NIC that carries another fabric
 * address: the engine refuses the host for it, naming the address (someone may be using it). Nor
 * one whose manager's own configuration gives it its address though the kernel does not show it
 * now (a NIC down): what keeps it from its address is not a configuration links could add.
 */
function wantsManaging(ctx: Ctx, links: LinksFacts, nic: Nic, settings: LinksParams): boolean {
  // An interface the host does not have is the engine's to name (the inventory's slip), unless it is a P_Key child links makes of a parent there.
  const child = splitChild(nic.iface);
  if (
    !ctx.facts.links.has(nic.iface) &&
    !(settings.pkey !== undefined && child !== undefined && ctx.facts.links.has(child.parent))
  )
    return false;
  if (recordOf(links.record, nic.iface) !== undefined) return true;
  const here = ctx.facts.addresses.filter((a) => a.iface === nic.iface).map((a) => `${a.address}/${a.prefixLength}`);
  const hasAddress = carries(ctx.facts, nic);
  if (!hasAddress && (otherFabricAddress(ctx, nic, here) || configuredElsewhere(ctx, links, nic))) return false;
  const missingChild = settings.pkey !== undefined && !ctx.facts.links.has(nic.iface);
  return !hasAddress || missingChild || kernelDiffers(ctx.facts, links, nic, settings);
}

/** The manager's own configuration gives the NIC its convention address: a profile, a netplan entry, an ifupdown stanza of the host's. */
function configuredElsewhere(ctx: Ctx, links: LinksFacts, nic: Nic): boolean {
  const cidr = `${nic.address}/${nic.prefixLength}`;
  switch (ctx.manager) {
    case 'networkmanager':
      return applying(ctx, links, nic).some(
        (p) => p.addresses.includes(cidr) && p.uuid !== profileUuid(ctx.host, nic.iface),
      );
    case 'netplan':
      return netplanAddresses(othersNetplan(ctx.facts), nic.iface, ctx.facts.links.get(nic.iface)?.hwaddr).includes(
        cidr,
      );
    case 'ifupdown':
      return ctx.facts.ifupdown.some(
        (s) => s.keyword === 'iface' && s.iface === nic.iface && s.file !== LINKS_STANZA_PATH,
      );
  }
}

/** A P_Key child's parent and P_Key, when the NIC is one links creates. */
export function partitionOf(m: ManagedNic): { readonly parent: string; readonly pkey: string } | undefined {
  return m.want.pkey !== undefined ? splitChild(m.nic.iface) : undefined;
}
