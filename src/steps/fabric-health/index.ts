/**
 * The `fabric-health` step, read-only, for status: per fabric NIC its RDMA device and port (the
 * mapping ibdev2netdev makes), and what keeps RDMA from working through it — a port that is not
 * ACTIVE/LinkUp, an InfiniBand port without subnet manager, a NIC without RDMA device, a port ACTIVE
 * behind an interface that is down, a RoCE port without a RoCE v2 GID for the NIC's address — each
 * with what to do next; across the selected hosts, ports below the fleet's rate and IPoIB modes,
 * MTUs or link layers that differ, RoCE v2 GID indexes that differ per NIC, and InfiniBand ports
 * under another subnet manager or subnet prefix (consistency.ts). Skipped for a fleet whose inventory says `fabric: { rdma: false }`.
 * Deploy changes none of it. Pure.
 */
import * as z from 'zod';
import { nicFabric } from '../../facts/nic-fabric.js';
import type { Blocker, StatusPart, StepModule } from '../step.js';
import { fleetFabricWarnings } from './fleet.js';
import { fabricConsistency, type HostFabric } from './consistency.js';
import type { HostResult } from '../../vocabulary.js';

const placed = (results: readonly HostResult[]): HostFabric[] =>
  results.map((r) => ({ host: r.host.id, fabric: r.fabric ?? [] }));
import { fabricProblems } from './problems.js';

export const fabricHealth: StepModule<Record<string, never>> = {
  name: 'fabric-health',
  summary: "read-only, for status: each NIC's RDMA port (state, subnet manager, rate), IPoIB mode and MTU",
  params: z.strictObject({}),
  use: () => ({
    name: 'fabric-health',
    status: ({ host, fleet, facts }): StatusPart => {
      if (!fleet.fabric.rdma || !facts.rdma) return {};
      const fabric = host.nics.map((nic) => nicFabric(nic, facts));
      // A port that is ACTIVE behind an interface that is down says more than "the interface is down".
      const told = new Set(fabric.filter((n) => n.state === 'ACTIVE' && !n.up).map((n) => n.iface));
      // An interface down without its address is down all the same (nic-unaddressed when the link is down).
      const down = (iface: string) => facts.links.get(iface)?.up === false;
      const explained = (b: Blocker) =>
        b.iface !== undefined &&
        told.has(b.iface) &&
        (b.kind === 'nic-down' || (b.kind === 'nic-unaddressed' && down(b.iface)));
      return { problems: fabricProblems(host, fabric, facts), fabric, explains: explained };
    },
    fleet: (results) => {
      const consistency = fabricConsistency(placed(results));
      return { warnings: [...fleetFabricWarnings(results), ...consistency.warnings], problems: consistency.problems };
    },
  }),
};
