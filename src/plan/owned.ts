/**
 * What ibfleet owns on a host, across deploys: the ownership record a deploy leaves there
 * (render/owned-record.ts), read back as a fact, and what it lists that the inventory of today no
 * longer gives the host — the tables and rules of a deploy made with another tableBase or subnet,
 * which deploy removes, status names as drift, rollback removes with the rest, and a restore puts
 * back as they were. Pure. The record is text from a host: only lines in exactly the form ibfleet
 * writes count, and a table or priority the kernel reserves (main, local, default), or a rule
 * priority outside the range ibfleet uses, is never taken for one of ibfleet's.
 */
import { MAIN_RULE_PRIORITY, RESERVED_TABLES } from '../inventory/derive.js';
import { parseCidr, parseIpv4 } from '../inventory/ipv4.js';
import type { Host } from '../inventory/model.js';
import { IFACE_NAME } from '../inventory/schema.js';
import type { FormerToRemove } from '../render/apply-script.js';
import { UNKNOWN_IFACE, type OwnedNic, type OwnedRecord } from '../render/owned-record.js';
import type { RuleFact } from './ip-facts.js';

export type { OwnedNic, OwnedRecord } from '../render/owned-record.js';

const NIC_LINE = /^nic (\S+) table (\d{1,5}) priority (\d{1,5}) from (\S+)$/;

/** A table or rule priority ibfleet could have made: strictly between the local rule and main's, not a kernel table. */
function ownable(n: number): boolean {
  return n > 0 && n < MAIN_RULE_PRIORITY && !RESERVED_TABLES.has(n);
}

/** The record's text as data, or undefined when it holds nothing of a record. Lines not in ibfleet's form are skipped. */
export function parseOwnedRecord(text: string): OwnedRecord | undefined {
  let subnet: string | undefined;
  let tableBase: number | undefined;
  const nics: OwnedNic[] = [];
  for (const line of text.split('\n')) {
    const nic = NIC_LINE.exec(line);
    if (nic) {
      const [, iface, table, priority, address] = nic as unknown as [string, string, string, string, string];
      if ((IFACE_NAME.test(iface) || iface === UNKNOWN_IFACE) && ownable(Number(table)) && ownable(Number(priority)) && parseIpv4(address) !== undefined) {
        nics.push({ iface, address, table: Number(table), priority: Number(priority) });
      }
    } else if (/^tableBase \d{1,5}$/.test(line)) tableBase = Number(line.slice('tableBase '.length));
    else if (/^subnet \S+$/.test(line) && parseCidr(line.slice('subnet '.length))) subnet = line.slice('subnet '.length);
  }
  return nics.length || tableBase !== undefined || subnet !== undefined ? { subnet, tableBase, nics } : undefined;
}

/** What an earlier deploy owned on the host and the inventory no longer gives it. */
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

/** `tableBase was 940`, or what else the record says of the deploy that made them. */
export function formerOrigin(former: FormerRouting): string {
  if (former.tableBase !== undefined) return `tableBase was ${former.tableBase}`;
  return former.subnet !== undefined ? `subnet was ${former.subnet}` : 'listed in the ownership record';
}

/** Rules the host has that one of the former NICs made: `from ADDR lookup TABLE`, at whatever priority. */
export function formerRules(rules: readonly RuleFact[], former: FormerRouting): RuleFact[] {
  return rules.filter((r) => former.nics.some((n) => r.from === n.address && r.table === String(n.table)));
}

/**
 * What a change script removes of an earlier deploy: `tables` (by default all of them) flushed, and
 * every rule one of its NICs made (`from ADDR lookup TABLE`) deleted, whatever its priority.
 */
export function formerRemoval(former: FormerRouting, tables: readonly number[] = former.tables): FormerToRemove {
  return { tables, rules: [...new Map(former.nics.map((n) => [`${n.address} ${n.table}`, { address: n.address, table: n.table }])).values()] };
}
