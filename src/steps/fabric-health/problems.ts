/**
 * The playbook's fabric-health step, for one host: each fabric NIC's RDMA device and port (the
 * mapping ibdev2netdev makes), and what keeps RDMA from working through it — a port that is not
 * ACTIVE/LinkUp, an InfiniBand port without subnet manager, a NIC without RDMA device, a port ACTIVE
 * behind an interface that is down, a RoCE port without a RoCE v2 GID for the NIC's address. Every
 * problem says what to do next. Read-only: deploy changes none of it. Pure.
 */
import type { Host } from '../../inventory/model.js';
import type { NicFabric } from '../../vocabulary.js';
import type { HostFacts } from '../../facts/host-facts.js';
import { portLabel } from '../../facts/nic-fabric.js';

const NEXT_FOR_STATE: Readonly<Record<string, string>> = {
  DOWN: 'no link: check the cable and the switch port (ibstat shows the physical state), then the port comes up on its own',
  INIT: "the link is up but no subnet manager has configured the port: start one (systemctl start opensm on a host of this fabric) or enable the switch's SM",
  ARMED: 'the subnet manager has not finished bringing the port up: wait a sweep, or restart opensm',
};

/** An InfiniBand port ACTIVE without subnet manager (SM LID 0): also said on the verify cells it fails. */
export const NEXT_FOR_NO_SM = "start one (systemctl start opensm on a host of this fabric) or enable the switch's SM";

const NEXT_FOR_PHYS: Readonly<Record<string, string>> = {
  Polling: 'the port is looking for a link partner: check the cable and that the switch port is enabled',
  Disabled: 'the port is disabled: enable it (ibportstate … enable, or on the switch)',
  Sleep: 'the port is asleep: check the cable and the switch port',
};

/** What to do about a port that is not ACTIVE: status's words, also on the verify cells it fails. */
export function portNextStep(n: Pick<NicFabric, 'state' | 'physState' | 'linkLayer' | 'smLid'>): string {
  const noSm = n.linkLayer === 'InfiniBand' && (n.smLid ?? 0) === 0;
  return n.state === 'INIT' && noSm
    ? NEXT_FOR_STATE.INIT!
    : ((n.physState && NEXT_FOR_PHYS[n.physState]) ??
        NEXT_FOR_STATE[n.state ?? ''] ??
        'check ibstat and the subnet manager');
}

/** What keeps RDMA from working through each NIC; empty when every port is usable. */
export function fabricProblems(host: Host, fabric: readonly NicFabric[], facts: HostFacts): string[] {
  const problems: string[] = [];
  const devices = facts.rdma?.devices ?? [];
  for (const n of fabric) {
    if (!facts.links.has(n.iface)) continue; // nicBlockers already says the interface is missing
    if (n.device === null || n.port === null) {
      problems.push(
        devices.length === 0
          ? `${n.iface}: no RDMA device (/sys/class/infiniband is empty): install rdma-core (or MLNX_OFED) and load the HCA's driver (modprobe mlx5_ib ib_ipoib), then check with ibv_devices`
          : `${n.iface}: no RDMA device behind it (the host has ${devices.join(', ')}): is ${n.iface} the IPoIB or RoCE interface of an HCA? ibdev2netdev or rdma link shows which`,
      );
      continue;
    }
    const at = `${n.iface} → ${portLabel(n)}`;
    const ib = n.linkLayer === 'InfiniBand';
    const noSm = ib && (n.smLid ?? 0) === 0;
    if (n.state !== 'ACTIVE') {
      const phys = n.physState && n.physState !== 'LinkUp' ? ` (${n.physState})` : '';
      const next = portNextStep(n);
      problems.push(
        `${at} is ${n.state ?? 'in an unknown state'}${phys}${n.state === 'INIT' && noSm ? ', no subnet manager (SM LID 0)' : ''}: ${next}`,
      );
      continue;
    }
    if (n.physState !== 'LinkUp')
      problems.push(
        `${at} is ACTIVE but its physical state is ${n.physState ?? 'unknown'}: ${(n.physState && NEXT_FOR_PHYS[n.physState]) ?? 'check the cable'}`,
      );
    if (noSm) problems.push(`${at} has no subnet manager (SM LID 0): ${NEXT_FOR_NO_SM}`);
    if (!n.up)
      problems.push(
        `${at} is ACTIVE but ${n.iface} is down: bring it up (ip link set ${n.iface} up, or through its network manager)`,
      );
    if (n.linkLayer === 'Ethernet' && n.roceV2Gid === null) {
      const address = host.nics.find((x) => x.index === n.nic)?.address ?? '';
      problems.push(linkLocalOnly(n, address) ?? noRoceV2Gid(at, n.iface, address));
    }
  }
  return problems;
}

function noRoceV2Gid(at: string, iface: string, address: string): string {
  return `${at} is RoCE but no RoCE v2 GID carries ${address}: RDMA CM cannot use it; check that ${address} is on ${iface} (the GID table follows the interface's addresses)`;
}

/** IPv4-mapped GIDs start so; any other is link-local (fe80::) or another IPv6 address. */
const IPV4_MAPPED = '0000:0000:0000:0000:0000:ffff:';

/**
 * A RoCE port whose GIDs are all link-local or IPv6 (the NIC's address was not on the interface
 * when they registered): what NCCL and UCX pick by themselves then is fe80::, and the queue pair
 * never reaches RTR. Undefined where the port has an IPv4 GID, or none at all.
 */
export function linkLocalOnly(n: NicFabric, address: string): string | undefined {
  const gids = n.gids ?? [];
  if (n.linkLayer !== 'Ethernet' || gids.length === 0 || gids.some((g) => g.gid.startsWith(IPV4_MAPPED)))
    return undefined;
  const byGid = new Map<string, number[]>();
  for (const g of gids) byGid.set(g.gid, [...(byGid.get(g.gid) ?? []), g.index]);
  const shown = [...byGid.entries()].map(([gid, at]) => `${gid} at ${at.join(',')}`).join('; ');
  return `${n.iface} → ${portLabel(n)} is RoCE but its only GIDs are link-local or IPv6 (${shown}): NCCL and UCX would pick one and the queue pair never reaches RTR; no RoCE v2 GID carries ${address || 'its address'}: check that it is on ${n.iface}, then bring ${n.iface} down and up so the kernel registers its GIDs again`;
}
