/**
 * What the links step reads on a host, from where the kernel and the managers keep it:
 *
 * - per fabric interface (and the parent of a P_Key child), from sysfs: `type` (the ARPHRD type:
 *   32 is InfiniBand/IPoIB, 1 Ethernet — what RoCE ports carry), IPoIB's `mode` (ipoib_cm's
 *   attribute; absent without connected-mode support), `address` — whose first byte carries
 *   IPoIB's RC flag (0x80, IPOIB_FLAGS_RC) only where connected mode can run: enhanced IPoIB
 *   (mlx5, ConnectX-4 and later) leaves it clear, and the kernel refuses `connected` there — and a
 *   child's `pkey`;
 * - `ip -d -o link show`: each link's `maxmtu` (the most the driver takes);
 * - `ibv_devinfo`: each RDMA port's `active_mtu` (sysfs has no MTU of a port): datagram mode
 *   carries at most that less IPoIB's 4-byte header;
 * - NetworkManager, where it answers: every connection profile with its type, interface, IPv4
 *   method and addresses, MTU, IPoIB transport mode, P_Key and parent (the keyfiles are
 *   NetworkManager's, read through nmcli);
 * - ifupdown: the `source` lines of /etc/network/interfaces;
 * - the RDMA CM's `default_roce_mode` per port (configfs);
 * - ibfleet's record of what it configured (record.ts).
 *
 * The probe closing a change reads only what the change can alter (the ports' MTUs, drivers'
 * limits and ifupdown's sources it does not). Text from the host: parsed defensively. Pure.
 */
import type { Fact, FactSections } from '../../facts/fact.js';
import { unescapeTerse } from '../../facts/nm-facts.js';
import { contentLines } from '../../facts/probe-format.js';
import { shellQuote } from '../../script/shell.js';
import { parseLinksRecord, LINKS_RECORD_PATH, type LinksRecord } from './record.js';
import { splitChild } from './params.js';

/** ARPHRD_INFINIBAND: the type of an IPoIB interface. */
export const ARPHRD_INFINIBAND = 32;

export interface LinkSys {
  readonly type: number | undefined;
  /** IPoIB `datagram` / `connected`; '' without the attribute. */
  readonly mode: string;
  /** The hardware address as sysfs prints it. */
  readonly address: string;
  /** A P_Key child's P_Key (`0x8002`); '' otherwise. */
  readonly pkey: string;
}

/** A NetworkManager connection profile, as far as links reads it. */
export interface NmLink {
  readonly uuid: string;
  readonly name: string;
  /** `802-3-ethernet`, `infiniband`, … */
  readonly type: string;
  /** connection.interface-name ('' when the profile binds to no name). */
  readonly iface: string;
  readonly method: string;
  readonly addresses: readonly string[];
  /** The MTU property of its type (`auto` or bytes). */
  readonly mtu: string;
  readonly transportMode: string;
  /** infiniband.p-key as nmcli prints it (`-1`: none). */
  readonly pkey: string;
  readonly parent: string;
  /** The hardware address it is bound to (802-3-ethernet.mac-address or infiniband.mac-address, lower case); '' when none. */
  readonly mac: string;
  /** match.interface-name (NetworkManager 1.14+): the patterns of interface names it applies to; [] when none. */
  readonly match: readonly string[];
  /** Kept in memory only (its file under /run): NetworkManager's own record of an address set by hand, gone with it. */
  readonly volatile: boolean;
}

export interface LinksFacts {
  /** Interfaces the probe looked at and found. */
  readonly sys: ReadonlyMap<string, LinkSys>;
  readonly maxMtu: ReadonlyMap<string, number>;
  /** `device/port` → active MTU in bytes. */
  readonly activeMtu: ReadonlyMap<string, number>;
  /** Every connection profile; undefined where NetworkManager did not answer. */
  readonly nm: readonly NmLink[] | undefined;
  /** The `source` / `source-directory` arguments in /etc/network/interfaces; undefined when not read. */
  readonly sources: readonly string[] | undefined;
  readonly record: LinksRecord | undefined;
  /** `device/port` → default_roce_mode (`RoCE v2`, `IB/RoCE v1`). */
  readonly roce: ReadonlyMap<string, string>;
}

