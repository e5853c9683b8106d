/**
 * What the assessment checks because of native persistence: each NIC's connection profile holds
 * ibfleet's table and rule (NetworkManager), the kernel state in the shape the manager makes it
 * (`proto static`, a metric), and — on hosts that persist with the hook — none of native
 * persistence's configuration left behind (ibfleet's properties on a profile, its netplan file),
 * nor, on native hosts, any of the hook's. Pure.
 */
import type { Fleet, Host, Nic } from '../inventory/model.js';
import { nmRoutingRule } from '../render/native-nm.js';
import { HOOK_PATHS, NETPLAN_FILE_PATH, REPAIR_PATHS, ROUTING_SCRIPT_PATH } from '../render/paths.js';
import type { ChangeKind } from '../vocabulary.js';
import { change, type Finding } from './finding.js';
import type { HostFacts } from './facts.js';
import { normalizeLine, type RouteFact, type RuleFact } from './ip-facts.js';
import { normalizeNmRule, type NmProfile } from './nm-facts.js';
import { NO_FORMER_ROUTING, type FormerRouting } from './owned.js';
import type { Persistence } from './persistence.js';

/** The hook's files: stale where the routing lives in the manager's configuration. */
export const HOOK_MODE_PATHS: readonly string[] = [ROUTING_SCRIPT_PATH, ...Object.values(HOOK_PATHS), ...REPAIR_PATHS];

/**
 * A NIC's table route as a manager makes it: the subnet through the NIC with its address as source,
 * in scope link — whatever protocol (NetworkManager: kernel, networkd: static) and metric it carries.
 */
export function isManagedTableRoute(route: RouteFact, fleet: Fleet, nic: Nic): boolean {
  return route.dst === fleet.fabric.subnetText && route.dev === nic.iface && route.src === nic.address && route.scope === 'link';
}

/** A NIC's rule as a manager makes it: `from ADDR lookup T` at its priority, `proto static` allowed. */
export function isManagedRule(rule: RuleFact, nic: Nic): boolean {
  return rule.priority === nic.priority && normalizeLine(rule.text).replace(/ proto \S+$/, '') === `from ${nic.address} lookup ${nic.table}`;
}

/** ibfleet's part of a profile: its rule, and the route table when it is the NIC's (0 is NetworkManager's default). */
export function ibfleetOnProfile(profile: NmProfile, nic: Nic): { readonly table: boolean; readonly rules: readonly string[] } {
  const ours = normalizeNmRule(nmRoutingRule(nic));
  return { table: profile.routeTable === String(nic.table), rules: profile.rules.filter((r) => normalizeNmRule(r) === ours) };
}

/**
 * What an earlier deploy set on a profile and the inventory no longer gives the NIC (its record's
 * entries for the interface): the route table, and the rules it added.
 */
export function formerOnProfile(profile: NmProfile, iface: string, former: FormerRouting): { readonly table: boolean; readonly rules: readonly string[] } {
  const mine = former.nics.filter((n) => n.iface === iface);
  const rules = new Set(former.nics.map((n) => normalizeNmRule(nmRoutingRule(n))));
  return { table: mine.some((n) => profile.routeTable === String(n.table)), rules: profile.rules.filter((r) => rules.has(normalizeNmRule(r))) };
}

/** Everything of ibfleet's on a profile, today's and an earlier deploy's: what taking native persistence away removes. */
export function everOnProfile(profile: NmProfile, nic: Nic, former: FormerRouting): { readonly table: boolean; readonly rules: readonly string[] } {
  const now = ibfleetOnProfile(profile, nic);
  const then = formerOnProfile(profile, nic.iface, former);
  return { table: now.table || then.table, rules: [...new Set([...now.rules, ...then.rules])] };
}

/**
 * Rules on a profile that route the NIC's address or into its table other than ibfleet's one, and
 * the rules an earlier deploy added (its record's; another tableBase or subnet).
 */
export function staleProfileRules(profile: NmProfile, nic: Nic, former: FormerRouting = NO_FORMER_ROUTING): string[] {
  const ours = normalizeNmRule(nmRoutingRule(nic));
  const earlier = new Set(formerOnProfile(profile, nic.iface, former).rules);
  return profile.rules.filter((r) => {
    const rule = normalizeNmRule(r);
    return rule !== ours && (earlier.has(r) || new RegExp(`(^| )from ${nic.address.replace(/\./g, '\\.')}( |$)`).test(rule) || new RegExp(`(^| )table ${nic.table}( |$)`).test(rule));
  });
}

