/**
 * The ownership record, `/etc/ibfleet/owned`: what the deployed routing is, in a file the host
 * keeps — the fabric's subnet and tableBase, and per fabric NIC the table ibfleet fills and the
 * source rule it adds (priority, from, table). Everything else ibfleet installs is rendered from the
 * inventory of today; this file tells the next run what the inventory of the last deploy gave the
 * host, so a changed tableBase or subnet leaves no table or rule behind that nobody knows of.
 * Rendered purely from the inventory like every other file (header, no dates); read back by
 * src/plan/owned.ts, which trusts none of it: it is text from a host.
 */
import type { Fleet, Host } from '../inventory/model.js';
import { IFACE_NAME } from '../inventory/schema.js';
import type { Playbook } from '../playbook/playbook.js';
import { renderHeader } from './header.js';
import { OWNED_PATH } from './paths.js';

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

export function renderOwnedRecord(host: Host, fleet: Fleet, playbook: Playbook): string {
  return `${renderHeader(host, playbook, OWNED_PATH)}
#
# The routing ibfleet owns on this host: the fabric it was deployed for, and per fabric NIC the
# table it fills and its source rule. A later deploy removes what is listed here and no longer in
# the inventory (its tableBase or subnet changed); \`ibfleet rollback\` removes all of it. Read by
# ibfleet, never run.
subnet ${fleet.fabric.subnetText}
tableBase ${fleet.fabric.tableBase}
${host.nics.map((n) => ownedLine(n)).join('\n')}
`;
}