/** The properties nmcli is asked for, in this order (an absent setting prints nothing). */
const NM_FIELDS = [
  'connection.uuid',
  'connection.id',
  'connection.type',
  'connection.interface-name',
  'ipv4.method',
  'ipv4.addresses',
  '802-3-ethernet.mtu',
  'infiniband.mtu',
  'infiniband.transport-mode',
  'infiniband.p-key',
  'infiniband.parent',
  '802-3-ethernet.mac-address',
  'infiniband.mac-address',
];
/** The match setting came with NetworkManager 1.14; an older nmcli refuses the whole command for a field it does not know. */
const NM_MATCH_FIELD = 'match.interface-name';

/** The interfaces to read: the fabric NICs and the parents of P_Key children. */
export function probedInterfaces(ifaces: readonly string[]): string[] {
  return [...new Set(ifaces.flatMap((i) => [i, ...(splitChild(i) ? [splitChild(i)!.parent] : [])]))];
}

/** How much of the links record the probe reads: a host cannot make it print more. */
const RECORD_MAX_LINES = 64;

/** The probe's want (ProbeOptions.wants) for what only an asked MTU is checked against: the drivers' and ports' limits. */
export const LINK_LIMITS = 'link-limits';

/**
 * The fact's probe lines; `fabric` (planning and status) adds what only a plan reads, and the
 * limits an MTU is checked against (two processes: ip -d, ibv_devinfo) only where one is asked.
 * ifupdown's `source` lines are read with the shell alone.
 */
export function linksProbe(
  ifaces: readonly string[] | undefined,
  options: { readonly fabric: boolean; readonly managerEvidence: boolean; readonly limits: boolean },
): string[] {
  // links_sys, links_nm, links_source, links_roce: host/functions/links.sh; rd_section: facts.sh.
  return [
    ifaces ? `\tlinks_sys ${probedInterfaces(ifaces).map(shellQuote).join(' ')}` : '\tlinks_sys --all',
    ...(options.fabric && options.limits
      ? [
          '\ts links ipd; ip -d -o link show 2>/dev/null',
          '\tif command -v ibv_devinfo >/dev/null 2>&1; then s links ibv; ibv_devinfo 2>/dev/null; fi',
        ]
      : []),
    `\tlinks_nm ${[...NM_FIELDS, NM_MATCH_FIELD].join(',')} ${NM_FIELDS.join(',')}`,
    ...(options.managerEvidence ? ['\tlinks_source'] : []),
    '\tlinks_roce',
    `\trd_section 'links record' ${RECORD_MAX_LINES} ${shellQuote(LINKS_RECORD_PATH)}`,
  ];
}

function parseSys(lines: readonly string[]): Map<string, LinkSys> {
  const out = new Map<string, LinkSys>();
  for (const line of lines) {
    const m = /^if ([^|]+)\|([^|]*)\|([^|]*)\|([^|]*)\|([^|]*)$/.exec(line.trim());
    if (!m) continue;
    const type = /^\d+$/.test(m[2]!) ? Number(m[2]) : undefined;
    out.set(m[1]!, {
      type,
      mode: m[3]!,
      address: m[4]!.toLowerCase(),
      pkey: /^0x[0-9a-f]{4}$/i.test(m[5]!) ? m[5]!.toLowerCase() : '',
    });
  }
  return out;
}

/** `3: ib0@if5: <…> mtu 2044 … maxmtu 65535 …` → ib0 → 65535. */
function parseMaxMtu(lines: readonly string[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of lines) {
    const m = /^\d+:\s+([^:@\s]+)(?:@\S+)?:.*\bmaxmtu (\d+)/.exec(line);
    if (m && Number(m[2]) > 0) out.set(m[1]!, Number(m[2]));
  }
  return out;
}

/** `hca_id: mlx5_0` … `port: 1` … `active_mtu: 4096 (5)`. */
function parseIbvDevinfo(lines: readonly string[]): Map<string, number> {
  const out = new Map<string, number>();
  let device: string | undefined;
  let port: number | undefined;
  for (const line of lines) {
    const hca = /^hca_id:\s*(\S+)/.exec(line.trim());
    const p = /^port:\s*(\d+)$/.exec(line.trim());
    const mtu = /^active_mtu:\s*(\d+)/.exec(line.trim());
    if (hca) [device, port] = [hca[1], undefined];
    else if (p) port = Number(p[1]);
    else if (mtu && device !== undefined && port !== undefined) out.set(`${device}/${port}`, Number(mtu[1]));
  }
  return out;
}

