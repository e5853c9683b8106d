/**
 * What an earlier deploy owned on a host and the inventory of today no longer gives it — the tables
 * and rules of a deploy made with another tableBase or subnet, as the host's ownership record
 * (owned-record.ts) lists them. The routing script only ever touches today's tables and rules, so
 * without this they would stay filled, out of sight: deploy removes them (a change of its own kind),
 * status names them as drift, rollback removes them with the rest, and a restore after a failed
 * verification puts them back as they were. Pure; the numbers and addresses come from the host's
 * record, checked when it was read, and are quoted in every script line.
 */
import { factOf, type HostFacts } from '../../facts/host-facts.js';
import type { RuleFact } from '../../facts/ip-facts.js';
import type { Host } from '../../inventory/model.js';
import { shellCommand, shellQuote } from '../../script/shell.js';
import { change, type Finding } from '../step.js';
import { OWNED_FACT, OWNED_PATH, type OwnedNic, type OwnedRecord } from './owned-record.js';
import { routeText } from './routing.js';

export interface FormerRouting {
  /** The record's tableBase and subnet, to say where the old tables came from. */
  readonly tableBase: number | undefined;
  readonly subnet: string | undefined;
  /** The record's NICs whose rule (address, table, priority) is none of the host's now. */
  readonly nics: readonly OwnedNic[];
  /** Their tables that are none of the host's now, ascending. */
  readonly tables: readonly number[];
}

export const NO_FORMER_ROUTING: FormerRouting = { tableBase: undefined, subnet: undefined, nics: [], tables: [] };

/** The record's entries the inventory of today does not give `host` (none without a record). */
export function formerRouting(host: Host, owned: OwnedRecord | undefined): FormerRouting {
  if (!owned) return NO_FORMER_ROUTING;
  const now = new Set(host.nics.map((n) => `${n.address} ${n.table} ${n.priority}`));
  const tablesNow = new Set(host.nics.map((n) => n.table));
  const nics = owned.nics.filter((n) => !now.has(`${n.address} ${n.table} ${n.priority}`));
  const tables = [...new Set(nics.map((n) => n.table))].filter((t) => !tablesNow.has(t)).sort((a, b) => a - b);
  return { tableBase: owned.tableBase, subnet: owned.subnet, nics, tables };
}

/** The former routing of a host, as its probe found the record. */
export function formerRoutingOf(host: Host, facts: Pick<HostFacts, 'extra'>): FormerRouting {
  return formerRouting(host, factOf(facts, OWNED_FACT));
}

/** `tableBase was 940`, or what else the record says of the deploy that made them. */
export function formerOrigin(former: FormerRouting): string {
  if (former.tableBase !== undefined) return `tableBase was ${former.tableBase}`;
  return former.subnet !== undefined ? `subnet was ${former.subnet}` : 'listed in the ownership record';
}

/** Rules the host has that one of the former NICs made: `from ADDR lookup TABLE`, at whatever priority. */
export function formerRules(rules: readonly RuleFact[], former: FormerRouting): RuleFact[] {
  return rules.filter((r) => former.nics.some((n) => r.from === n.address && r.table === String(n.table)));
}

/** A rule from one of today's addresses or into one of today's tables: the NIC's own rule finding's (the routing script replaces it). */
function today(host: Host, rule: RuleFact): boolean {
  return host.nics.some((n) => rule.from === n.address || rule.table === String(n.table));
}

/**
 * Deploy and status: each old table (ok once empty) and each old rule still there. `rollback`
 * phrases the fixes as what a rollback does.
 */
export function formerFindings(host: Host, facts: HostFacts, former: FormerRouting, rollback = false): Finding[] {
  const origin = formerOrigin(former);
  const findings: Finding[] = former.tables.map((table) => {
    const routes = (facts.routes.get(String(table)) ?? []).map((r) => routeText(r.text));
    const subject = { kind: 'host', aspect: `old table ${table}` } as const;
    if (routes.length === 0)
      return {
        id: `old table ${table}`,
        subject,
        ok: true,
        detail: `table ${table} of an earlier deploy (${origin}) is empty`,
        fix: undefined,
      };
    const text = rollback ? `flush old table ${table} (${origin})` : `old table ${table} (${origin})`;
    return {
      id: `old table ${table}`,
      subject,
      ok: false,
      detail: `table ${table} of an earlier deploy (${origin}, ${OWNED_PATH}) still holds ${routes.join('; ')}`,
      fix: change('old-table', 'remove', `table ${table}`, text),
    };
  });
  for (const rule of formerRules(facts.rules, former).filter((r) => !today(host, r))) {
    const text = `${rule.priority}: ${rule.text}`;
    findings.push({
      id: `old rule ${text}`,
      subject: { kind: 'host', aspect: `old rule ${rule.priority}` },
      ok: false,
      detail: `rule ${text} of an earlier deploy (${origin}, ${OWNED_PATH}) is still there`,
      fix: change('old-rule', 'remove', `rule ${rule.priority}`, `old rule ${text} (${origin})`),
    });
  }
  return findings;
}

/** Every rule one of the former NICs made, deleted (a loop: there may be several), at whatever priority. */
export function deleteFormerRules(former: FormerRouting, say = false): string[] {
  const pairs = [...new Map(former.nics.map((n) => [`${n.address} ${n.table}`, n])).values()];
  return pairs.map(({ address, table }) => {
    const said = say ? ['-m', `ibfleet: removed old rule from ${address} lookup ${table}`] : [];
    return shellCommand(['del_rules', ...said, 'from', address, 'lookup', table]);
  });
}

/** The old tables flushed (those that hold anything: an empty table is no error, and says nothing). */
export function flushFormerTables(tables: readonly number[]): string[] {
  return tables.map(
    (t) =>
      `if ip -4 route show table ${shellQuote(t)} 2>/dev/null | grep -q .; then ip -4 route flush table ${shellQuote(t)} && echo ${shellQuote(`ibfleet: flushed old table ${t}`)} || status=1; fi`,
  );
}

/** The part of a deploy that removes what an earlier deploy owned: the tables still holding routes, and every rule it made. */
export function removeFormer(former: FormerRouting, failing: readonly Finding[]): string[] {
  const tables = former.tables.filter((t) => failing.some((f) => f.id === `old table ${t}`));
  if (tables.length === 0 && !failing.some((f) => f.id.startsWith('old rule '))) return [];
  // After the manager was told (NetworkManager leaves the route it made in a table its profile no longer names).
  const lines = [
    `# What an earlier deploy owned (its record, ${OWNED_PATH}) and this inventory does not give the host.`,
    ...deleteFormerRules(former, true),
    ...flushFormerTables(tables),
  ];
  return ['if [ "$status" -eq 0 ]; then', ...lines.map((l) => `\t${l}`), 'fi'];
}
