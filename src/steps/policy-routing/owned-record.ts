/**
 * The ownership record, `/etc/ibfleet/owned`: what the deployed routing is, in a file the host
 * keeps — the fabric's subnet and tableBase, and per fabric NIC the table ibfleet fills and the
 * source rule it adds (priority, from, table). Everything else ibfleet installs is rendered from the
 * inventory of today; this file tells the next run what the inventory of the last deploy gave the
 * host, so a changed tableBase or subnet leaves no table or rule behind that nobody knows of
 * (former.ts). Rendered purely from the inventory like every other file (header, no dates); read
 * back whole by its own fact, which trusts none of it: it is text from a host. Pure.
 */
import type { Fact } from '../../facts/fact.js';
import { contentLines } from '../../facts/probe-format.js';
import { MAIN_RULE_PRIORITY, RESERVED_TABLES } from '../../inventory/derive.js';
import { parseCidr, parseIpv4 } from '../../inventory/ipv4.js';
import type { Fleet, Host } from '../../inventory/model.js';
import { IFACE_NAME } from '../../inventory/schema.js';
import { renderHeader } from '../../script/header.js';
import { hostFile } from '../../script/host-templates.js';
import type { RenderedFile } from '../../script/rendered-file.js';
import { shellQuote } from '../../script/shell.js';

/** Where the record lives: with the routing script, under /etc (etckeeper tracks it). */
export const OWNED_PATH = '/etc/ibfleet/owned';

/** One NIC's routing as ibfleet makes it: its table, and the rule `priority P from ADDR lookup T`. */
export interface OwnedNic {
  readonly iface: string;
  readonly address: string;
  readonly table: number;
  readonly priority: number;
}

/** What a record says; fields it does not carry (or carries garbled) are undefined. */
export interface OwnedRecord {
  readonly subnet: string | undefined;
  readonly tableBase: number | undefined;
  readonly nics: readonly OwnedNic[];
}

/** Written for an interface whose name is none a kernel takes (only an inventory that bypassed validation has one). */
export const UNKNOWN_IFACE = '-';

/**
 * A NIC's line in the record; the parser reads exactly this form. The interface name is written only
 * when it is a valid one: the record is read line by line, and no name may add a line of its own.
 */
export function ownedLine(nic: OwnedNic): string {
  return `nic ${IFACE_NAME.test(nic.iface) ? nic.iface : UNKNOWN_IFACE} table ${nic.table} priority ${nic.priority} from ${nic.address}`;
}

/** host/files/owned: the fabric, then a line per NIC. */
export function renderOwnedRecord(host: Host, fleet: Fleet, playbook: string): string {
  return hostFile('owned', {
    HEADER: renderHeader(host, playbook, OWNED_PATH).split('\n'),
    SUBNET: fleet.fabric.subnetText,
    TABLE_BASE: String(fleet.fabric.tableBase),
    NICS: host.nics.map((n) => ownedLine(n)),
  });
}

/** The record as the host receives it, whatever persists the routing. */
export function ownedRecordFile(host: Host, fleet: Fleet, playbook: string): RenderedFile {
  return {
    path: OWNED_PATH,
    mode: 0o644,
    content: renderOwnedRecord(host, fleet, playbook),
    role: 'record',
    kind: 'record',
    routing: true,
  };
}

const NIC_LINE = /^nic (\S+) table (\d{1,5}) priority (\d{1,5}) from (\S+)$/;

/** A table or rule priority ibfleet could have made: strictly between the local rule and main's, not a kernel table. */
function ownable(n: number): boolean {
  return n > 0 && n < MAIN_RULE_PRIORITY && !RESERVED_TABLES.has(n);
}

function parseNicLine(line: string): OwnedNic | undefined {
  const match = NIC_LINE.exec(line);
  if (!match) return undefined;
  const [, iface, table, priority, address] = match as unknown as [string, string, string, string, string];
  const valid =
    (IFACE_NAME.test(iface) || iface === UNKNOWN_IFACE) &&
    ownable(Number(table)) &&
    ownable(Number(priority)) &&
    parseIpv4(address) !== undefined;
  return valid ? { iface, address, table: Number(table), priority: Number(priority) } : undefined;
}

/** The record's text as data, or undefined when it holds nothing of a record. Lines not in ibfleet's form are skipped. */
export function parseOwnedRecord(text: string): OwnedRecord | undefined {
  let subnet: string | undefined;
  let tableBase: number | undefined;
  const nics: OwnedNic[] = [];
  for (const line of text.split('\n')) {
    const nic = parseNicLine(line);
    if (nic) nics.push(nic);
    else if (/^tableBase \d{1,5}$/.test(line)) tableBase = Number(line.slice('tableBase '.length));
    else if (/^subnet \S+$/.test(line) && parseCidr(line.slice('subnet '.length)))
      subnet = line.slice('subnet '.length);
  }
  return nics.length || tableBase !== undefined || subnet !== undefined ? { subnet, tableBase, nics } : undefined;
}

/**
 * Ibfleet writes a dozen lines or so; beyond this many a file is no record of ibfleet's (its
 * checksum says so), and a host cannot make the probe print more of it.
 */
export const OWNED_MAX_LINES = 64;

/**
 * The record, read whole (the probe reads only the first lines of ibfleet's other files): what it
 * lists is what the next deploy removes. With the shell's own `read`, each line behind the content
 * prefix, as the probe prints every file.
 */
export const OWNED_FACT: Fact<OwnedRecord | undefined> = {
  name: 'owned',
  // host/functions/facts.sh.
  probe: () => [`\trd_section owned ${OWNED_MAX_LINES} ${shellQuote(OWNED_PATH)}`],
  parse: (sections) => {
    const lines = sections.get('owned');
    return lines === undefined ? undefined : parseOwnedRecord(contentLines(lines).join('\n'));
  },
};