function profileFinding(nic: Nic, profile: NmProfile, former: FormerRouting): Finding {
  const on = ibfleetOnProfile(profile, nic);
  const stale = staleProfileRules(profile, nic, former);
  const ok = on.table && on.rules.length === 1 && stale.length === 0;
  const id = `nm ${nic.iface}`;
  const label = `${nic.iface}: connection profile ${profile.name}`;
  if (ok) return { id, ok, detail: `${label}: ipv4.route-table ${nic.table}, rule ${nmRoutingRule(nic)}`, fix: undefined };
  const found = [
    on.table ? undefined : `ipv4.route-table is ${profile.routeTable}, want ${nic.table}`,
    on.rules.length === 0 ? `rule ${nmRoutingRule(nic)} missing` : on.rules.length > 1 ? `rule ${nmRoutingRule(nic)} ${on.rules.length} times` : undefined,
    stale.length ? `other rules for ${nic.address} / table ${nic.table}: ${stale.join('; ')}` : undefined,
  ].filter(Boolean);
  return {
    id,
    ok,
    detail: `${label}: ${found.join('; ')}`,
    fix: change('nm-profile', 'set', nic.iface, `${nic.iface}: nmcli: profile ${profile.name} ipv4.route-table ${nic.table}, ipv4.routing-rules + ${nmRoutingRule(nic)}${stale.length ? ` − ${stale.join(', ')}` : ''}; reapply`),
  };
}

/** ibfleet's properties a profile still carries (`ipv4.route-table 941, rule …`), or '' for none. */
export function profileLeftovers(profile: NmProfile, nic: Nic, former: FormerRouting): string {
  const on = everOnProfile(profile, nic, former);
  return [on.table ? `ipv4.route-table ${profile.routeTable}` : undefined, ...on.rules.map((r) => `rule ${r}`)].filter(Boolean).join(', ');
}

/** The kind of change removing one of the hook's files is. */
function hookModeKind(path: string): ChangeKind {
  if (path === ROUTING_SCRIPT_PATH) return 'script';
  return REPAIR_PATHS.includes(path) ? 'timer' : 'hook';
}

export interface NativeAssessInput {
  readonly host: Host;
  readonly facts: HostFacts;
  readonly persistence: Persistence;
  /** Whether the playbook persists at all (no persist step: nothing of either mechanism is stale). */
  readonly persist: boolean;
  /** What an earlier deploy set and the inventory no longer gives the host (its record's entries). */
  readonly former?: FormerRouting;
}

export function nativeFindings(input: NativeAssessInput): Finding[] {
  const { host, facts, persistence } = input;
  const former = input.former ?? NO_FORMER_ROUTING;
  const findings: Finding[] = [];
  if (persistence.kind === 'networkmanager') {
    for (const { nic, profile } of persistence.profiles) findings.push(profileFinding(nic, facts.nm?.profiles.get(profile.uuid) ?? { ...profile, routeTable: '?', rules: [] }, former));
  } else if (facts.nm) {
    // The hook persists here: ibfleet's properties on a profile would make NetworkManager fight it.
    for (const nic of host.nics) {
      const uuid = facts.nm.active.get(nic.iface);
      const profile = uuid === undefined ? undefined : facts.nm.profiles.get(uuid);
      if (!profile) continue;
      const what = profileLeftovers(profile, nic, former);
      if (!what) continue;
      findings.push({
        id: `stale nm ${nic.iface}`,
        ok: false,
        detail: `${nic.iface}: connection profile ${profile.name} still carries native persistence's ${what} (this host persists with the hook)`,
        fix: change('nm-profile', 'reset', nic.iface, `${nic.iface}: nmcli: take ${what} off profile ${profile.name}; reapply`),
      });
    }
  }
  if (persistence.kind !== 'netplan' && facts.files.get(NETPLAN_FILE_PATH)) {
    findings.push({ id: `stale ${NETPLAN_FILE_PATH}`, ok: false, detail: `stale netplan file ${NETPLAN_FILE_PATH} (this host persists with the hook)`, fix: change('netplan-file', 'remove', NETPLAN_FILE_PATH, `remove ${NETPLAN_FILE_PATH}; netplan generate, networkctl reload`) });
  }
  if (persistence.kind !== 'hook' && input.persist) {
    for (const path of HOOK_MODE_PATHS.filter((p) => facts.files.get(p))) {
      findings.push({ id: `stale ${path}`, ok: false, detail: `stale ${path} (the routing lives in the ${persistence.kind} configuration)`, fix: change(hookModeKind(path), 'remove', path, `remove ${path} (native persistence needs no hook)`) });
    }
  }
  return findings;
}
