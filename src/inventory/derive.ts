/**
 * The lab convention, in one place: NIC n of host h is `<a>.<b>.h.n` inside the fabric subnet
 * (172.16.h.n/16 in the seeds), its routes live in table tableBase + n, and its source rule has
 * the same number as its priority.
 */
import { cidrContains, formatIpv4, type Cidr } from './ipv4.js';

export const MIN_HOST = 1;
export const MAX_HOST = 254;
/** NICs per host at most: a multi-rail GPU node's 8 compute NICs, and room for storage NICs beside them. */
export const MAX_NICS = 16;

/**
 * The priority of the kernel's `from all lookup main` rule. A NIC's source rule must come before it
 * (and after the local rule at 0), or main answers first and the NIC's table is never consulted.
 */
export const MAIN_RULE_PRIORITY = 32766;

/** Routing tables the kernel reserves (unspec, default, main, local); a NIC table must avoid them. */
export const RESERVED_TABLES: ReadonlySet<number> = new Set([0, 253, 254, 255]);

/** The IPoIB address of NIC `nic` on host `host`, as a 32-bit integer. */
export function deriveNicAddressValue(subnet: Cidr, host: number, nic: number): number {
  return (((subnet.network >>> 16) << 16) | (host << 8) | nic) >>> 0;
}

export function deriveNicAddress(subnet: Cidr, host: number, nic: number): string {
  return formatIpv4(deriveNicAddressValue(subnet, host, nic));
}

export function nicAddressInSubnet(subnet: Cidr, host: number, nic: number): boolean {
  return cidrContains(subnet, deriveNicAddressValue(subnet, host, nic));
}

export function deriveTable(tableBase: number, nic: number): number {
  return tableBase + nic;
}

/**
 * A fixed priority per NIC (equal to its table number) rather than the kernel's "next free slot
 * below the last rule": re-adding a rule after a flap then lands in the same place, `ip rule`
 * reads the same on every host, and a stray duplicate is easy to spot.
 */
export function deriveRulePriority(tableBase: number, nic: number): number {
  return deriveTable(tableBase, nic);
}
