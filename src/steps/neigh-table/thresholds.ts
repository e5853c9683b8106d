/** How big the fabric's neighbour (ARP) tables must be: derived from the inventory alone. Pure. */
import type { Fleet } from '../../inventory/model.js';

/**
 * The neighbour table's garbage-collection thresholds for a fleet. Every fabric NIC keeps an ARP
 * entry for each peer NIC it talks to — hosts × NICs × NICs per host over the whole fabric (~1 000
 * with 254 dual-NIC hosts, right at the kernel's default gc_thresh3 of 1024, past which every send
 * fails with "No buffer space available" and the kernel logs "neighbor table overflow"). gc_thresh3
 * gets twice that, rounded up to a power of two; gc_thresh2 and gc_thresh1 keep the kernel's 4:8 and
 * 1:8 ratios. Never below the kernel's defaults (128/512/1024). Derived from the inventory, so every
 * host of a fleet gets the same values and generation stays pure.
 */
export function neighThresholds(fleet: Pick<Fleet, 'hosts' | 'fabric'>): { gc_thresh1: number; gc_thresh2: number; gc_thresh3: number } {
  const entries = fleet.hosts.length * fleet.fabric.nics * fleet.fabric.nics;
  let third = 1024;
  while (third < 2 * entries) third *= 2;
  return { gc_thresh1: third / 8, gc_thresh2: third / 2, gc_thresh3: third };
}

/** The kernel's own limits: a fleet that needs no more leaves them (and an admin's higher ones) alone. */
export const KERNEL_NEIGH_DEFAULTS = { gc_thresh1: 128, gc_thresh2: 512, gc_thresh3: 1024 } as const;

/** The neighbour limits the fleet needs beyond the kernel's defaults, or undefined when it needs none. */
export function raisedNeighThresholds(fleet: Pick<Fleet, 'hosts' | 'fabric'>): ReturnType<typeof neighThresholds> | undefined {
  const want = neighThresholds(fleet);
  return want.gc_thresh3 > KERNEL_NEIGH_DEFAULTS.gc_thresh3 ? want : undefined;
}

/** A host's neighbour table limits below what the fleet needs (every NIC keeps an entry per peer NIC). */
export function neighbourWarning(fleet: Fleet, neigh: Readonly<Record<string, string>>): string | undefined {
  const want = neighThresholds(fleet);
  const keys = ['gc_thresh1', 'gc_thresh2', 'gc_thresh3'] as const;
  const low = keys.filter((k) => neigh[k] !== undefined && neigh[k] !== '' && Number(neigh[k]) < want[k]);
  if (low.length === 0) return undefined;
  const found = low.map((k) => `${k} ${neigh[k]}`).join(', ');
  return `neighbour table: ${found} below what ${fleet.hosts.length} hosts × ${fleet.fabric.nics} NICs need (${low.map((k) => `${k} ${want[k]}`).join(', ')}); past gc_thresh3 every send fails with "No buffer space available": deploy raises them (neigh-table)`;
}
