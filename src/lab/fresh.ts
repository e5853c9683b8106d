/**
 * `lab up --fresh H…`: hosts as a new machine arrives — HCA driver loaded, the fabric NICs present,
 * nothing configured on them: no address, no netplan entry, NetworkManager profile or ifupdown
 * stanza for them — while the host's network manager runs as on every other lab host (and manages
 * the NICs once something configures them). What `links` and `onboard` start from. Pure.
 */
import type { LabHost, LabNic } from './plan.js';

export function isFresh(host: Pick<LabHost, 'fresh'>): boolean {
  return host.fresh === true;
}

/** The fabric NICs the host's own configuration (and the lab's boot) gives their addresses: none on a fresh host. */
export function configuredNics(host: Pick<LabHost, 'fresh' | 'nics'>): readonly LabNic[] {
  return isFresh(host) ? [] : host.nics;
}
