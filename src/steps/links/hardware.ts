/**
 * What the hardware lets a fabric NIC be, from the probe, before anything changes: the IPoIB mode
 * (connected needs IPoIB's RC flag in the interface's hardware address — enhanced IPoIB, mlx5 on
 * ConnectX-4 and later, runs datagram only and the kernel refuses `connected` there), the MTU
 * (datagram: the port's active MTU less IPoIB's 4-byte header, 2044 on a 2048 port, 4092 on a
 * 4096 one; connected: 65520; Ethernet: what the driver takes), a partition (IPoIB only), and
 * the RoCE mode (an Ethernet link layer only). Each refusal names the NIC, the value and what is
 * allowed. Pure.
 */
import type { HostFacts } from '../../facts/host-facts.js';
import { rdmaPortOf } from '../../facts/rdma-facts.js';
import type { Manager, Nic } from '../../inventory/model.js';
import { ARPHRD_INFINIBAND, type LinkSys, type LinksFacts } from './facts.js';
import { CONNECTED_MTU, MIN_MTU, splitChild, type IpoibMode, type LinksParams } from './params.js';

/** The largest IB MTU there is: without the port's active MTU, datagram mode is bounded by it. */
const IB_MAX_MTU = 4096;
/** IPoIB's header, which datagram mode's MTU leaves room for. */
const IPOIB_HEADER = 4;
/** IPOIB_FLAGS_RC in the first byte of an IPoIB hardware address: connected mode can run. */
const IPOIB_FLAGS_RC = 0x80;

/** The interface the hardware belongs to: a P_Key child's parent, else the NIC's own. */
export function hardwareIface(nic: Nic): string {
  return splitChild(nic.iface)?.parent ?? nic.iface;
}

/** IPoIB by what the kernel shows: ARPHRD_INFINIBAND, or IPoIB's own `mode` attribute. */
export function isIpoib(sys: LinkSys | undefined): boolean {
  return sys !== undefined && (sys.type === ARPHRD_INFINIBAND || sys.mode !== '');
}

/** Whether the IPoIB interface can run connected mode (its hardware address carries the RC flag). */
export function connectedCapable(sys: LinkSys): boolean {
  const first = Number.parseInt(sys.address.slice(0, 2), 16);
  return Number.isInteger(first) && (first & IPOIB_FLAGS_RC) !== 0;
}

function typeName(sys: LinkSys): string {
  return sys.type === 1 ? 'type 1, Ethernet' : `type ${sys.type ?? 'unknown'}`;
}

function portOf(facts: HostFacts, iface: string): string | undefined {
  const ref = facts.rdma ? rdmaPortOf(iface, facts.rdma) : undefined;
  return ref && `${ref.device}/${ref.port}`;
}

/** The most datagram mode carries on the NIC's port, and where that comes from. */
export function datagramLimit(
  facts: HostFacts,
  links: LinksFacts,
  iface: string,
): { readonly mtu: number; readonly why: string } {
  const port = portOf(facts, iface);
  const active = port ? links.activeMtu.get(port) : undefined;
  if (active !== undefined)
    return {
      mtu: active - IPOIB_HEADER,
      why: `${port} has active MTU ${active} (ibv_devinfo), less IPoIB's ${IPOIB_HEADER}-byte header`,
    };
  return {
    mtu: IB_MAX_MTU - IPOIB_HEADER,
    why: `the port's active MTU is unknown (${port ? 'ibv_devinfo is not installed' : 'no RDMA port found'}): at most InfiniBand's ${IB_MAX_MTU}, less IPoIB's ${IPOIB_HEADER}-byte header`,
  };
}

