/**
 * Desired state vs probed facts, as one list of findings. The same assessment is the deploy plan
 * (failing findings → changes), the verification after apply (everything must hold) and the
 * status report (failing findings → drift reasons). Pure.
 */
import { MANAGERS, type Fleet, type Host, type Manager, type Nic } from '../inventory/model.js';
import type { Playbook } from '../playbook/playbook.js';
import type { RenderedFile } from '../render/files.js';
import { HOOK_PATHS, OWNED_PATH, REPAIR_PATHS } from '../render/paths.js';
import { REPAIR_TIMER_UNIT } from '../render/repair.js';
import type { Change, ChangeKind } from '../vocabulary.js';
import { SYSCTL_KEYS } from '../render/routing-script.js';
import { sha256 } from './digest.js';
import type { HostFacts } from './facts.js';
import { normalizeLine, type RuleFact } from './ip-facts.js';
import { change, type Finding } from './finding.js';
import { isManagedRule, isManagedTableRoute, nativeFindings } from './native-assess.js';
import { formerOrigin, formerRouting, formerRules, type FormerRouting } from './owned.js';
import { HOOK, type Persistence } from './persistence.js';

export { change, type Finding } from './finding.js';

/** The kind of change a file of each role is, for summaries (`hook installed`). */
export function fileKind(role: RenderedFile['role'] | undefined): ChangeKind {
  switch (role) {
    case 'routing-script':
      return 'script';
    case 'hook':
      return 'hook';
    case 'sysctl':
      return 'sysctl-file';
    case 'repair':
      return 'timer';
    case 'netplan':
      return 'netplan-file';
    case 'record':
      return 'record';
    default:
      return 'file';
  }
}

export interface Assessment {
  /** Problems deploy cannot fix (missing interface, wrong address, not root); the host fails. */
  readonly blockers: readonly string[];
  readonly findings: readonly Finding[];
}

export interface AssessInput {
  readonly host: Host;
  readonly fleet: Fleet;
  readonly playbook: Playbook;
  readonly manager: Manager;
  readonly facts: HostFacts;
  /** The files deploy would install (renderHostFiles for the chosen manager). */
  readonly files: readonly RenderedFile[];
  /** How the routing persists (plan/persistence.ts); the hook when not given. */
  readonly persistence?: Persistence;
  /**
   * What an earlier deploy owned and the inventory no longer gives the host; by default as the
   * host's record lists it. The check after a change passes the one found before: by then the
   * record on the host is the new one.
   */
  readonly former?: FormerRouting;
}

export function expectedTableRoute(fleet: Fleet, nic: Nic): string {
  return `${fleet.fabric.subnetText} dev ${nic.iface} proto kernel scope link src ${nic.address}`;
}

export function expectedRule(nic: Nic): string {
  return `${nic.priority}: from ${nic.address} lookup ${nic.table}`;
}

/** Interface problems that make a NIC unusable: deploy refuses, status reports them as drift. */
export function nicBlockers(host: Host, fleet: Fleet, facts: HostFacts): string[] {
  const problems: string[] = [];
  const known = [...facts.links.keys()].filter((l) => l !== 'lo');
  for (const nic of host.nics) {
    const link = facts.links.get(nic.iface);
    if (!link) {
      problems.push(`interface ${nic.iface} (NIC ${nic.index}) not found; the host has ${known.join(', ') || 'no interfaces'}`);
      continue;
    }
    const here = facts.addresses.filter((a) => a.iface === nic.iface);
    const exact = here.find((a) => a.address === nic.address);
    if (exact && exact.prefixLength !== fleet.fabric.subnet.prefixLength) {
      problems.push(`${nic.iface} carries ${nic.address}/${exact.prefixLength}, but the fabric is ${fleet.fabric.subnetText}`);
    } else if (exact && !link.up) {
      problems.push(`${nic.iface} is down (it carries ${nic.address}, but the link is not up)`);
    } else if (!exact) {
      const elsewhere = facts.addresses.find((a) => a.address === nic.address);
      if (elsewhere) {
        problems.push(`${nic.address} (NIC ${nic.index}) is on ${elsewhere.iface}, not ${nic.iface}: are the interfaces swapped in the inventory?`);
      } else if (!link.up) {
        problems.push(`${nic.iface} is down (no ${nic.address})`);
      } else {
        const has = here.map((a) => `${a.address}/${a.prefixLength}`).join(', ') || 'no IPv4 address';
        problems.push(`${nic.iface} carries ${has}, but the convention gives NIC ${nic.index} of host ${host.id} ${nic.address}/${fleet.fabric.subnet.prefixLength}`);
      }
    }
  }
  return problems;
}

