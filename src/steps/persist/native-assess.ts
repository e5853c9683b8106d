/**
 * What the persist step checks besides its files: each NIC's connection profile holds ibfleet's
 * table and rule (native persistence on NetworkManager), the repair timer runs where systemd does,
 * and nothing of the other mechanism is left behind — on hosts the routing script persists, no
 * ibfleet property on a profile and no ibfleet netplan file; on native hosts, none of the routing
 * script's files; on every host, no other manager's hook and no repair units the playbook no
 * longer asks for. Pure.
 */
import type { Host, Manager, Nic } from '../../inventory/model.js';
import { factOf, type HostFacts } from '../../facts/host-facts.js';
import { SYSTEMD_FACT } from './systemd.js';
import { normalizeNmRule, type NmProfile } from '../../facts/nm-facts.js';
import { ROUTES_DATA_PATH, ROUTING_SCRIPT_PATH } from '../../script/paths.js';
import type { RenderedFile } from '../../script/rendered-file.js';
import { change, type Finding, type Persistence } from '../step.js';
import { nmRoutingRule } from './native-nm.js';
import { MANAGER_HOOK_PATHS, NETPLAN_FILE_PATH, NETWORKD_CONF_PATH, REPAIR_PATHS } from './paths.js';
import { formerRoutingOf, NO_FORMER_ROUTING, type FormerRouting } from '../policy-routing/former.js';
import { REPAIR_TIMER_UNIT } from './repair.js';

/** The NIC aspects persist checks (Subject.aspect). */
export const PERSIST_ASPECTS = { profile: 'profile', staleProfile: 'stale profile' } as const;

/** The files of the routing script's mechanism: stale where the routing lives in the manager's configuration. */
export const SCRIPT_MODE_PATHS: readonly string[] = [
  ROUTING_SCRIPT_PATH,
  ROUTES_DATA_PATH,
  ...Object.values(MANAGER_HOOK_PATHS).flat(),
  NETWORKD_CONF_PATH,
  ...REPAIR_PATHS,
];

/** ibfleet's part of a profile: its rule, and the route table when it is the NIC's (0 is NetworkManager's default). */
export function ibfleetOnProfile(
  profile: NmProfile,
  nic: Nic,
): { readonly table: boolean; readonly rules: readonly string[] } {
  const ours = normalizeNmRule(nmRoutingRule(nic));
  return {
    table: profile.routeTable === String(nic.table),
    rules: profile.rules.filter((r) => normalizeNmRule(r) === ours),
  };
}

/**
 * What an earlier deploy set on a profile and the inventory no longer gives the NIC (its ownership
 * record's entries for the interface: another tableBase or subnet): the route table, and its rules.
 */
export function formerOnProfile(
  profile: NmProfile,
  iface: string,
  former: FormerRouting,
): { readonly table: boolean; readonly rules: readonly string[] } {
  const rules = new Set(former.nics.map((n) => normalizeNmRule(nmRoutingRule(n))));
  return {
    table: former.nics.some((n) => n.iface === iface && profile.routeTable === String(n.table)),
    rules: profile.rules.filter((r) => rules.has(normalizeNmRule(r))),
  };
}

/** Everything of ibfleet's on a profile, today's and an earlier deploy's: what taking native persistence away removes. */
export function everOnProfile(
  profile: NmProfile,
  nic: Nic,
  former: FormerRouting,
): { readonly table: boolean; readonly rules: readonly string[] } {
  const now = ibfleetOnProfile(profile, nic);
  const then = formerOnProfile(profile, nic.iface, former);
  return { table: now.table || then.table, rules: [...new Set([...now.rules, ...then.rules])] };
}

/** Rules on a profile that route the NIC's address or into its table other than ibfleet's one, and the rules an earlier deploy added. */
export function staleProfileRules(profile: NmProfile, nic: Nic, former: FormerRouting = NO_FORMER_ROUTING): string[] {
  const ours = normalizeNmRule(nmRoutingRule(nic));
  const earlier = new Set(formerOnProfile(profile, nic.iface, former).rules);
  return profile.rules.filter((r) => {
    const rule = normalizeNmRule(r);
    return (
      rule !== ours &&
      (earlier.has(r) ||
        new RegExp(`(^| )from ${nic.address.replace(/\./g, '\\.')}( |$)`).test(rule) ||
        new RegExp(`(^| )table ${nic.table}( |$)`).test(rule))
    );
  });
}

