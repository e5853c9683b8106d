/**
 * What onboard prints besides its deploy and verify displays (plain lines either way): the pair it
 * is about to contact, what discovery found on each machine, what it added to the inventory. Pure.
 */
import type { HostDiscovery } from '../../plan/onboard.js';
import type { InventoryChange } from '../../plan/onboard-summary.js';
import type { HostRef } from '../../vocabulary.js';
import { pluralize, STAGE_NOTES } from './format.js';
import { sanitizeLine } from './sanitize.js';

/**
 * `ibfleet onboard: alice's pair · cpu 16 (10.0.0.16) · mem 34 memserver34 (10.0.0.34) · inventory I`:
 * a host whose name waits for discovery (`unnamed`) is shown without one, not under a guess.
 */
export function onboardStartLine(
  owner: string,
  hosts: readonly HostRef[],
  inventory: string,
  unnamed: ReadonlySet<number> = new Set(),
): string {
  const host = (h: HostRef, i: number) =>
    `${i === 0 ? 'cpu' : 'mem'} ${h.id}${unnamed.has(h.id) ? '' : ` ${h.name}`} (${h.target})`;
  return `ibfleet onboard: ${owner}'s pair · ${hosts.map(host).join(' · ')} · inventory ${inventory}`;
}

/** `[51 memserver51] waiting for another ibfleet run (the host lock)`: discovery queues behind a run on the machine; `[51]` while its name waits for discovery. */
export function discoveryWaitLine(host: HostRef, unnamed: ReadonlySet<number> = new Set()): string {
  return `[${host.id}${unnamed.has(host.id) ? '' : ` ${host.name}`}] ${STAGE_NOTES.wait}`;
}

/** `[50 cpuserver50] found Ubuntu 18.04.6 LTS · netplan (detected) · NIC 1 ibp1s0 172.16.50.1/16 · NIC 2 ibp2s0 172.16.50.2/16` */
export function formatDiscoveryLines(d: HostDiscovery, host: HostRef): string[] {
  const label = `[${host.id} ${host.name}]`;
  const nics = d.nics.map(
    (n) =>
      `NIC ${n.nic} ${n.iface} ${n.unaddressed ? `no address yet (gets ${n.address}/${n.prefixLength})` : `${n.address}/${n.prefixLength}`}`,
  );
  const manager = d.manager
    ? `${d.manager} (${d.managerSource === 'detected' ? 'detected' : `from ${d.managerSource === 'flag' ? `--${d.role}-manager` : 'the inventory'}`})`
    : undefined;
  const found = [d.os ?? 'unknown OS', ...(manager ? [manager] : []), ...nics].join(' · ');
  return [`${label} ${d.role}: ${found}`, ...d.problems.map((p) => `${label} REFUSED: ${p}`)].map((line) =>
    sanitizeLine(line, 'keep'),
  );
}

/** What was added to the inventory, line by line; undefined when nothing was written. */
export function inventoryChangeText(change: InventoryChange): string | undefined {
  if (change.change === 'written')
    return `inventory: added ${pluralize(change.addedLines.length, 'line')} to ${change.file}:\n${change.addedLines.map((l) => `  + ${l}`).join('\n')}`;
  if (change.change === 'unchanged')
    return `inventory: ${change.file} already lists both hosts and the pair; unchanged`;
  return undefined;
}
