/**
 * Each fabric NIC's RDMA side in one short phrase, as status shows it on every display:
 * `ib1 → mlx5_1/1 ACTIVE LinkUp 100 Gb/sec InfiniBand, datagram MTU 2044`. Pure.
 */
import { foldHosts } from '../../inventory/select.js';
import type { HostResult, NicFabric } from '../../vocabulary.js';

export function formatNicFabric(n: NicFabric): string {
  const attributes = portAttributes(n);
  return attributes === undefined ? `${n.iface} → no RDMA device` : `${n.iface} → ${n.device}/${n.port} ${attributes}`;
}

/** `ACTIVE LinkUp 100 Gb/sec InfiniBand, datagram MTU 2044`: the port as the NIC's device shows it; undefined without a device. */
function portAttributes(n: NicFabric): string | undefined {
  if (n.device === null) return undefined;
  const rate = n.rate ? n.rate.replace(/\s*\(.*\)\s*$/, '') : '';
  const ipoib = n.mode ? `${n.mode} MTU ${n.mtu ?? '?'}` : n.mtu !== null ? `MTU ${n.mtu}` : '';
  const noSm =
    n.linkLayer === 'InfiniBand' && (n.state === 'ACTIVE' || n.state === 'INIT') && (n.smLid ?? 0) === 0
      ? ' no SM'
      : '';
  const roce =
    n.linkLayer === 'Ethernet' ? (n.roceV2Gid !== null ? ` RoCE v2 GID ${n.roceV2Gid}` : ' no RoCE v2 GID') : '';
  const down = n.up ? '' : `, ${n.iface} down`;
  return `${[n.state, n.physState, rate, n.linkLayer].filter(Boolean).join(' ')}${noSm}${roce}${ipoib ? `, ${ipoib}` : ''}${down}`;
}

/**
 * One host's NICs: `ib0 → … · ib1 → …`. A multi-rail host's NICs that read alike share their
 * attributes, so 8 ports stay one readable line and the odd one stands out:
 * `ibp12s0 → mlx5_0/1, ibp75s0 → mlx5_2/1, …: ACTIVE LinkUp … · ibp18s0 → mlx5_1/1 DOWN Disabled …`.
 */
export function formatHostFabric(nics: readonly NicFabric[]): string {
  if (nics.length <= 2) return nics.map(formatNicFabric).join(' · ');
  const groups = new Map<string, NicFabric[]>();
  for (const n of nics) {
    const key = portAttributes(n) ?? '';
    groups.set(key, [...(groups.get(key) ?? []), n]);
  }
  return [...groups]
    .map(([attributes, group]) =>
      attributes === ''
        ? group.map(formatNicFabric).join(', ')
        : group.length === 1
          ? formatNicFabric(group[0]!)
          : `${group.map((n) => `${n.iface} → ${n.device}/${n.port}`).join(', ')}: ${attributes}`,
    )
    .join(' · ');
}

/** `16,34: ib0 → … · ib1 → …`, hosts whose NICs read the same folded into one line. */
export function foldedFabricLines(results: readonly HostResult[]): string[] {
  const groups = new Map<string, number[]>();
  for (const r of results) {
    if (!r.fabric?.length) continue;
    const text = formatHostFabric(r.fabric);
    groups.set(text, [...(groups.get(text) ?? []), r.host.id]);
  }
  return [...groups.entries()].sort((a, b) => a[1][0]! - b[1][0]!).map(([text, ids]) => `${foldHosts(ids)}: ${text}`);
}

/** Each host's warnings, hosts with the same one folded: `16,34: neighbour table: …`. */
export function foldedWarningLines(results: readonly HostResult[], fleet: readonly string[] = []): string[] {
  const groups = new Map<string, number[]>();
  for (const r of results) for (const w of r.warnings ?? []) groups.set(w, [...(groups.get(w) ?? []), r.host.id]);
  return [...fleet, ...[...groups.entries()].map(([text, ids]) => `${foldHosts(ids)}: ${text}`)];
}
