/**
 * Putting a host back after a change that did not verify: what "as it was" means (the part of the
 * state a deploy can touch, read from the probe before the change), the restore that gets there,
 * and what still differs afterwards. Pure.
 */
import type { Fleet, Host } from '../inventory/model.js';
import { CREATED_DIR_LINE, directoriesFor } from '../render/apply-script.js';
import type { RenderedFile } from '../render/files.js';
import { TRACKED_PATHS } from '../render/probe-script.js';
import type { RestoreSpec } from '../render/restore-script.js';
import { SYSCTL_KEYS } from '../render/routing-script.js';
import type { HostFacts } from './facts.js';
import type { NmProfile } from './nm-facts.js';
import { NO_NATIVE_STEPS, type NativeSteps } from '../render/native-apply.js';
import { NETPLAN_FILE_PATH } from '../render/paths.js';
import { formerRemoval, formerRouting, formerRules, type FormerRouting } from './owned.js';

/** The source rules a deploy can change: the NICs' own, and those of an earlier deploy (`former`). */
function touchableRules(host: Host, facts: HostFacts, former: FormerRouting): HostFacts['rules'] {
  const earlier = new Set(formerRules(facts.rules, former));
  return facts.rules.filter((r) => earlier.has(r) || host.nics.some((n) => r.from === n.address || r.table === String(n.table)));
}

/** The tables a deploy can change: the NICs', then an earlier deploy's it empties. */
function touchableTables(host: Host, former: FormerRouting): number[] {
  return [...host.nics.map((n) => n.table), ...former.tables];
}

/** Everything of a host a deploy can change, as comparable text: one entry per aspect. */
function touchable(host: Host, fleet: Fleet, facts: HostFacts, former: FormerRouting): Map<string, string> {
  const out = new Map<string, string>();
  out.set('source rules', touchableRules(host, facts, former).map((r) => `${r.priority}: ${r.text}`).join('; ') || '(none)');
  for (const table of touchableTables(host, former)) out.set(`table ${table}`, (facts.routes.get(String(table)) ?? []).map((r) => routeText(r.text)).join('; ') || '(empty)');
  out.set(`main-table routes to ${fleet.fabric.subnetText}`, mainFabricRoutes(host, fleet, facts).join('; ') || '(none)');
  for (const nic of host.nics) {
    const values = facts.sysctl.get(nic.iface) ?? {};
    out.set(`${nic.iface} sysctls`, SYSCTL_KEYS.map((k) => `${k}=${values[k] ?? '?'}`).join(' '));
  }
  for (const path of TRACKED_PATHS) {
    const f = facts.files.get(path);
    out.set(path, f ? `mode ${f.mode.toString(8)} uid ${f.uid} sha256 ${f.sha256.slice(0, 12)}` : 'absent');
  }
  for (const nic of host.nics) {
    const profile = activeProfile(facts, nic.iface);
    if (profile) out.set(`${nic.iface} connection profile ${profile.name}`, `ipv4.route-table ${profile.routeTable}, ipv4.routing-rules ${profile.rules.join(', ') || '(none)'}`);
  }
  return out;
}

function activeProfile(facts: HostFacts, iface: string): NmProfile | undefined {
  const uuid = facts.nm?.active.get(iface);
  return uuid === undefined ? undefined : facts.nm?.profiles.get(uuid);
}

/** `linkdown` comes and goes with the carrier; it is no part of what a restore puts back. */
function routeText(text: string): string {
  return text.replace(/ linkdown\b/, '');
}

function mainFabricRoutes(host: Host, fleet: Fleet, facts: HostFacts): string[] {
  const ifaces = new Set(host.nics.map((n) => n.iface));
  return (facts.routes.get('main') ?? []).filter((r) => r.dst === fleet.fabric.subnetText && r.dev !== undefined && ifaces.has(r.dev)).map((r) => routeText(r.text));
}

/** What differs between two probes in the part a deploy can change, one line per aspect ("table 941: now …, before …"). */
export function stateDifferences(host: Host, fleet: Fleet, before: HostFacts, now: HostFacts): string[] {
  // What an earlier deploy owned, as the record before the change listed it (the change rewrites it).
  const former = formerRouting(host, before.owned);
  const was = touchable(host, fleet, before, former);
  const is = touchable(host, fleet, now, former);
  return [...was].filter(([key, value]) => is.get(key) !== value).map(([key, value]) => `${key}: ${is.get(key)}, before ${value}`);
}

