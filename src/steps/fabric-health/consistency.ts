/**
 * What the RDMA libraries need the same on every host of a job, which no host can tell alone. On
 * RoCE, per NIC n, the index of the RoCE v2 GID carrying the convention address: NCCL_IB_GID_INDEX
 * and UCX_IB_GID_INDEX are one number for the whole job, so a host whose GID sits elsewhere (after
 * a port flap the GIDs re-register in another order) joins with the wrong GID — a warning naming
 * the hosts and their index, since `ibfleet env` can give each host its own. On InfiniBand, every
 * port must see one subnet manager (SM LID) and one subnet prefix: a port that sees another is in
 * another subnet, and nothing crosses it — a problem naming the ports. Pure.
 */
import type { HostFacts } from '../../facts/host-facts.js';
import type { Fleet, Host } from '../../inventory/model.js';
import type { NicFabric } from '../../vocabulary.js';
import { nicFabric, portLabel } from '../../facts/nic-fabric.js';
import { foldHosts } from '../../inventory/select.js';
import { linkLocalOnly } from './problems.js';

export interface HostFabric {
  readonly host: number;
  readonly fabric: readonly NicFabric[];
}

export interface FabricConsistency {
  /** The job can run, told each host's own settings. */
  readonly warnings: string[];
  /** The job cannot run across these ports. */
  readonly problems: string[];
  /** The hosts of those ports, each with what its port sees (env refuses them). */
  readonly outliers: readonly { readonly host: number; readonly text: string }[];
}

interface Placed {
  readonly host: number;
  readonly nic: NicFabric;
}

/** The value most ports have (ties: the lowest host's), and the ports with another; undefined when all agree. */
function majority<T>(all: readonly Placed[], value: (n: NicFabric) => T): { common: T; odd: Placed[] } | undefined {
  const counts = new Map<T, number>();
  for (const p of all) counts.set(value(p.nic), (counts.get(value(p.nic)) ?? 0) + 1);
  if (counts.size < 2) return undefined;
  const common = [...counts.entries()].sort((a, b) => b[1] - a[1])[0]![0];
  return { common, odd: all.filter((p) => value(p.nic) !== common) };
}

const at = (p: Placed) => `host ${p.host} NIC ${p.nic.nic} (${p.nic.iface} → ${portLabel(p.nic)})`;
const hostsOf = (ps: readonly Placed[]) => foldHosts([...new Set(ps.map((p) => p.host))]);

/** The ports that differ from the rest, one clause each: `host 34 NIC 2 (ib1 → mlx5_1/1) sees SM LID 2`. */
function named<T>(odd: readonly Placed[], value: (n: NicFabric) => T, show: (v: T) => string): string {
  return odd.map((p) => `${at(p)} ${show(value(p.nic))}`).join(', ');
}

function gidIndexWarnings(all: readonly Placed[]): string[] {
  const roce = all.filter((p) => p.nic.linkLayer === 'Ethernet' && p.nic.roceV2Gid !== null);
  const byNic = new Map<number, Placed[]>();
  for (const p of roce) byNic.set(p.nic.nic, [...(byNic.get(p.nic.nic) ?? []), p]);
  const warnings: string[] = [];
  for (const [n, ports] of [...byNic.entries()].sort((a, b) => a[0] - b[0])) {
    const split = majority(ports, (x) => x.roceV2Gid);
    if (!split) continue;
    const rest = ports.filter((p) => !split.odd.includes(p));
    warnings.push(
      `NIC ${n}: RoCE v2 GID index differs: ${named(
        split.odd,
        (x) => x.roceV2Gid,
        (v) => `has index ${v}`,
      )} where ${hostsOf(rest)} ${rest.length > 1 ? 'have' : 'has'} ${split.common}: one NCCL_IB_GID_INDEX (UCX_IB_GID_INDEX) for the whole job picks another GID on ${hostsOf(split.odd)}; give each host its own (ibfleet env --hosts …), or bring the NIC down and up there so its GIDs register in the kernel's order`,
    );
  }
  return warnings;
}

function subnetProblems(all: readonly Placed[]): Pick<FabricConsistency, 'problems' | 'outliers'> {
  // Ports without a subnet manager are told on their host (SM LID 0); only ports that have one are compared.
  const managed = all.filter(
    (p) => p.nic.linkLayer === 'InfiniBand' && p.nic.state === 'ACTIVE' && (p.nic.smLid ?? 0) > 0,
  );
  const problems: string[] = [];
  const outliers: { host: number; text: string }[] = [];
  const sm = majority(managed, (n) => n.smLid);
  for (const p of sm?.odd ?? [])
    outliers.push({
      host: p.host,
      text: `${at(p)} sees SM LID ${p.nic.smLid}, the fabric's other ports ${sm!.common}: another subnet`,
    });
  if (sm)
    problems.push(
      `SM LID differs: ${named(
        sm.odd,
        (n) => n.smLid,
        (v) => `sees SM LID ${v}`,
      )} while the fabric's other ports see ${sm.common}: another subnet manager runs that port's subnet, and RDMA between it and the rest cannot work; keep one SM (stop the stray opensm or the switch's SM) and the port rejoins at the next sweep`,
    );
  const withPrefix = managed.filter((p) => typeof p.nic.subnetPrefix === 'string');
  const prefix = majority(withPrefix, (n) => n.subnetPrefix);
  for (const p of prefix?.odd ?? [])
    outliers.push({
      host: p.host,
      text: `${at(p)} has subnet prefix ${p.nic.subnetPrefix}, the fabric's other ports ${prefix!.common}: another subnet`,
    });
  if (prefix)
    problems.push(
      `subnet prefix differs: ${named(
        prefix.odd,
        (n) => n.subnetPrefix,
        (v) => `has ${v}`,
      )} while the fabric's other ports have ${prefix.common}: that port is in another IB subnet (its SM's subnet_prefix), unreachable without a router; give every SM of this fabric one subnet_prefix`,
    );
  return { problems, outliers };
}

export function fabricConsistency(hosts: readonly HostFabric[]): FabricConsistency {
  const all: Placed[] = hosts.flatMap((h) => h.fabric.map((nic) => ({ host: h.host, nic })));
  return { warnings: gidIndexWarnings(all), ...subnetProblems(all) };
}

/**
 * verify's part: the same comparison from the facts each host's capability check read, and the RoCE
 * ports whose only GIDs are link-local (status says those per host). Hosts not reached are left out.
 */
export function verifyFabricFindings(
  fleet: Fleet,
  hosts: readonly Host[],
  factsOf: (id: number) => HostFacts | undefined,
): FabricConsistency {
  if (!fleet.fabric.rdma) return { warnings: [], problems: [], outliers: [] };
  const read = hosts.flatMap((h) => {
    const facts = factsOf(h.id);
    return facts?.rdma ? [{ host: h, fabric: h.nics.map((nic) => nicFabric(nic, facts)) }] : [];
  });
  const found = fabricConsistency(read.map((r) => ({ host: r.host.id, fabric: r.fabric })));
  const linkLocal = read.flatMap((r) =>
    r.fabric.flatMap((n) => {
      const text = linkLocalOnly(n, r.host.nics.find((x) => x.index === n.nic)?.address ?? '');
      return text ? [`host ${r.host.id}: ${text}`] : [];
    }),
  );
  return { ...found, problems: [...linkLocal, ...found.problems] };
}