export function assessHost(input: AssessInput): Assessment {
  const { host, fleet, playbook, manager, facts, files } = input;
  const blockers: string[] = [];
  if (!facts.complete) blockers.push('the probe stopped early (connection dropped or the host is missing basic tools)');
  if (facts.uid !== undefined && facts.uid !== 0) blockers.push(`commands run as uid ${facts.uid}, not root; set sudo: true for this host`);
  for (const tool of ['flock', 'sha256sum', 'stat']) if (!facts.tools.has(tool) && facts.complete) blockers.push(`${tool} is missing on the host (coreutils / util-linux)`);
  blockers.push(...nicBlockers(host, fleet, facts));

  const findings: Finding[] = [];
  for (const nic of host.nics) findings.push(...assessNic(input, nic));
  for (const file of files) {
    const found = facts.files.get(file.path) ?? null;
    const want = { sha256: sha256(file.content), mode: file.mode };
    const id = `file ${file.path}`;
    const label = file.role === 'hook' ? `hook ${file.path}` : file.role === 'repair' ? `repair unit ${file.path}` : file.path;
    const kind = fileKind(file.role);
    if (!found) findings.push({ id, ok: false, detail: `${label} is missing`, fix: change(kind, 'install', file.path, `install ${file.path} (${file.mode.toString(8)})`) });
    else if (found.sha256 !== want.sha256) findings.push({ id, ok: false, detail: `${label} ${modifiedWhy(file, facts, host, fleet)}`, fix: change(kind, 'replace', file.path, `replace ${file.path} (content differs)`) });
    else if (found.mode !== want.mode || found.uid !== 0) {
      findings.push({ id, ok: false, detail: `${label} has mode ${found.mode.toString(8)} owner uid ${found.uid}, want ${want.mode.toString(8)} root`, fix: change(kind, 'replace', file.path, `reinstall ${file.path} as root ${want.mode.toString(8)}`) });
    } else findings.push({ id, ok: true, detail: `${label} intact`, fix: undefined });
  }
  // Where systemd runs, the repair timer installed must also be running.
  if (files.some((f) => f.role === 'repair') && facts.repairTimer !== undefined) {
    const active = facts.repairTimer === 'active';
    findings.push({
      id: 'repair-timer',
      ok: active,
      detail: active ? `repair timer ${REPAIR_TIMER_UNIT} active` : `repair timer ${REPAIR_TIMER_UNIT} is ${facts.repairTimer}, not active`,
      fix: active ? undefined : change('timer', 'start', REPAIR_TIMER_UNIT, `start ${REPAIR_TIMER_UNIT}`),
    });
  }
  const persistence = input.persistence ?? HOOK;
  if (!files.some((f) => f.role === 'repair') && persistence.kind === 'hook') {
    // No units rendered: the playbook has no timer, or no systemd runs here to start one.
    const why = playbook.persist && playbook.repairEvery > 0 ? 'no systemd runs on this host to start it' : 'the playbook has no repair timer';
    for (const path of REPAIR_PATHS.filter((p) => facts.files.get(p))) {
      findings.push({ id: `stale ${path}`, ok: false, detail: `stale repair unit ${path} (${why})`, fix: change('timer', 'remove', path, `remove ${path} (${why})`) });
    }
  }
  for (const other of MANAGERS.filter((m) => m !== manager)) {
    const path = HOOK_PATHS[other];
    if (playbook.persist && persistence.kind === 'hook' && facts.files.get(path)) {
      findings.push({ id: `stale ${path}`, ok: false, detail: `stale ${other} hook ${path} (this host uses ${manager})`, fix: change('hook', 'remove', path, `remove ${path} (hook for ${other}; this host uses ${manager})`) });
    }
  }
  const former = input.former ?? formerRouting(host, facts.owned);
  // A NIC's connection profile first: the kernel state follows from it.
  const native = nativeFindings({ host, facts, persistence, persist: playbook.persist, former });
  const profiles = native.filter((f) => f.id.startsWith('nm '));
  return { blockers, findings: [...profiles, ...findings, ...formerRoutingFindings(host, facts, former), ...native.filter((f) => !profiles.includes(f))] };
}

/**
 * The tables and rules of an earlier deploy that this inventory does not give the host (its
 * tableBase or subnet changed since): the routing script only ever touches today's, so without
 * these they would stay filled, out of sight. A rule from one of today's addresses or into one of
 * today's tables is the NIC's own rule finding's (the routing script replaces it).
 */