/**
 * The restore for a change whose output is `applyOutput` and which wrote `written`: the state
 * before, and the directories it created — only those it could have created, whatever else the
 * output says.
 */
/**
 * `native`: what the change told the network manager. The connection profiles it changed are set
 * back to their properties before, and reapplied; a netplan file it wrote or removed is put back,
 * and networkd reloaded, before the kernel state is restored (networkd drops rules it did not make).
 */
export function planRestore(host: Host, fleet: Fleet, before: HostFacts, written: readonly RenderedFile[], applyOutput: string, native?: NativeSteps): RestoreSpec {
  const possible = new Set(directoriesFor(written));
  const created = applyOutput.split('\n').flatMap((l) => (l.startsWith(CREATED_DIR_LINE) && possible.has(l.slice(CREATED_DIR_LINE.length)) ? [l.slice(CREATED_DIR_LINE.length)] : []));
  const former = formerRouting(host, before.owned);
  return {
    rules: touchableRules(host, before, former).map((r) => ({ priority: r.priority, text: r.text })),
    formerRules: formerRemoval(former).rules,
    tables: touchableTables(host, former).map((table) => ({ table, routes: (before.routes.get(String(table)) ?? []).map((r) => routeText(r.text)) })),
    mainRoutes: mainFabricRoutes(host, fleet, before),
    sysctls: host.nics.flatMap((n) => {
      const values = before.sysctl.get(n.iface) ?? {};
      return SYSCTL_KEYS.flatMap((key) => (/^-?\d+$/.test(values[key] ?? '') ? [{ iface: n.iface, key, value: values[key]! }] : []));
    }),
    files: TRACKED_PATHS.map((path) => {
      const f = before.files.get(path);
      return { path, before: f ? { mode: f.mode, sha256: f.sha256 } : null };
    }),
    createdDirs: directoriesFor(written).filter((d) => created.includes(d)),
    native: nativeRestore(host, before, native),
  };
}

function nativeRestore(host: Host, before: HostFacts, native: NativeSteps | undefined): NativeSteps | undefined {
  if (!native) return undefined;
  const nmRestore = native.nmEdits.flatMap((edit) => {
    const profile = before.nm?.profiles.get(edit.uuid);
    return profile ? [{ iface: edit.iface, uuid: edit.uuid, routeTable: profile.routeTable, rules: profile.rules }] : [];
  });
  // A netplan file the change wrote or removed: networkd reloads it as it was, and the restore waits
  // for networkd's rules to be back (the file was there) or gone (it was not).
  const netplan = native.netplan?.reload ? { reload: true, reconfigure: host.nics.map((n) => n.iface) } : undefined;
  const hadFile = Boolean(before.files.get(NETPLAN_FILE_PATH));
  const nics = netplan ? host.nics.map((n) => ({ iface: n.iface, address: n.address, table: n.table, priority: n.priority })) : [];
  if (nmRestore.length === 0 && !netplan) return undefined;
  return { ...NO_NATIVE_STEPS, nmRestore, nmReapply: nmRestore.map((r) => r.iface), netplan, await: hadFile ? nics : [], awaitGone: hadFile ? [] : nics };
}

/**
 * The failure message of a change that did not verify, completed with what the restore achieved:
 * the host as it was, the differences left, or no restore needed because nothing had changed.
 */
export function restoredMessage(failure: string, outcome: { readonly kind: 'unchanged' } | { readonly kind: 'restored'; readonly left: readonly string[] } | { readonly kind: 'unfinished'; readonly why: string }): string {
  switch (outcome.kind) {
    case 'unchanged':
      return `${failure}; the change left the host as it was, nothing to roll back`;
    case 'restored':
      return outcome.left.length === 0
        ? `${failure}; rolled back: the host is as it was before this deploy (source rules, tables, main-table routes, sysctls, ibfleet's files)`
        : `${failure}; rolled back, but these still differ from before: ${outcome.left.join('; ')}`;
    case 'unfinished':
      return `${failure}; rolling back did not finish (${outcome.why}): check the host with ibfleet status`;
  }
}
