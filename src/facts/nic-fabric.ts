/**
 * A fabric NIC's RDMA side as status and verify report it (`--json` `fabric`, the compact line, a
 * failing cell's likely cause): the device and port behind the interface (the mapping ibdev2netdev
 * makes), the port's attributes as ibstat shows them, the IPoIB mode and MTU. Pure.
 */
import type { Nic } from '../inventory/model.js';
import type { NicFabric } from '../vocabulary.js';
import type { HostFacts } from './host-facts.js';
import { ipv4MappedGid } from './rdma-probe.js';
import { lidValue, rdmaPortOf, stateName, type RdmaFacts, type RdmaPortRef } from './rdma-facts.js';

/** The per-NIC facts status reports (`--json` `fabric`, the compact line). */
export function nicFabric(nic: Nic, facts: HostFacts): NicFabric {
  const rdma = facts.rdma;
  const link = facts.links.get(nic.iface);
  const ref = rdma ? rdmaPortOf(nic.iface, rdma) : undefined;
  const port = ref && rdma ? rdma.ports.get(`${ref.device}/${ref.port}`) : undefined;
  const mode = rdma?.nics.get(nic.iface)?.mode || null;
  const gid = ref && rdma ? roceV2Gid(rdma, ref.device, ref.port, nic.address) : null;
  return {
    nic: nic.index,
    iface: nic.iface,
    device: ref?.device ?? null,
    port: ref?.port ?? null,
    state: port ? stateName(port.state) || null : null,
    physState: port ? stateName(port.physState) || null : null,
    rate: port?.rate || null,
    linkLayer: port?.linkLayer || null,
    lid: port ? (lidValue(port.lid) ?? null) : null,
    smLid: port ? (lidValue(port.smLid) ?? null) : null,
    mode,
    mtu: link?.mtu ?? null,
    up: link?.up ?? false,
    roceV2Gid: gid,
    ...portTables(rdma, ref, port?.linkLayer),
  };
}

/** The port's GIDs (RoCE), or its subnet prefix and P_Keys (InfiniBand). */
function portTables(rdma: RdmaFacts | undefined, ref: RdmaPortRef | undefined, linkLayer: string | undefined) {
  if (!rdma || !ref || !linkLayer) return {};
  const mine = <T extends { device: string; port: number; index: number }>(list: readonly T[]) =>
    list.filter((x) => x.device === ref.device && x.port === ref.port).sort((a, b) => a.index - b.index);
  if (linkLayer === 'Ethernet') return { gids: mine(rdma.gids).map(({ index, gid, type }) => ({ index, gid, type })) };
  const gid0 = mine(rdma.gids).find((g) => g.index === 0);
  return { subnetPrefix: gid0 ? gid0.gid.slice(0, 19) : null, pkeys: mine(rdma.pkeys).map((p) => p.pkey) };
}

function roceV2Gid(rdma: RdmaFacts, device: string, port: number, address: string): number | null {
  const want = ipv4MappedGid(address);
  const found = rdma.gids.find((g) => g.device === device && g.port === port && g.gid === want && /v2/i.test(g.type));
  return found ? found.index : null;
}

/** `mlx5_1/1` */
export function portLabel(n: Pick<NicFabric, 'device' | 'port'>): string {
  return `${n.device}/${n.port}`;
}
