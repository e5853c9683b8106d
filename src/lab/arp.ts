/**
 * `lab arp-flux`: breaks one lab host's ARP settings the way a host nobody deployed has them —
 * arp_ignore=0 and arp_announce=0 on its fabric NICs (and `all`) — and flushes the other lab hosts'
 * neighbour tables, so the next lookups are answered under the broken settings. Any NIC of the host
 * then answers ARP for any of its addresses: the peers resolve an address to whichever NIC answered
 * first (ARP flux), and `verify` names it. `ibfleet deploy`, or the host's repair timer within its
 * interval, puts the settings back.
 */
import { UsageError } from '../errors.js';
import { labExec } from './exec.js';
import { requireLab } from './state.js';

export interface LabArpFluxResult {
  readonly id: number;
  readonly ifaces: readonly string[];
  readonly flushed: readonly number[];
}

export async function labArpFlux(name: string, id: number): Promise<LabArpFluxResult> {
  const plan = await requireLab(name);
  const host = plan.hosts.find((h) => h.id === id);
  if (!host)
    throw new UsageError(`lab ${name} has no host ${id} (its hosts: ${plan.hosts.map((h) => h.id).join(', ')})`);
  const ifaces = host.nics.map((n) => n.iface);
  const keys = ['all', ...ifaces].flatMap((i) => [
    `net.ipv4.conf.${i}.arp_ignore=0`,
    `net.ipv4.conf.${i}.arp_announce=0`,
  ]);
  const set = await labExec(name, id, ['sysctl', '-q', '-w', ...keys]);
  if (set.code !== 0) throw new UsageError(`lab arp-flux: sysctl on host ${id} failed: ${set.stderr.trim()}`);
  // The other hosts forget what they resolved. The broken host keeps its table: requests of its own
  // (sent as it answers) carry each address with its right MAC and would heal the others' entries.
  const others = plan.hosts.filter((h) => h.id !== id).map((h) => h.id);
  for (const other of others) await labExec(name, other, ['ip', '-4', 'neigh', 'flush', 'all']);
  return { id, ifaces, flushed: others };
}