function formerRoutingFindings(host: Host, facts: HostFacts, former: FormerRouting): Finding[] {
  const origin = formerOrigin(former);
  const findings: Finding[] = former.tables.map((table) => {
    const routes = (facts.routes.get(String(table)) ?? []).map((r) => r.text.replace(/ linkdown\b/, ''));
    const id = `old table ${table}`;
    if (routes.length === 0) return { id, ok: true, detail: `table ${table} of an earlier deploy (${origin}) is empty`, fix: undefined };
    return { id, ok: false, detail: `table ${table} of an earlier deploy (${origin}, ${OWNED_PATH}) still holds ${routes.join('; ')}`, fix: change('old-table', 'remove', `table ${table}`, `old table ${table} (${origin})`) };
  });
  const addresses = new Set(host.nics.map((n) => n.address));
  const tables = new Set(host.nics.map((n) => String(n.table)));
  for (const rule of formerRules(facts.rules, former).filter((r) => !addresses.has(r.from) && !tables.has(r.table ?? ''))) {
    const text = `${rule.priority}: ${rule.text}`;
    findings.push({ id: `old rule ${text}`, ok: false, detail: `rule ${text} of an earlier deploy (${origin}, ${OWNED_PATH}) is still there`, fix: change('old-rule', 'remove', `rule ${rule.priority}`, `old rule ${text} (${origin})`) });
  }
  return findings;
}

const MANAGER_NAME = { networkmanager: 'NetworkManager', netplan: 'systemd-networkd' } as const;

function assessNic(input: AssessInput, nic: Nic): Finding[] {
  const { fleet, playbook, facts } = input;
  const out: Finding[] = [];
  const iface = nic.iface;

  if (playbook.fabricSysctl) {
    const values = facts.sysctl.get(iface) ?? {};
    for (const key of SYSCTL_KEYS) {
      const want = String(playbook.fabricSysctl[key]);
      const have = values[key] ?? '';
      out.push({
        id: `sysctl ${iface} ${key}`,
        ok: have === want,
        detail: have === want ? `${iface}: ${key}=${want}` : `${iface}: ${key} is ${have || 'unreadable'}, want ${want}`,
        fix: have === want ? undefined : change('sysctl', 'set', iface, `${iface}: ${key} ${have || '?'} → ${want}`),
      });
    }
  }

  const persistence = input.persistence ?? HOOK;
  const want = expectedTableRoute(fleet, nic);
  const routes = facts.routes.get(String(nic.table)) ?? [];
  const table = routes.map((r) => r.text.replace(/ linkdown\b/, ''));
  // A manager makes the route its own way (protocol, metric); the routing script makes exactly `want`.
  const tableOk = table.length === 1 && (persistence.kind === 'hook' ? table[0] === want : isManagedTableRoute(routes[0]!, fleet, nic));
  out.push({
    id: `table ${iface}`,
    ok: tableOk,
    detail: tableOk ? `${iface}: table ${nic.table} routes ${fleet.fabric.subnetText} via ${iface}` : table.length === 0 ? `${iface}: table ${nic.table} is empty (missing table route)` : `${iface}: table ${nic.table} holds ${table.join('; ')}`,
    fix: tableOk
      ? undefined
      : change('table-route', 'add', iface, `${iface}: table ${nic.table} ← ${fleet.fabric.subnetText} src ${nic.address}${persistence.kind === 'hook' ? flushNote(table.filter((r) => r !== want)) : `, by ${MANAGER_NAME[persistence.kind]}`}`),
  });

  const related = facts.rules.filter((r) => r.from === nic.address || r.table === String(nic.table));
  const ruleText = (r: RuleFact) => `${r.priority}: ${r.text}`;
  const wantRule = expectedRule(nic);
  const rulesOk = related.length === 1 && (persistence.kind === 'hook' ? normalizeLine(ruleText(related[0]!)) === wantRule : isManagedRule(related[0]!, nic));
  const ruleDetail = rulesOk
    ? `${iface}: rule ${wantRule}`
    : related.length === 0
      ? `${iface}: rule from ${nic.address} is missing`
      : related.length > 1 && related.every((r) => r.from === nic.address && r.table === String(nic.table))
        ? `${iface}: ${related.length} duplicate rules from ${nic.address} (${related.map((r) => r.priority).join(', ')})`
        : `${iface}: rules for ${nic.address} / table ${nic.table} are ${related.map(ruleText).join('; ')}`;
  out.push({ id: `rule ${iface}`, ok: rulesOk, detail: ruleDetail, fix: rulesOk ? undefined : change('rule', related.length ? 'replace' : 'add', iface, `${iface}: rule ${wantRule}${related.length ? ` (replacing ${related.length})` : ''}`) });

  // netplan cannot keep the kernel's route out of main; NetworkManager moves it to the NIC's table.
  const checkMain = persistence.kind === 'netplan' ? false : persistence.kind === 'networkmanager' || playbook.policyRouting.mainRoutes === 'remove';
  if (checkMain) {
    const inMain = (facts.routes.get('main') ?? []).filter((r) => r.dst === fleet.fabric.subnetText && r.dev === iface);
    out.push({
      id: `main ${iface}`,
      ok: inMain.length === 0,
      detail: inMain.length === 0 ? `${iface}: no main-table route to ${fleet.fabric.subnetText}` : `${iface}: main-table route to ${fleet.fabric.subnetText} is back`,
      fix: inMain.length === 0 ? undefined : change('main-route', 'remove', iface, `${iface}: remove main-table route ${fleet.fabric.subnetText} dev ${iface}`),
    });
  }

  if (playbook.verifyRoutes) {
    const got = facts.routeGet.get(iface);
    const ok = got?.dev === iface && got.table === String(nic.table);
    out.push({
      id: `route-get ${iface}`,
      ok,
      detail: ok ? `${iface}: traffic from ${nic.address} leaves through ${iface} (table ${nic.table})` : `${iface}: traffic from ${nic.address} leaves through ${got?.dev ?? 'nowhere'}${got?.table ? ` (table ${got.table})` : ''}${got && !got.dev ? ` — ${got.text}` : ''}`,
      fix: undefined,
    });
  }
  return out;
}

