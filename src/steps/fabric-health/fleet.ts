/**
 * What status can tell only from the selected hosts together: a port running below the rate most
 * of the fleet's ports run at (a degraded link), IPoIB interfaces whose mode, MTU or link layer
 * differs from the rest (datagram on one host and connected on the other: MTU 2044 vs 65520).
 * Warnings, not failures: each names the odd ones. Pure.
 */
import type { HostResult, NicFabric } from '../../vocabulary.js';
import { rateGbps } from '../../facts/rdma-facts.js';
import { portLabel } from '../../facts/nic-fabric.js';

interface Placed {
  readonly host: number;
  readonly nic: NicFabric;
}

/** The most common value and every NIC whose value differs from it; undefined when all agree. */
function oddOnes<T>(
  all: readonly Placed[],
  value: (n: NicFabric) => T | null,
): { common: T; odd: Placed[] } | undefined {
  const counts = new Map<T, number>();
  for (const p of all) {
    const v = value(p.nic);
    if (v !== null) counts.set(v, (counts.get(v) ?? 0) + 1);
  }
  if (counts.size < 2) return undefined;
  const common = [...counts.entries()].sort((a, b) => b[1] - a[1])[0]![0];
  return { common, odd: all.filter((p) => value(p.nic) !== null && value(p.nic) !== common) };
}

function where(p: Placed): string {
  return `${p.host}/${p.nic.iface}`;
}

/** Lists `16/ib1, 34/ib1` by value: `connected (16/ib1, 34/ib1)`. */
function byValue<T>(odd: readonly Placed[], value: (n: NicFabric) => T | null, show: (v: T) => string): string {
  const groups = new Map<T, Placed[]>();
  for (const p of odd) groups.set(value(p.nic)!, [...(groups.get(value(p.nic)!) ?? []), p]);
  return [...groups.entries()].map(([v, ps]) => `${ps.map(where).join(', ')} ${show(v)}`).join('; ');
}

export function fleetFabricWarnings(results: readonly HostResult[]): string[] {
  const all: Placed[] = results.flatMap((r) => (r.fabric ?? []).map((nic) => ({ host: r.host.id, nic })));
  const warnings: string[] = [];

  const active = all.filter((p) => p.nic.state === 'ACTIVE');
  const rates = oddOnes(active, (n) => (n.rate ? (rateGbps(n.rate) ?? null) : null));
  if (rates) {
    const slow = rates.odd.filter((p) => (rateGbps(p.nic.rate!) ?? 0) < rates.common);
    for (const p of slow) {
      warnings.push(
        `${where(p)} → ${portLabel(p.nic)} runs at ${rateGbps(p.nic.rate!)} Gb/sec, below the ${rates.common} Gb/sec most of the fleet's ports run at: a degraded link (fewer lanes or a lower speed); reseat or replace the cable, check the switch port`,
      );
    }
  }
  const layers = oddOnes(all, (n) => n.linkLayer);
  if (layers)
    warnings.push(
      `link layer differs: ${byValue(
        layers.odd,
        (n) => n.linkLayer,
        (v) => `run ${v === 'Ethernet' ? 'Ethernet (RoCE)' : v}`,
      )} where the rest run ${layers.common}: is that port in the mode you meant (mlx4_port / mlxconfig LINK_TYPE)?`,
    );
  const modes = oddOnes(all, (n) => n.mode);
  if (modes)
    warnings.push(
      `IPoIB mode differs: ${byValue(
        modes.odd,
        (n) => n.mode,
        (v) => `${v}`,
      )} while the rest run ${modes.common}: use one mode everywhere (nmcli connection modify IFACE infiniband.transport-mode ${modes.common}, or echo ${modes.common} > /sys/class/net/IFACE/mode)`,
    );
  const mtus = oddOnes(all, (n) => n.mtu);
  if (mtus)
    warnings.push(
      `MTU differs: ${byValue(
        mtus.odd,
        (n) => n.mtu,
        (v) => `MTU ${v}`,
      )} while the rest use ${mtus.common}: datagram mode carries 2044 (4092 on a 4K IB MTU), connected 65520; make them match`,
    );
  return warnings;
}
