/**
 * Why a matrix cell failed, when the hosts' own state can tell: a port that is not ACTIVE at
 * either end, an interface that is down, a NIC's source rule or table missing (the per-NIC routing
 * not deployed), traffic from the source address leaving through another NIC, no route at all.
 * Read from the probe verify runs on every host as it connects. Pure.
 */
import type { Fleet, Nic } from '../inventory/model.js';
import type { CellCause, CellCauseKind, CellEnd, CellSpec } from '../vocabulary.js';
import type { HostFacts } from '../facts/host-facts.js';
import { nicFabric, portLabel } from '../facts/nic-fabric.js';
import { NEXT_FOR_NO_SM, portNextStep } from '../steps/fabric-health/problems.js';

function nicOf(fleet: Fleet, end: CellEnd): Nic | undefined {
  return fleet.hosts.find((h) => h.id === end.host)?.nics.find((n) => n.index === end.nic);
}

/** What is wrong at one end of a cell, phrased with the end's name (`34/ib1: …`). */
function endCauses(
  fleet: Fleet,
  cell: CellSpec,
  role: 'source' | 'destination',
  facts: HostFacts | undefined,
): CellCause[] {
  const end = role === 'source' ? cell.from : cell.to;
  const nic = nicOf(fleet, end);
  if (!facts?.complete || !nic) return [];
  const at = `${end.host}/${end.iface}`;
  const cause = (kind: CellCauseKind, text: string): CellCause => ({ kind, host: end.host, iface: end.iface, text });
  const causes: CellCause[] = [];
  const link = facts.links.get(nic.iface);
  if (!link) return [cause('no-interface', `${at} does not exist`)];
  if (!link.up)
    causes.push(
      cause('link-down', `${at} is down: bring it up (ip link set ${end.iface} up, or through its network manager)`),
    );
  const fabric = fleet.fabric.rdma && facts.rdma ? nicFabric(nic, facts) : undefined;
  // Ping needs no RDMA device; an rping cell cannot work without one.
  if (fabric?.device === null && cell.method === 'rping') causes.push(cause('no-rdma', `${at} has no RDMA device`));
  if (fabric && fabric.device !== null) {
    // With status's next step: the cause line is where the admin reads what to do.
    if (fabric.state !== 'ACTIVE')
      causes.push(
        cause(
          'port-not-active',
          `${at}: port ${portLabel(fabric)} is ${fabric.state ?? 'unknown'}${fabric.physState && fabric.physState !== 'LinkUp' ? ` (${fabric.physState})` : ''}: ${portNextStep(fabric)}`,
        ),
      );
    else if (fabric.linkLayer === 'InfiniBand' && (fabric.smLid ?? 0) === 0)
      causes.push(
        cause('no-subnet-manager', `${at}: port ${portLabel(fabric)} has no subnet manager: ${NEXT_FOR_NO_SM}`),
      );
  } else if (link.up && !link.lowerUp)
    causes.push(cause('no-carrier', `${at} has no carrier: check the cable and the switch port`));
  // A port or link that is down explains the cell; the routing it took with it is a consequence.
  if (causes.length > 0) return causes;
  const hasRule = facts.rules.some((r) => r.from === nic.address && r.table === String(nic.table));
  const table = facts.routes.get(String(nic.table)) ?? [];
  if (!hasRule || table.length === 0) {
    const missing = [
      !hasRule ? `no rule from ${nic.address}` : '',
      table.length === 0 ? `table ${nic.table} empty` : '',
    ]
      .filter(Boolean)
      .join(', ');
    causes.push(
      cause('routing-missing', `${at}: ${missing} (per-NIC routing not deployed: ibfleet deploy --hosts ${end.host})`),
    );
  } else if (role === 'source') {
    const got = facts.routeGet.get(nic.iface);
    if (got && !got.dev) causes.push(cause('no-route', `${at}: no route from ${nic.address} (${got.text})`));
    else if (got?.dev && got.dev !== nic.iface)
      causes.push(cause('other-nic', `${at}: traffic from ${nic.address} leaves through ${got.dev}`));
  }
  return causes;
}

/** The likely causes of a failed cell, source end first; empty when nothing found explains it. */
export function cellCauses(
  fleet: Fleet,
  cell: CellSpec,
  factsOf: (host: number) => HostFacts | undefined,
): CellCause[] {
  return [
    ...endCauses(fleet, cell, 'source', factsOf(cell.from.host)),
    ...endCauses(fleet, cell, 'destination', factsOf(cell.to.host)),
  ];
}

/** A failed cell's detail with its causes: `0/3 replies — likely: 34/ib1: port mlx5_1/1 is DOWN`. */
export function explainFailure(detail: string, causes: readonly Pick<CellCause, 'text'>[]): string {
  return causes.length
    ? `${detail} — likely: ${causes
        .slice(0, 3)
        .map((c) => c.text)
        .join('; ')}`
    : detail;
}