/** `Generated by ibfleet 0.1.0 for host 34 (memserver34), playbook …` in a generated file's header. */
const GENERATED = /^# Generated by ibfleet (\S+) for host (\d+) \(([^)]*)\)/m;

export function generatedFor(text: string | undefined): { version: string; id: number; name: string } | undefined {
  const match = text === undefined ? null : GENERATED.exec(text);
  return match ? { version: match[1]!, id: Number(match[2]), name: match[3]! } : undefined;
}

/** Files whose content carries the fabric's tables and addresses: another tableBase or subnet changes them. */
const CARRIES_FABRIC: ReadonlySet<RenderedFile['role']> = new Set(['routing-script', 'netplan', 'record']);

/**
 * Why a file's content differs, as far as its header and the ownership record tell: generated for
 * another host name or number (the inventory renamed the host since the last deploy), for another
 * tableBase or subnet (the record of the last deploy says which), or edited on the host.
 */
function modifiedWhy(file: RenderedFile, facts: HostFacts, host: Host, fleet: Fleet): string {
  const made = generatedFor(facts.contents.get(file.path)?.text);
  if (made && (made.id !== host.id || made.name !== host.name)) {
    return `was generated for host ${made.id} (${made.name}), not ${host.id} (${host.name}): the inventory renamed the host since the last deploy; deploy regenerates it (not a hand edit)`;
  }
  const owned = facts.owned;
  const other = [
    owned?.tableBase !== undefined && owned.tableBase !== fleet.fabric.tableBase ? `tableBase ${owned.tableBase}, not ${fleet.fabric.tableBase}` : undefined,
    owned?.subnet !== undefined && owned.subnet !== fleet.fabric.subnetText ? `subnet ${owned.subnet}, not ${fleet.fabric.subnetText}` : undefined,
  ].filter((x) => x !== undefined);
  if (owned && other.length > 0 && CARRIES_FABRIC.has(file.role)) {
    const tables = owned.nics.map((n) => n.table).join(', ');
    return `was generated with ${other.join(' and ')} (the last deploy's record ${OWNED_PATH}${tables ? ` lists tables ${tables}` : ''}): the inventory's fabric changed since; deploy regenerates it (not a hand edit)`;
  }
  return 'was modified (content differs from the rendered file)';
}

/**
 * The routing script flushes a NIC's table before it adds the route: routes someone else put
 * there go, and the plan must say so rather than read as a plain addition.
 */
function flushNote(foreign: readonly string[]): string {
  if (foreign.length === 0) return '';
  const shown = foreign.slice(0, 3).join('; ');
  const more = foreign.length > 3 ? `; and ${foreign.length - 3} more` : '';
  return ` (flushes the table first, removing ${foreign.length === 1 ? 'the route' : `${foreign.length} routes`} found there: ${shown}${more})`;
}

/** Failing findings deploy can change, as planned changes. */
export function plannedChanges(assessment: Assessment): Change[] {
  return assessment.findings.filter((f) => !f.ok && f.fix !== undefined).map((f) => f.fix!);
}

export function failingFindings(assessment: Assessment): Finding[] {
  return assessment.findings.filter((f) => !f.ok);
}
