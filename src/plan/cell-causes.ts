/**
 * Why a matrix cell failed, when the hosts' own state can tell: a port that is not ACTIVE at
 * either end, an interface that is down, a NIC's source rule or table missing (the per-NIC routing
 * not deployed), traffic from the source address leaving through another NIC, no route at all.
 * Read from the probe verify runs on every host as it connects. And from what a cell's own run saw
 * (its prober's note, the source's neighbour table): ARP flux and a foreign MAC, which fail a cell
 * even when its echoes came back, an address that never resolved, answers from elsewhere. Pure.
 */
import type { Fleet, Nic } from '../inventory/model.js';
import type { CellCause, CellCauseKind, CellEnd, CellSpec } from '../vocabulary.js';
import type { HostFacts } from '../facts/host-facts.js';
import type { NeighbourEntry, ProbeNote } from './verify-output.js';
import { nicFabric, portLabel } from '../facts/nic-fabric.js';
import { deployCommand } from './deploy-command.js';
import { NEXT_FOR_NO_SM, portNextStep } from '../steps/fabric-health/problems.js';
import { SYSCTL_PATH } from '../steps/fabric-sysctl/sysctl-file.js';

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
  if (!link.up) causes.push(cause('link-down', linkDown(fleet, end, nic, facts)));
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
      cause(
        'routing-missing',
        `${at}: ${missing} (per-NIC routing not deployed: ${deployCommand(String(end.host), fleet.file)})`,
      ),
    );
  } else if (role === 'source') {
    const got = facts.routeGet.get(nic.iface);
    if (got && !got.dev) causes.push(cause('no-route', `${at}: no route from ${nic.address} (${got.text})`));
    else if (got?.dev && got.dev !== nic.iface)
      causes.push(cause('other-nic', `${at}: traffic from ${nic.address} leaves through ${got.dev}`));
  }
  return causes;
}

/**
 * A NIC that is down: on a host as it arrives (the NIC without its address, no file of ibfleet's)
 * the fix is the deploy, whose links step configures it — not bringing it up by hand.
 */
