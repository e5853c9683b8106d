/**
 * Which network manager brings a host's fabric NICs up — the thing the seeds' author had to work
 * out by hand. Pure: decided from probe facts. Configuration is the strongest evidence (who has a
 * stanza, keyfile or netplan entry for the fabric interfaces); what is running breaks ties. A host
 * that cannot be told apart is an error that asks for `manager:` in the inventory — guessing wrong
 * installs a hook nothing ever runs.
 */
import { parse } from 'yaml';
import type { Host, Manager } from '../inventory/model.js';
import { NETPLAN_FILE_PATH } from '../render/paths.js';
import type { HostFacts } from './facts.js';

export type Detection =
  | { readonly ok: true; readonly manager: Manager; readonly evidence: readonly string[] }
  | { readonly ok: false; readonly message: string; readonly evidence: readonly string[] };

export interface NetplanClaim {
  readonly file: string;
  readonly iface: string;
  readonly renderer: string;
  /** Where the file defines it: device type (`ethernets`, `bonds`, …) and id. */
  readonly type: string;
  readonly id: string;
}

const DEVICE_TYPES = ['ethernets', 'bonds', 'bridges', 'vlans', 'wifis', 'modems', 'tunnels', 'vrfs', 'dummy-devices', 'virtual-ethernets', 'nm-devices'];

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

function parseClaims(text: string): Omit<NetplanClaim, 'file'>[] {
  let doc: unknown;
  try {
    doc = parse(text);
  } catch {
    return [];
  }
  const network = (doc as { network?: Record<string, unknown> } | null)?.network;
  if (!network || typeof network !== 'object') return [];
  const claims: Omit<NetplanClaim, 'file'>[] = [];
  const globalRenderer = typeof network.renderer === 'string' ? network.renderer : 'networkd';
  for (const type of DEVICE_TYPES) {
    const section = network[type];
    if (!section || typeof section !== 'object') continue;
    const sectionRenderer = typeof (section as { renderer?: unknown }).renderer === 'string' ? String((section as { renderer: string }).renderer) : globalRenderer;
    for (const [id, device] of Object.entries(section as Record<string, unknown>)) {
      if (id === 'renderer' || !device || typeof device !== 'object') continue;
      const d = device as { renderer?: unknown; 'set-name'?: unknown; match?: { name?: unknown } };
      const renderer = typeof d.renderer === 'string' ? d.renderer : sectionRenderer;
      const name = typeof d['set-name'] === 'string' ? d['set-name'] : typeof d.match?.name === 'string' ? d.match.name : id;
      claims.push({ iface: name, renderer, type, id });
    }
  }
  return claims;
}

function globMatch(pattern: string, name: string): boolean {
  if (!/[*?[]/.test(pattern)) return pattern === name;
  const re = pattern.replace(/[.+^${}()|\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.');
  return new RegExp(`^${re}$`).test(name);
}

export function detectManager(host: Host, facts: HostFacts): Detection {
  const ifaces = host.nics.map((n) => n.iface);
  const claims = new Map<Manager, string[]>();
  const claim = (m: Manager, why: string) => claims.set(m, [...(claims.get(m) ?? []), why]);

  // ibfleet's own netplan file adds routing to NICs another file configures: it is no evidence.
  for (const c of netplanClaims(facts.netplan.filter((f) => f.file !== NETPLAN_FILE_PATH))) {
    const hit = ifaces.find((i) => globMatch(c.iface, i));
    if (!hit) continue;
    if (c.renderer === 'NetworkManager') claim('networkmanager', `${c.file} hands ${hit} to NetworkManager (renderer: NetworkManager)`);
    else claim('netplan', `${c.file} configures ${hit} (renderer: ${c.renderer})`);
  }
  for (const c of [...facts.nmConnections, ...facts.ifcfg]) {
    if (ifaces.includes(c.iface)) claim('networkmanager', `${c.file} is a NetworkManager connection for ${c.iface}`);
  }
  for (const c of facts.ifupdown) {
    if (c.keyword === 'iface' && ifaces.includes(c.iface)) claim('ifupdown', `${c.file} has an "iface ${c.iface}" stanza`);
  }

  const running = new Map<Manager, string>();
  if (facts.dirs.has('/run/NetworkManager')) running.set('networkmanager', 'NetworkManager is running (/run/NetworkManager)');
  if (facts.dirs.has('/run/systemd/netif')) running.set('netplan', 'systemd-networkd is running (/run/systemd/netif)');
  const upByIfupdown = ifaces.filter((i) => facts.ifstate.has(i));
  if (upByIfupdown.length) running.set('ifupdown', `ifupdown brought up ${upByIfupdown.join(', ')} (/run/network/ifstate)`);

  const evidence = [...[...claims.values()].flat(), ...running.values()];
  const claimed = [...claims.keys()];
  if (claimed.length === 1) return { ok: true, manager: claimed[0]!, evidence };
  const candidates = claimed.length > 1 ? claimed.filter((m) => running.has(m)) : [...running.keys()];
  if (candidates.length === 1) return { ok: true, manager: candidates[0]!, evidence };

  const what = claimed.length > 1 ? `${claimed.join(' and ')} both configure ${ifaces.join('/')}` : candidates.length > 1 ? `several managers run (${candidates.join(', ')}) and none has a configuration for ${ifaces.join('/')}` : `nothing configures ${ifaces.join('/')} (no netplan entry, NetworkManager connection or ifupdown stanza) and no manager is seen running`;
  return {
    ok: false,
    message: `cannot tell which network manager brings up ${ifaces.join('/')} on host ${host.id}: ${what}; set manager: (networkmanager, netplan or ifupdown) for host ${host.id} in the inventory`,
    evidence,
  };
}

/** What the chosen manager needs on the host for its hook to ever run. */
export function managerPrerequisite(manager: Manager, facts: HostFacts): string | undefined {
  switch (manager) {
    case 'netplan':
      return facts.dirs.has('/etc/networkd-dispatcher') || facts.tools.has('networkd-dispatcher')
        ? undefined
        : 'networkd-dispatcher is not installed, so a routable.d hook would never run; install it (apt install networkd-dispatcher) or set the host\'s manager';
    case 'networkmanager':
      return facts.dirs.has('/etc/NetworkManager/dispatcher.d') || facts.tools.has('NetworkManager')
        ? undefined
        : 'NetworkManager\'s dispatcher directory /etc/NetworkManager/dispatcher.d is missing; is NetworkManager installed?';
    case 'ifupdown':
      return facts.dirs.has('/etc/network/if-up.d') || facts.tools.has('ifup') ? undefined : '/etc/network/if-up.d is missing; is ifupdown installed?';
  }
}
