/** How big the fabric's neighbour (ARP) tables must be: derived from the inventory alone. Pure. */
import type { Fleet, Host } from '../../inventory/model.js';

type Sizing = Pick<Fleet, 'hosts'>;

/** Every fabric NIC of the fleet: the peers a NIC may keep a neighbour entry for. */
export function fabricEndpoints(fleet: Sizing): number {
  return fleet.hosts.reduce((sum, h) => sum + h.nics.length, 0);
}

/**
 * The neighbour table's garbage-collection thresholds for one host of a fleet. Each of its fabric
 * NICs keeps an ARP entry for each peer NIC it talks to: a host with k NICs in a fabric of E NICs
 * may hold k × E entries (~1 000 on a dual-NIC host among 254, right at the kernel's default
 * gc_thresh3 of 1024, past which every send fails with "No buffer space available" and the kernel
 * logs "neighbor table overflow"; 8 × 2 032 on an 8-NIC GPU node among 254). The count is the host's
 * own: a 2-NIC server beside 8-NIC nodes needs a quarter of theirs. gc_thresh3 gets twice that,
 * rounded up to a power of two; gc_thresh2 and gc_thresh1 keep the kernel's 4:8 and 1:8 ratios.
 * Never below the kernel's defaults (128/512/1024). Derived from the inventory, so generation stays
 * pure.
 */
export function neighThresholds(
  fleet: Sizing,
  host: Pick<Host, 'nics'>,
): { gc_thresh1: number; gc_thresh2: number; gc_thresh3: number } {
  const entries = host.nics.length * fabricEndpoints(fleet);
  let third = 1024;
  while (third < 2 * entries) third *= 2;
  return { gc_thresh1: third / 8, gc_thresh2: third / 2, gc_thresh3: third };
}

/** The kernel's own limits: a fleet that needs no more leaves them (and an admin's higher ones) alone. */
export const KERNEL_NEIGH_DEFAULTS = { gc_thresh1: 128, gc_thresh2: 512, gc_thresh3: 1024 } as const;

/** The neighbour limits the fleet needs beyond the kernel's defaults, or undefined when it needs none. */
export function raisedNeighThresholds(
  fleet: Sizing,
  host: Pick<Host, 'nics'>,
): ReturnType<typeof neighThresholds> | undefined {
  const want = neighThresholds(fleet, host);
  return want.gc_thresh3 > KERNEL_NEIGH_DEFAULTS.gc_thresh3 ? want : undefined;
}

/** A host's neighbour table limits below what the fleet needs (every NIC keeps an entry per peer NIC). */
export function neighbourWarning(
  fleet: Sizing,
  host: Pick<Host, 'nics'>,
  neigh: Readonly<Record<string, string>>,
): string | undefined {
  const want = neighThresholds(fleet, host);
  const keys = ['gc_thresh1', 'gc_thresh2', 'gc_thresh3'] as const;
  const low = keys.filter((k) => neigh[k] !== undefined && neigh[k] !== '' && Number(neigh[k]) < want[k]);
  if (low.length === 0) return undefined;
  const found = low.map((k) => `${k} ${neigh[k]}`).join(', ');
  return `neighbour table: ${found} below what ${sizingText(fleet, host)} need (${low.map((k) => `${k} ${want[k]}`).join(', ')}); past gc_thresh3 every send fails with "No buffer space available": deploy raises them (neigh-table)`;
}

/** `200 hosts × 2 NICs`, or for a fleet that mixes counts `8 NICs here × 2 032 fabric NICs`. */
export function sizingText(fleet: Sizing, host: Pick<Host, 'nics'>): string {
  const k = host.nics.length;
  if (fleet.hosts.every((h) => h.nics.length === k)) return `${fleet.hosts.length} hosts × ${k} NICs`;
  return `${k} NICs here × ${fabricEndpoints(fleet)} fabric NICs`;
}