/** `nmcli -t` of several profiles: `field:value` lines, a blank line between profiles; a profile printed twice counts once (its last). */
export function parseNmLinks(lines: readonly string[]): NmLink[] {
  const profiles = new Map<string, NmLink>();
  const files = new Map(
    lines.flatMap((l) => {
      const m = /^file (\S+) (.*)$/.exec(l);
      return m ? [[m[1]!, m[2]!] as const] : [];
    }),
  );
  let current: Record<string, string> | undefined;
  const finish = () => {
    if (current?.['connection.uuid']) {
      const profile = toNmLink(current, files);
      profiles.set(profile.uuid, profile);
    }
    current = undefined;
  };
  for (const line of lines) {
    const m = /^([a-z0-9-]+\.[a-z0-9-]+):(.*)$/.exec(line);
    if (!m) continue;
    if (m[1] === 'connection.uuid') finish();
    current ??= {};
    current[m[1]!] = unescapeTerse(m[2]!);
  }
  finish();
  return [...profiles.values()];
}

function toNmLink(p: Record<string, string>, files: ReadonlyMap<string, string>): NmLink {
  const type = (p['connection.type'] ?? '').trim();
  const uuid = p['connection.uuid']!.trim();
  return {
    uuid,
    volatile: (files.get(uuid) ?? '').startsWith('/run/'),
    name: p['connection.id'] ?? '',
    type,
    iface: (p['connection.interface-name'] ?? '').trim().replace(/^--$/, ''),
    method: (p['ipv4.method'] ?? '').trim(),
    addresses: (p['ipv4.addresses'] ?? '')
      .split(/,\s*/)
      .map((a) => a.trim())
      .filter((a) => a !== '' && a !== '--'),
    mtu: ((type === 'infiniband' ? p['infiniband.mtu'] : p['802-3-ethernet.mtu']) ?? 'auto').trim(),
    transportMode: (p['infiniband.transport-mode'] ?? '').trim(),
    pkey: (p['infiniband.p-key'] ?? '').trim(),
    parent: (p['infiniband.parent'] ?? '').trim().replace(/^--$/, ''),
    mac: ((type === 'infiniband' ? p['infiniband.mac-address'] : p['802-3-ethernet.mac-address']) ?? '')
      .trim()
      .replace(/^--$/, '')
      .toLowerCase(),
    // A list nmcli prints joined by commas.
    match: (p[NM_MATCH_FIELD] ?? '')
      .split(',')
      .map((m) => m.trim())
      .filter((m) => m !== '' && m !== '--'),
  };
}

function parseRoce(lines: readonly string[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of lines) {
    const m = /^\/sys\/kernel\/config\/rdma_cm\/([^/\s]+)\/ports\/(\d+)\/default_roce_mode (.*)$/.exec(line);
    if (m) out.set(`${m[1]}/${m[2]}`, m[3]!.trim());
  }
  return out;
}

export function parseLinksFacts(sections: FactSections): LinksFacts {
  const record = sections.get('links record');
  return {
    sys: parseSys(sections.get('links sys') ?? []),
    maxMtu: parseMaxMtu(sections.get('links ipd') ?? []),
    activeMtu: parseIbvDevinfo(sections.get('links ibv') ?? []),
    nm: sections.has('links nm') ? parseNmLinks(sections.get('links nm')!) : undefined,
    // The shell printed every line that may be one (behind the content prefix): only `source[-directory] ARG…` lines count.
    sources: sections.has('links source')
      ? contentLines(sections.get('links source') ?? []).flatMap((l) =>
          /^\s*source(-directory)?\s+\S/.test(l)
            ? l
                .replace(/^\s*source(-directory)?\s+/, '')
                .trim()
                .split(/\s+/)
            : [],
        )
      : undefined,
    record: record === undefined ? undefined : parseLinksRecord(contentLines(record).join('\n')),
    roce: parseRoce(sections.get('links roce') ?? []),
  };
}

export const LINKS_FACT: Fact<LinksFacts> = {
  name: 'links',
  probe: (host, options) =>
    linksProbe(options.everyInterface ? undefined : host.nics.map((n) => n.iface), {
      fabric: options.fabric !== false,
      managerEvidence: options.managerEvidence,
      limits: options.wants?.has(LINK_LIMITS) === true,
    }),
  parse: parseLinksFacts,
};