function modeRefusal(iface: string, sys: LinkSys, mode: IpoibMode, facts: HostFacts): string | undefined {
  if (!isIpoib(sys))
    return `${iface}: mode ${mode} is IPoIB's, but ${iface} is no IPoIB interface (${typeName(sys)}: RoCE/Ethernet); leave mode out for it`;
  if (mode === 'connected' && !connectedCapable(sys)) {
    const device = portOf(facts, iface)?.split('/')[0];
    return `${iface}: mode connected is refused: ${iface} runs enhanced IPoIB${device ? ` (${device}` : ' ('}${device?.startsWith('mlx5') ? ', ConnectX-4 or later' : ''}; its hardware address ${sys.address.slice(0, 11)}… has no connected-mode flag), which is datagram only; allowed: datagram (MLNX_OFED can turn enhanced IPoIB off with ib_ipoib ipoib_enhanced=0)`;
  }
  // Already in that mode: nothing for the manager to set (an IPoIB interface the managers see as Ethernet, as in the lab).
  if (sys.type !== ARPHRD_INFINIBAND && sys.mode !== mode)
    return `${iface}: mode ${mode}: the kernel shows ${iface} as ${typeName(sys)}, not InfiniBand (32), so its network manager cannot set an IPoIB mode on it`;
  return undefined;
}

function mtuRefusal(
  iface: string,
  sys: LinkSys,
  want: LinksParams,
  facts: HostFacts,
  links: LinksFacts,
): string | undefined {
  const mtu = want.mtu!;
  if (isIpoib(sys)) {
    const mode = want.mode ?? (sys.mode === 'connected' ? 'connected' : 'datagram');
    if (mode === 'connected')
      return mtu > CONNECTED_MTU
        ? `${iface}: MTU ${mtu} is above connected mode's ${CONNECTED_MTU}; allowed: ${MIN_MTU}..${CONNECTED_MTU}`
        : undefined;
    const limit = datagramLimit(facts, links, iface);
    if (mtu <= limit.mtu) return undefined;
    const connected = connectedCapable(sys) ? `; connected mode (mode: connected) carries up to ${CONNECTED_MTU}` : '';
    return `${iface}: MTU ${mtu} is above what datagram mode carries here (${limit.mtu}: ${limit.why}); allowed: ${MIN_MTU}..${limit.mtu}${connected}`;
  }
  const max = links.maxMtu.get(iface);
  return max !== undefined && mtu > max
    ? `${iface}: MTU ${mtu} is above what its driver takes (maxmtu ${max}, ip -d link); allowed: ${MIN_MTU}..${max}`
    : undefined;
}

function roceRefusal(nic: Nic, want: LinksParams, facts: HostFacts): string | undefined {
  const iface = hardwareIface(nic);
  if (!facts.rdma) return undefined;
  const port = portOf(facts, iface);
  if (!port)
    return `${nic.iface}: roceMode ${want.roceMode}: ${iface} has no RDMA device (/sys/class/infiniband), so there is no RoCE port to set`;
  const linkLayer = facts.rdma.ports.get(port)?.linkLayer ?? '';
  if (linkLayer !== 'Ethernet')
    return `${nic.iface}: roceMode ${want.roceMode} is for RoCE ports, but ${port} behind ${iface} has link layer ${linkLayer || 'unknown'}; leave roceMode out for InfiniBand ports`;
  return undefined;
}

function pkeyRefusal(nic: Nic, want: LinksParams, sys: LinkSys | undefined, manager: Manager): string | undefined {
  const child = splitChild(nic.iface);
  if (!child || child.pkey !== want.pkey) {
    const parent = child?.parent ?? nic.iface;
    return `${nic.iface}: pkey ${want.pkey}: the address goes on the P_Key child ${parent}.${want.pkey!.slice(2)}, so the inventory lists that as NIC ${nic.index}'s interface (interfaces: [..., ${parent}.${want.pkey!.slice(2)}])`;
  }
  if (manager === 'netplan')
    return `${nic.iface}: pkey ${want.pkey}: netplan has no P_Key child interfaces; configure the partition with NetworkManager or ifupdown, or leave pkey out`;
  if (!sys) return `${nic.iface}: pkey ${want.pkey}: the parent ${child.parent} is not there`;
  if (!isIpoib(sys))
    return `${nic.iface}: pkey ${want.pkey}: partitions are IPoIB's, but ${child.parent} is ${typeName(sys)}; leave pkey out for it`;
  return undefined;
}

/** Why the NIC cannot be what is asked of it; undefined when it can. */
export function hardwareRefusal(
  nic: Nic,
  want: LinksParams,
  facts: HostFacts,
  links: LinksFacts,
  manager: Manager,
): string | undefined {
  const iface = hardwareIface(nic);
  const sys = links.sys.get(iface);
  if (want.pkey !== undefined) {
    const refused = pkeyRefusal(nic, want, sys, manager);
    if (refused) return refused;
  }
  if (want.roceMode !== undefined) {
    const refused = roceRefusal(nic, want, facts);
    if (refused) return refused;
  }
  if (!sys) return undefined;
  if (want.mode !== undefined) {
    const refused = modeRefusal(iface, sys, want.mode, facts);
    if (refused) return refused;
  }
  return want.mtu !== undefined ? mtuRefusal(iface, sys, want, facts, links) : undefined;
}
