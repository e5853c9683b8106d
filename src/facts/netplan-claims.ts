/**
 * What the host's netplan files configure: each interface a file claims, where (device type and id)
 * and with which renderer. Read to tell which manager brings a NIC up, and where native persistence
 * can add a NIC's routing. Pure.
 */
import { parse } from 'yaml';
import { globMatches } from './glob.js';
import type { HostFacts } from './host-facts.js';

export interface NetplanClaim {
  readonly file: string;
  readonly iface: string;
  readonly renderer: string;
  /** Where the file defines it: device type (`ethernets`, `bonds`, …) and id. */
  readonly type: string;
  readonly id: string;
  /** Its `match:` (without `set-name`, it configures every interface that takes it: `name` is a shell pattern). */
  readonly match?: { readonly name?: string; readonly macaddress?: string; readonly driver?: string };
}

/** The name a definition gives its interface, and its `match:` criteria, from the device's mapping. */
export function deviceClaim(id: string, device: unknown): Pick<NetplanClaim, 'iface' | 'match'> {
  const d = (device ?? {}) as { 'set-name'?: unknown; match?: unknown };
  const m = d.match && typeof d.match === 'object' ? (d.match as Record<string, unknown>) : undefined;
  const text = (key: string) => (typeof m?.[key] === 'string' ? { [key]: m[key] as string } : {});
  const match = m ? { ...text('name'), ...text('macaddress'), ...text('driver') } : undefined;
  const iface = typeof d['set-name'] === 'string' ? d['set-name'] : typeof match?.name === 'string' ? match.name : id;
  return { iface, ...(match && Object.keys(match).length ? { match } : {}) };
}

/**
 * The definition configures the interface, as netplan matches one: by its id (or `set-name`), or by
 * its `match:` — the name pattern (a glob, `ib[0]`, `ib*`) and the MAC address (against the
 * kernel's, where known) each holding where given. A match by driver alone is not read (the probe
 * does not read drivers): it claims no NIC here.
 */
export function claimConfigures(
  claim: Pick<NetplanClaim, 'iface' | 'match'>,
  iface: string,
  hwaddr: string | undefined,
): boolean {
  if (claim.iface === iface) return true;
  const m = claim.match;
  if (!m || (m.name === undefined && m.macaddress === undefined)) return false;
  if (m.name !== undefined && !globMatches(m.name, iface)) return false;
  return m.macaddress === undefined || hwaddr === undefined || m.macaddress.toLowerCase() === hwaddr.toLowerCase();
}

/** How the definition names what it configures, for a message: `ethernets.fabric, match name ib[0]`. */
export function claimText(claim: NetplanClaim): string {
  const m = claim.match;
  const words = m ? Object.entries(m).map(([k, v]) => `${k} ${v}`) : [];
  return `${claim.type}.${claim.id}${words.length ? `, match ${words.join(' ')}` : ''}`;
}

const DEVICE_TYPES = [
  'ethernets',
  'bonds',
  'bridges',
  'vlans',
  'wifis',
  'modems',
  'tunnels',
  'vrfs',
  'dummy-devices',
  'virtual-ethernets',
  'nm-devices',
];

/** Interfaces netplan files configure, with the renderer that applies to each (networkd unless set). */
export function netplanClaims(files: HostFacts['netplan']): NetplanClaim[] {
  return files.flatMap(({ file, text }) => claimsOfText(text).map((c) => ({ file, ...c })));
}

/**
 * Hosts of one fleet carry the same netplan file but for their own addresses, and parsing YAML is
 * most of what planning costs per host. What a file claims does not depend on its addresses, so
 * the parse is shared by every file that differs from another only in them.
 */
const ADDRESS_LITERAL = /\b\d{1,3}(?:\.\d{1,3}){3}(?:\/\d{1,2})?\b/g;
const CLAIMS_CACHE_LIMIT = 256;
const claimsCache = new Map<string, readonly Omit<NetplanClaim, 'file'>[]>();

function claimsOfText(text: string): readonly Omit<NetplanClaim, 'file'>[] {
  const key = text.replace(ADDRESS_LITERAL, '0.0.0.0');
  let claims = claimsCache.get(key);
  if (!claims) {
    claims = parseClaims(text);
    if (claimsCache.size >= CLAIMS_CACHE_LIMIT) claimsCache.clear();
    claimsCache.set(key, claims);
  }
  return claims;
}

/** A netplan file's `network:` mapping; undefined where the text is no YAML or has none (netplan would refuse it). */
export function netplanNetwork(text: string): Record<string, unknown> | undefined {
  let doc: unknown;
  try {
    doc = parse(text);
  } catch {
    return undefined;
  }
  const network = (doc as { network?: unknown } | null)?.network;
  return network && typeof network === 'object' ? (network as Record<string, unknown>) : undefined;
}

function parseClaims(text: string): Omit<NetplanClaim, 'file'>[] {
  const network = netplanNetwork(text);
  if (!network) return [];
  const claims: Omit<NetplanClaim, 'file'>[] = [];
  const globalRenderer = typeof network.renderer === 'string' ? network.renderer : 'networkd';
  for (const type of DEVICE_TYPES) {
    const section = network[type];
    if (!section || typeof section !== 'object') continue;
    const sectionRenderer =
      typeof (section as { renderer?: unknown }).renderer === 'string'
        ? String((section as { renderer: string }).renderer)
        : globalRenderer;
    for (const [id, device] of Object.entries(section as Record<string, unknown>)) {
      if (id === 'renderer' || !device || typeof device !== 'object') continue;
      const d = device as { renderer?: unknown };
      const renderer = typeof d.renderer === 'string' ? d.renderer : sectionRenderer;
      claims.push({ ...deviceClaim(id, device), renderer, type, id });
    }
  }
  return claims;
}