/** The active connection profile NetworkManager brings a NIC up with, if it answered. */
export function activeProfile(facts: HostFacts, iface: string): NmProfile | undefined {
  const uuid = facts.nm?.active.get(iface);
  return uuid === undefined ? undefined : facts.nm?.profiles.get(uuid);
}

/** What of ibfleet's is on a profile, an earlier deploy's included, as words (`ipv4.route-table 941, rule …`); '' for nothing. */
export function ibfleetPropertiesOn(
  profile: NmProfile | undefined,
  nic: Nic,
  former: FormerRouting = NO_FORMER_ROUTING,
): string {
  const on = profile ? everOnProfile(profile, nic, former) : { table: false, rules: [] };
  return [on.table ? `ipv4.route-table ${profile!.routeTable}` : undefined, ...on.rules.map((r) => `rule ${r}`)]
    .filter(Boolean)
    .join(', ');
}

function profileFinding(nic: Nic, profile: NmProfile, former: FormerRouting): Finding {
  const on = ibfleetOnProfile(profile, nic);
  const stale = staleProfileRules(profile, nic, former);
  const ok = on.table && on.rules.length === 1 && stale.length === 0;
  const base = {
    id: `nm ${nic.iface}`,
    subject: { kind: 'nic', iface: nic.iface, aspect: PERSIST_ASPECTS.profile },
  } as const;
  const label = `${nic.iface}: connection profile ${profile.name}`;
  if (ok)
    return {
      ...base,
      ok,
      detail: `${label}: ipv4.route-table ${nic.table}, rule ${nmRoutingRule(nic)}`,
      fix: undefined,
    };
  const found = [
    on.table ? undefined : `ipv4.route-table is ${profile.routeTable}, want ${nic.table}`,
    on.rules.length === 0
      ? `rule ${nmRoutingRule(nic)} missing`
      : on.rules.length > 1
        ? `rule ${nmRoutingRule(nic)} ${on.rules.length} times`
        : undefined,
    stale.length ? `other rules for ${nic.address} / table ${nic.table}: ${stale.join('; ')}` : undefined,
  ].filter(Boolean);
  return {
    ...base,
    ok,
    detail: `${label}: ${found.join('; ')}`,
    fix: change(
      'nm-profile',
      'set',
      nic.iface,
      `${nic.iface}: nmcli: profile ${profile.name} ipv4.route-table ${nic.table}, ipv4.routing-rules + ${nmRoutingRule(nic)}${stale.length ? ` − ${stale.join(', ')}` : ''}; reapply`,
    ),
  };
}

/** NetworkManager native: each NIC's profile, as the probe read it now (a profile gone reads as empty). */
export function profileFindings(persistence: Persistence, facts: HostFacts, former: FormerRouting): Finding[] {
  if (persistence.kind !== 'networkmanager') return [];
  return persistence.profiles.map(({ nic, profile }) =>
    profileFinding(nic, facts.nm?.profiles.get(profile.uuid) ?? { ...profile, routeTable: '?', rules: [] }, former),
  );
}

function stale(path: string, kind: string, detail: string, text: string): Finding {
  return {
    id: `stale ${path}`,
    subject: { kind: 'stale', path },
    ok: false,
    detail,
    fix: change(kind, 'remove', path, text),
  };
}

/** The kind of change removing one of the routing script mechanism's files is. */
function scriptModeKind(path: string): string {
  if (path === ROUTING_SCRIPT_PATH || path === ROUTES_DATA_PATH) return 'script';
  if (path === NETWORKD_CONF_PATH) return 'networkd-conf';
  return REPAIR_PATHS.includes(path) ? 'timer' : 'hook';
}

