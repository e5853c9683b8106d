/** What onboard adds to an inventory: host entries as they are written, and a pair. */
import type { Manager, Pair } from './model.js';

/** One host as onboard would write it. */
export interface HostEntry {
  readonly id: number;
  readonly name: string;
  /** The management (SSH) address; undefined: the inventory's entry says (not compared). */
  readonly address?: string | undefined;
  readonly role?: string | undefined;
  /** Undefined: not known yet — the entry's or the defaults' apply and are not compared. */
  readonly interfaces?: readonly string[] | undefined;
  readonly user?: string | undefined;
  readonly manager?: Manager | undefined;
  /** A trailing comment for a newly written entry, e.g. what onboard found on the machine. */
  readonly comment?: string | undefined;
}

export interface InventoryAddition {
  readonly hosts: readonly HostEntry[];
  readonly pair?: Pair | undefined;
}