function linkDown(fleet: Fleet, end: CellEnd, nic: Nic, facts: HostFacts): string {
  const at = `${end.host}/${end.iface}`;
  const addressed = facts.addresses.some((a) => a.iface === nic.iface && a.address === nic.address);
  if (!addressed && !facts.files.has(SYSCTL_PATH))
    return `${at} is down, without its address: not deployed yet (${deployCommand(String(end.host), fleet.file)} configures it)`;
  return `${at} is down: bring it up (ip link set ${end.iface} up, or through its network manager)`;
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

/** What a ping cell's run saw besides its counts: the prober's note, the source's neighbour entry. */
export interface CellEvidence {
  readonly note?: ProbeNote;
  /** The source host's neighbours after the cell ran (`ip -4 neigh show`). */
  readonly neighbours?: readonly NeighbourEntry[];
}

/** Each neighbour table by address and NIC, indexed once: a host's run shares one table among all its cells. */
const neighbourIndex = new WeakMap<readonly NeighbourEntry[], Map<string, NeighbourEntry>>();

/** The source's neighbour entry for `address` on `dev` (the first, as `ip neigh` lists them). */
function neighbourOf(evidence: CellEvidence, address: string, dev: string): NeighbourEntry | undefined {
  const table = evidence.neighbours;
  if (!table) return undefined;
  let index = neighbourIndex.get(table);
  if (!index) {
    index = new Map();
    for (const n of table) if (!index.has(`${n.address} ${n.dev}`)) index.set(`${n.address} ${n.dev}`, n);
    neighbourIndex.set(table, index);
  }
  return index.get(`${address} ${dev}`);
}

/** The NIC the source's traffic from its address leaves through, by its `route get`: its own unless the probe says otherwise. */
function sourceDev(cell: CellSpec, facts: HostFacts | undefined): string {
  return facts?.routeGet.get(cell.from.iface)?.dev ?? cell.from.iface;
}

/**
 * Why a cell is wrong even when every echo was answered: traffic from its source address leaves
 * through another NIC, or the destination's address resolved to the hardware address of another NIC
 * of the destination (ARP flux) or of no NIC of it. The echo then goes the wrong way and still comes
 * back; RDMA CM, which resolves the address the same way, binds the wrong port — so the cell fails.
 */
export function wrongPathCauses(
  fleet: Fleet,
  cell: CellSpec,
  evidence: CellEvidence,
  factsOf: (host: number) => HostFacts | undefined,
): CellCause[] {
  const source = factsOf(cell.from.host);
  const dev = sourceDev(cell, source);
  // Either way: the echo leaving the source by another NIC, or the answer leaving the destination by one.
  for (const role of ['source', 'destination'] as const) {
    const end = role === 'source' ? cell.from : cell.to;
    const facts = role === 'source' ? source : factsOf(cell.to.host);
    const leaves = facts?.routeGet.get(end.iface)?.dev;
    if (leaves === undefined || leaves === end.iface) continue;
    // What the hosts' state says, both ends, as for a cell that got no answer: whether the answers
    // came back through the wrong port or were dropped (arp_ignore, rp_filter) is chance, the cause is not.
    const found = cellCauses(fleet, cell, factsOf);
    if (found.length > 0) return found;
    const text = `${end.host}/${end.iface}: traffic from ${end.ip} leaves through ${leaves}`;
    return [{ kind: 'other-nic', host: end.host, iface: end.iface, text }];
  }
  const entry = neighbourOf(evidence, cell.to.ip, dev);
  const peer = fleet.hosts.find((h) => h.id === cell.to.host);
  const peerFacts = factsOf(cell.to.host);
  if (!entry?.lladdr || !peer || !peerFacts?.complete) return [];
  const macOf = (iface: string) => peerFacts.links.get(iface)?.hwaddr;
  if (macOf(cell.to.iface) === undefined || entry.lladdr === macOf(cell.to.iface)) return [];
  const at = `${cell.to.host}/${cell.to.iface}`;
  // Said without the source, the same from every host that asked: the matrix folds it into one line.
  const where = `resolves to ${entry.lladdr}`;
  const other = peer.nics.find((n) => n.iface !== cell.to.iface && macOf(n.iface) === entry.lladdr);
  // ARP flux fails a cell where ibfleet set the peer's ARP settings and they no longer hold. On a
  // peer it never deployed (the seeds' failure before a deploy), which NIC wins each ARP race is
  // chance: the cells the routing breaks fail for that, and the deploy that fixes them sets ARP too.
  if (other && !peerFacts.files.has(SYSCTL_PATH)) return [];
  if (other)
    return [
      {
        kind: 'arp-flux',
        host: cell.to.host,
        iface: cell.to.iface,
        text: `${at}: ${cell.to.ip} ${where}, the MAC of ${cell.to.host}/${other.iface}: ARP flux — arp_ignore/arp_announce on ${peer.name} are not as deployed, and RDMA CM would use ${other.iface} (${deployCommand(String(cell.to.host), fleet.file)})`,
      },
    ];
  return [
    {
      kind: 'address-conflict',
      host: cell.to.host,
      iface: cell.to.iface,
      text: `${at}: ${cell.to.ip} ${where}, which is no NIC of ${peer.name}: another machine answers for that address`,
    },
  ];
}

/**
 * Why a cell got no (or a wrong) answer when the hosts' state shows nothing wrong at either end:
 * the answer came from another address, the destination never resolved (neighbour FAILED or
 * INCOMPLETE), or — the route and the neighbour both right — the destination dropped the echo or
 * its answer. Each charged to the destination, which is where the fix is.
 */
export function replyCauses(cell: CellSpec, evidence: CellEvidence, facts: HostFacts | undefined): CellCause[] {
  const at = `${cell.to.host}/${cell.to.iface}`;
  const cause = (kind: CellCauseKind, text: string): CellCause => ({
    kind,
    host: cell.to.host,
    iface: cell.to.iface,
    text: `${at}: ${text}`,
  });
  if (evidence.note?.kind === 'from')
    return [cause('unexpected-source', `the answers to ${cell.to.ip} came from ${evidence.note.address}`)];
  const dev = sourceDev(cell, facts);
  const entry = neighbourOf(evidence, cell.to.ip, dev);
  if (entry && (entry.state === 'FAILED' || entry.state === 'INCOMPLETE'))
    return [
      cause(
        'neighbour-failed',
        `${cell.to.ip} did not resolve on ${cell.from.host}/${dev} (neighbour ${entry.state}): nothing answered ARP for it — the NIC is down, off this fabric, or without its address`,
      ),
    ];
  if (entry?.lladdr)
    return [
      cause(
        'no-reply',
        `no answer, though ${cell.from.host}/${dev} routes to ${cell.to.ip} and resolved it (${entry.lladdr}, ${entry.state}): the peer drops the echo or its answer — a firewall, its reverse-path filter, or its routing back`,
      ),
    ];
  return [];
}

/** Causes only the source's own report shows (its prober's note, its neighbour table). */
const WITNESSED: readonly CellCauseKind[] = [
  'arp-flux',
  'address-conflict',
  'neighbour-failed',
  'unexpected-source',
  'no-reply',
];

/**
 * A host's word against another is taken only when another host says the same: a cause only a
 * source's report shows (ARP flux, a foreign MAC, no answer) is charged to the destination when at
 * least two source hosts report such a cause about it; else to the one that reported it, so a
 * hostile host cannot fail its peers by what it prints. The cause keeps its words.
 */
export function corroborate<T extends Pick<CellSpec, 'from' | 'to'> & { readonly causes?: readonly CellCause[] }>(
  cells: readonly T[],
): T[] {
  const witnesses = new Map<number, Set<number>>();
  for (const cell of cells)
    for (const cause of cell.causes ?? [])
      if (WITNESSED.includes(cause.kind) && cause.host === cell.to.host)
        witnesses.set(cause.host, (witnesses.get(cause.host) ?? new Set()).add(cell.from.host));
  const alone = (cause: CellCause) => WITNESSED.includes(cause.kind) && (witnesses.get(cause.host)?.size ?? 0) < 2;
  return cells.map((cell) =>
    cell.causes?.some(alone)
      ? {
          ...cell,
          causes: cell.causes.map((c) => (alone(c) ? { ...c, host: cell.from.host, iface: cell.from.iface } : c)),
        }
      : cell,
  );
}