/** With the routing script persisting: native persistence's properties on a profile would make NetworkManager fight it. */
function staleProfiles(host: Host, facts: HostFacts, former: FormerRouting): Finding[] {
  if (!facts.nm) return [];
  return host.nics.flatMap((nic) => {
    const profile = activeProfile(facts, nic.iface);
    const what = ibfleetPropertiesOn(profile, nic, former);
    if (!profile || what === '') return [];
    return [
      {
        id: `stale nm ${nic.iface}`,
        subject: { kind: 'nic', iface: nic.iface, aspect: PERSIST_ASPECTS.staleProfile },
        ok: false,
        detail: `${nic.iface}: connection profile ${profile.name} still carries native persistence's ${what} (this host persists with the hook)`,
        fix: change(
          'nm-profile',
          'reset',
          nic.iface,
          `${nic.iface}: nmcli: take ${what} off profile ${profile.name}; reapply`,
        ),
      } satisfies Finding,
    ];
  });
}

/** Files and properties of the mechanism this host does not use, or of a manager it does not run. */
export function staleFindings(
  host: Host,
  manager: Manager,
  persistence: Persistence,
  facts: HostFacts,
  files: readonly RenderedFile[],
): Finding[] {
  const has = (path: string) => facts.files.has(path);
  const findings: Finding[] = [];
  if (persistence.kind === 'script') {
    if (!files.some((f) => REPAIR_PATHS.includes(f.path))) {
      // No units rendered: the playbook has no timer, or no systemd runs here to start one.
      const why =
        factOf(facts, SYSTEMD_FACT).runs === false
          ? 'no systemd runs on this host to start it'
          : 'the playbook has no repair timer';
      for (const path of REPAIR_PATHS.filter(has))
        findings.push(stale(path, 'timer', `stale repair unit ${path} (${why})`, `remove ${path} (${why})`));
    }
    for (const [other, paths] of Object.entries(MANAGER_HOOK_PATHS) as [Manager, readonly string[]][]) {
      for (const path of paths)
        if (other !== manager && has(path))
          findings.push(
            stale(
              path,
              'hook',
              `stale ${other} hook ${path} (this host uses ${manager})`,
              `remove ${path} (hook for ${other}; this host uses ${manager})`,
            ),
          );
    }
    if (manager !== 'netplan' && has(NETWORKD_CONF_PATH))
      findings.push(
        stale(
          NETWORKD_CONF_PATH,
          'networkd-conf',
          `stale networkd setting ${NETWORKD_CONF_PATH} (this host uses ${manager})`,
          `remove ${NETWORKD_CONF_PATH} (netplan's; this host uses ${manager})`,
        ),
      );
    findings.push(...staleProfiles(host, facts, formerRoutingOf(host, facts)));
  }
  if (persistence.kind !== 'netplan' && has(NETPLAN_FILE_PATH)) {
    findings.push(
      stale(
        NETPLAN_FILE_PATH,
        'netplan-file',
        `stale netplan file ${NETPLAN_FILE_PATH} (this host persists with the hook)`,
        `remove ${NETPLAN_FILE_PATH}; netplan generate, networkctl reload`,
      ),
    );
  }
  if (persistence.kind !== 'script') {
    for (const path of SCRIPT_MODE_PATHS.filter(has))
      findings.push(
        stale(
          path,
          scriptModeKind(path),
          `stale ${path} (the routing lives in the ${persistence.kind} configuration)`,
          `remove ${path} (native persistence needs no hook)`,
        ),
      );
  }
  return findings;
}

/** Where systemd runs, the repair timer installed must also be running. */
export function timerFinding(facts: HostFacts, files: readonly RenderedFile[]): Finding[] {
  const timer = factOf(facts, SYSTEMD_FACT).repairTimer;
  if (!files.some((f) => REPAIR_PATHS.includes(f.path)) || timer === undefined) return [];
  const active = timer === 'active';
  return [
    {
      id: 'repair-timer',
      subject: { kind: 'host', aspect: 'repair-timer' },
      ok: active,
      detail: active
        ? `repair timer ${REPAIR_TIMER_UNIT} active`
        : `repair timer ${REPAIR_TIMER_UNIT} is ${timer}, not active`,
      fix: active ? undefined : change('timer', 'start', REPAIR_TIMER_UNIT, `start ${REPAIR_TIMER_UNIT}`),
    },
  ];
}
