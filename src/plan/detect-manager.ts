/**
 * Which network manager brings a host's fabric NICs up — the thing the seeds' author had to work
 * out by hand. Pure: decided from probe facts. Configuration is the strongest evidence (who has a
 * stanza, keyfile or netplan entry for the fabric interfaces); what is running breaks ties (a daemon
 * that answers, not a directory another tool may have made). A host
 * that cannot be told apart is an error that asks for `manager:` in the inventory — guessing wrong
 * installs a hook nothing ever runs.
 */
import picomatch from 'picomatch';
import type { Host, Manager } from '../inventory/model.js';
import { OWNED_PATHS } from '../steps/registry.js';
import type { HostFacts } from '../facts/host-facts.js';
import { netplanClaims } from '../facts/netplan-claims.js';

export type Detection =
  | { readonly ok: true; readonly manager: Manager; readonly evidence: readonly string[] }
  | { readonly ok: false; readonly message: string; readonly evidence: readonly string[] };

/**
 * netplan's `match: name:` is handed to the backend as an fnmatch(3) glob (systemd-networkd's
 * `Name=`, NetworkManager's `match.interface-name`): `*`, `?`, `[...]` with `[!...]` and POSIX
 * classes, `\` escaping. fnmatch knows no braces, extglobs, globstars or leading-`!` negation, so
 * picomatch is told the same; it reads `(a|b)` as a group where fnmatch reads the characters, so
 * parentheses are escaped.
 */
const FNMATCH: picomatch.PicomatchOptions = {
  nobrace: true,
  noextglob: true,
  noglobstar: true,
  nonegate: true,
  posix: true,
  dot: true,
};

/**
 * Each pattern compiled once per run: every host of a fleet repeats the same few netplan names, and
 * picomatch builds a regular expression per call (a fifth of a deploy's planning CPU at 100 hosts).
 * Bounded: the patterns are the hosts' own text.
 */
const MATCHERS = new Map<string, (name: string) => boolean>();
const MATCHERS_MAX = 1024;

/**
 * A pattern of only these characters holds nothing fnmatch (or picomatch) reads specially: it
 * matches the name it spells and no other, and needs no regular expression compiled (netplan files
 * name their interfaces plainly far more often than by glob).
 */
const LITERAL = /^[A-Za-z0-9_-]+$/;

export function netplanNameMatches(pattern: string, name: string): boolean {
  if (LITERAL.test(pattern)) return pattern === name;
  let matches = MATCHERS.get(pattern);
  if (!matches) {
    matches = picomatch(pattern.replace(/[()]/g, '\\$&'), FNMATCH);
    if (MATCHERS.size >= MATCHERS_MAX) MATCHERS.clear();
    MATCHERS.set(pattern, matches);
  }
  return matches(name);
}

export function detectManager(host: Host, facts: HostFacts): Detection {
  const ifaces = host.nics.map((n) => n.iface);
  const claims = new Map<Manager, string[]>();
  const claim = (m: Manager, why: string) => claims.set(m, [...(claims.get(m) ?? []), why]);

  // ibfleet's own files (its netplan file adds routing to NICs another file configures) are no evidence.
  for (const c of netplanClaims(facts.netplan.filter((f) => !OWNED_PATHS.includes(f.file)))) {
    const hit = ifaces.find((i) => netplanNameMatches(c.iface, i));
    if (!hit) continue;
    if (c.renderer === 'NetworkManager')
      claim('networkmanager', `${c.file} hands ${hit} to NetworkManager (renderer: NetworkManager)`);
    else claim('netplan', `${c.file} configures ${hit} (renderer: ${c.renderer})`);
  }
  for (const c of [...facts.nmConnections, ...facts.ifcfg]) {
    if (ifaces.includes(c.iface)) claim('networkmanager', `${c.file} is a NetworkManager connection for ${c.iface}`);
  }
  for (const c of facts.ifupdown) {
    if (c.keyword === 'iface' && ifaces.includes(c.iface))
      claim('ifupdown', `${c.file} has an "iface ${c.iface}" stanza`);
  }

  const running = new Map<Manager, string>();
  // NetworkManager runs when it answers nmcli over D-Bus: /run/NetworkManager alone is no sign —
  // netplan 0.101 (Debian 11) writes /run/NetworkManager/conf.d/netplan.conf on every `netplan
  // generate`, on hosts where NetworkManager is not even installed.
  if (facts.nm) running.set('networkmanager', `NetworkManager ${facts.nm.version} is running (it answered nmcli)`);
  if (facts.dirs.has('/run/systemd/netif')) running.set('netplan', 'systemd-networkd is running (/run/systemd/netif)');
  const upByIfupdown = ifaces.filter((i) => facts.ifstate.has(i));
  if (upByIfupdown.length)
    running.set('ifupdown', `ifupdown brought up ${upByIfupdown.join(', ')} (/run/network/ifstate)`);
  // A machine as it arrives: nothing configures the fabric NICs yet, and ifupdown brought up only
  // its other interfaces (lo) — where no daemon runs, that is what manages its network.
  else if (claims.size === 0 && running.size === 0 && facts.ifstate.size > 0)
    running.set(
      'ifupdown',
      `ifupdown brought up ${[...facts.ifstate].sort().join(', ')} and no other manager runs (/run/network/ifstate)`,
    );

  const evidence = [...[...claims.values()].flat(), ...running.values()];
  const claimed = [...claims.keys()];
  if (claimed.length === 1) return { ok: true, manager: claimed[0]!, evidence };
  const candidates = claimed.length > 1 ? claimed.filter((m) => running.has(m)) : [...running.keys()];
  if (candidates.length === 1) return { ok: true, manager: candidates[0]!, evidence };

  const what =
    claimed.length > 1
      ? `${claimed.join(' and ')} both configure ${ifaces.join('/')}`
      : candidates.length > 1
        ? `several managers run (${candidates.join(', ')}) and none has a configuration for ${ifaces.join('/')}`
        : `nothing configures ${ifaces.join('/')} (no netplan entry, NetworkManager connection or ifupdown stanza) and no manager is seen running`;
  return {
    ok: false,
    message: `cannot tell which network manager brings up ${ifaces.join('/')} on host ${host.id}: ${what}; set manager: (networkmanager, netplan or ifupdown) for host ${host.id} in the inventory`,
    evidence,
  };
}
