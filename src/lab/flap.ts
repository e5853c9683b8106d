/**
 * `lab flap H NIC`: the NIC's carrier goes down and comes back, as when a cable or switch port
 * flaps — the switch-side end of the NIC's veth is taken down and up, so the host sees NO-CARRIER
 * and its manager reacts as it would to a real link (NetworkManager waits out its carrier grace,
 * systemd-networkd reconfigures the link). Returns when the manager has its NIC back and its
 * dispatcher has run the hooks for it (dispatched.ts).
 */
import { UsageError } from '../errors.js';
import { NETNS_DIR } from './names.js';
import { awaitDispatched, markDispatch } from './dispatched.js';
import { requireLab } from './state.js';
import { runOk } from './system.js';

export interface LabFlap {
  readonly id: number;
  readonly iface: string;
  readonly downMs: number;
  /** Whether the dispatcher had run the hooks of the flap when it returned (dispatched.ts). */
  readonly settled: boolean;
}

export async function labFlap(name: string, id: number, iface: string, downMs = 1000): Promise<LabFlap> {
  const plan = await requireLab(name);
  const host = plan.hosts.find((h) => h.id === id);
  if (!host)
    throw new UsageError(`lab ${name} has no host ${id} (its hosts: ${plan.hosts.map((h) => h.id).join(', ')})`);
  const nic = host.nics.find((n) => n.iface === iface);
  if (!nic)
    throw new UsageError(
      `host ${id} has no fabric NIC ${iface} (its NICs: ${host.nics.map((n) => n.iface).join(', ')})`,
    );
  const mark = await markDispatch(plan, host);
  const sw = ['nsenter', `--net=${NETNS_DIR}/${plan.switchNamespace}`, 'ip', 'link', 'set', nic.port];
  await runOk('lab flap: carrier down', [...sw, 'down']);
  await new Promise((r) => setTimeout(r, downMs));
  await runOk('lab flap: carrier up', [...sw, 'up']);
  const settled = await awaitDispatched(plan, host, mark, { kind: 'flap', iface });
  return { id, iface, downMs, settled };
}
