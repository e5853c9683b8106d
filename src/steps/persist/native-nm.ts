/**
 * Native persistence on NetworkManager hosts: the per-NIC table and source rule as properties of
 * the NIC's active connection profile — `ipv4.route-table` and `ipv4.routing-rules` (1.18+) — set
 * with `nmcli connection modify` (NetworkManager writes its keyfile itself; ibfleet never edits one
 * behind its back) and applied with `nmcli device reapply`. With the table set, NetworkManager puts
 * the NIC's subnet route into that table itself, so main keeps no fabric route; and it re-applies
 * both at every activation, atomically with it: no hook, no moment between "NIC up" and "hook ran".
 *
 * Rules are added and taken away one by one (`+ipv4.routing-rules`, `-ipv4.routing-rules`), so a
 * rule of the user's own on the same profile stays. Pure string builders; the probe's section is
 * read by src/plan/facts.ts.
 */
import type { Nic } from '../../inventory/model.js';
import { shellQuote } from '../../script/shell.js';

/** The first NetworkManager with `ipv4.routing-rules` (route-table came with 1.10; rules with 1.18). */
export const NM_NATIVE_SINCE = '1.18';

/** The rule as NetworkManager's ipv4.routing-rules takes it (and prints it back). */
export function nmRoutingRule(nic: Pick<Nic, 'priority' | 'address' | 'table'>): string {
  return `priority ${nic.priority} from ${nic.address} table ${nic.table}`;
}

/** One profile's change: its route table (when it changes) and rules taken away and added. */
export interface NmProfileEdit {
  readonly iface: string;
  readonly uuid: string;
  /** The profile's name, for the reader of the script. */
  readonly name: string;
  readonly routeTable: number | undefined;
  readonly removeRules: readonly string[];
  readonly addRules: readonly string[];
}

/** A profile's routing properties as they were, for putting them back. */
export interface NmProfileState {
  readonly iface: string;
  readonly uuid: string;
  readonly routeTable: string;
  readonly rules: readonly string[];
}

export function nmModifyCommand(edit: NmProfileEdit): string {
  const words = ['nmcli', 'connection', 'modify', 'uuid', shellQuote(edit.uuid)];
  if (edit.routeTable !== undefined) words.push('ipv4.route-table', String(edit.routeTable));
  for (const rule of edit.removeRules) words.push('-ipv4.routing-rules', shellQuote(rule));
  for (const rule of edit.addRules) words.push('+ipv4.routing-rules', shellQuote(rule));
  return words.join(' ');
}

export function nmRestoreCommand(state: NmProfileState): string {
  const table = /^\d+$/.test(state.routeTable) ? state.routeTable : '0';
  return `nmcli connection modify uuid ${shellQuote(state.uuid)} ipv4.route-table ${table} ipv4.routing-rules ${shellQuote(state.rules.join(', '))}`;
}

/** `nmcli device reapply`: the device takes the profile's changed properties without going down. */
export function nmReapplyCommand(iface: string): string {
  return `nmcli device reapply ${shellQuote(iface)}`;
}

/** Script lines: each profile changed, then each of those NICs reapplied; a failure sets `status`. */
export function renderNmEdits(edits: readonly NmProfileEdit[]): string[] {
  if (edits.length === 0) return [];
  const lines = [
    "# NetworkManager: the NICs' connection profiles (NetworkManager writes its keyfiles), then reapplied.",
  ];
  for (const edit of edits) {
    lines.push(`# ${edit.iface}: profile ${edit.name.replace(/[\r\n]/g, ' ')}`);
    lines.push(
      `if ${nmModifyCommand(edit)}; then echo ${shellQuote(`ibfleet: ${edit.iface}: connection profile changed`)}; else status=1; fi`,
    );
  }
  return lines;
}

export function renderNmReapply(ifaces: readonly string[]): string[] {
  return ifaces.map(
    (iface) =>
      `${nmReapplyCommand(iface)} >/dev/null || { echo ${shellQuote(`ibfleet: ${iface}: nmcli device reapply failed`)} >&2; status=1; }`,
  );
}
