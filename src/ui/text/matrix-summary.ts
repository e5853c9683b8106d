/**
 * The verify matrix read at rail scale, for every display: how each rail did (NIC n to NIC n, and
 * the cells across rails), and the failing cells folded by their likely cause — at 8 NICs a host one
 * undeployed host fails 126 cells, and a reader needs the one line that says so, not 126. Decided
 * on the causes' kinds (vocabulary.ts, CellCause), never on their text. Pure.
 */
import { foldHosts } from '../../inventory/select.js';
import { deployCommand } from '../../plan/deploy-command.js';
import type { CellCause, CellCauseKind, MatrixCell, MatrixStart } from '../../vocabulary.js';
import { pluralize } from './format.js';
import { sanitizeLine } from './sanitize.js';

type Counted = Pick<MatrixCell, 'from' | 'to' | 'state'>;

export interface RailCount {
  /** The rail's NIC number, or undefined for the cells between different NICs. */
  readonly rail: number | undefined;
  readonly total: number;
  readonly passed: number;
  readonly failed: number;
}

/** Per rail (NIC n → NIC n, in NIC order), then the cells across rails if the matrix has any. */
export function railCounts(cells: readonly Counted[]): RailCount[] {
  const rails = new Map<number | undefined, { total: number; passed: number; failed: number }>();
  for (const c of cells) {
    const rail = c.from.nic === c.to.nic ? c.from.nic : undefined;
    const count = rails.get(rail) ?? { total: 0, passed: 0, failed: 0 };
    count.total++;
    if (c.state === 'passed') count.passed++;
    if (c.state === 'failed') count.failed++;
    rails.set(rail, count);
  }
  return [...rails]
    .map(([rail, count]) => ({ rail, ...count }))
    .sort((a, b) => (a.rail ?? Infinity) - (b.rail ?? Infinity));
}

/**
 * `by rail (NIC n → NIC n): 1 6/6 · 2 0/6 · … · across rails 0/336 passed` — for multi-rail hosts
 * (more than the seeds' two NICs), as the live view's rail grid.
 */
export function formatRailsText(cells: readonly Counted[]): string | undefined {
  const counts = railCounts(cells);
  if (!counts.some((c) => c.rail !== undefined && c.rail > 2)) return undefined;
  const parts = counts.map((c) => `${c.rail === undefined ? 'across rails' : c.rail} ${c.passed}/${c.total}`);
  return `by rail (NIC n → NIC n): ${parts.join(' · ')} passed`;
}

/** Which matrix ran and, when verify chose it, why: `matrix: rail — the full matrix would be …`. */
export function formatMatrixStartText(start: MatrixStart | undefined): string | undefined {
  if (!start || (start.mode === 'full' && !start.reason)) return undefined;
  const what =
    start.mode === 'rail'
      ? 'rail (NIC n to NIC n of every other host)'
      : start.mode === 'ring'
        ? 'ring (each host to the next, every NIC pair)'
        : 'full';
  return `matrix: ${what}${start.reason ? ` — ${start.reason}` : ''}`;
}

export interface CauseGroup {
  readonly kind: CellCauseKind | 'unexplained';
  /** Failing cells this cause explains (a cell with causes at both ends counts once per kind). */
  readonly cells: number;
  /** The ends where it was found, one each, in host and NIC order. */
  readonly causes: readonly CellCause[];
}

const KIND_WORDS: Readonly<Record<CellCauseKind, string>> = {
  'routing-missing': 'no per-NIC routing',
  'port-not-active': 'RDMA port not ACTIVE',
  'no-subnet-manager': 'no subnet manager on the port',
  'link-down': 'interface down',
  'no-carrier': 'no carrier',
  'no-interface': 'no such interface',
  'no-rdma': 'no RDMA device',
  'other-nic': 'traffic leaves through another NIC',
  'no-route': "no route from the NIC's address",
  'timed-out': 'time limit (--timeout) ran out',
  unreachable: 'host unreachable',
  'arp-flux': 'ARP flux (another NIC answers for the address)',
  'address-conflict': 'address answered by a MAC of no NIC of the host',
  'neighbour-failed': 'address did not resolve (ARP)',
  'unexpected-source': 'reply from another address',
  'no-reply': 'no reply while route and neighbour are right',
};

/**
 * The failed cells folded by cause kind, the kind that explains most first; cells nothing explains
 * last. Nothing when no cell's cause is known: then each cell's own detail is all there is to say.
 */
export function causeGroups(cells: readonly Pick<MatrixCell, 'state' | 'causes'>[]): CauseGroup[] {
  const groups = new Map<CauseGroup['kind'], { cells: number; causes: Map<string, CellCause> }>();
  for (const cell of cells) {
    if (cell.state !== 'failed') continue;
    const kinds = new Set<CauseGroup['kind']>();
    for (const cause of cell.causes ?? []) {
      const group = groups.get(cause.kind) ?? { cells: 0, causes: new Map() };
      group.causes.set(`${cause.host}/${cause.iface ?? ''}`, cause);
      groups.set(cause.kind, group);
      kinds.add(cause.kind);
    }
    if (kinds.size === 0) kinds.add('unexplained');
    for (const kind of kinds) {
      const group = groups.get(kind) ?? { cells: 0, causes: new Map() };
      group.cells++;
      groups.set(kind, group);
    }
  }
  const rank = (kind: CauseGroup['kind']) => (kind === 'unexplained' ? 1 : 0);
  if ([...groups.keys()].every((kind) => kind === 'unexplained')) return [];
  return [...groups]
    .map(([kind, g]) => ({
      kind,
      cells: g.cells,
      causes: [...g.causes.values()].sort((a, b) => a.host - b.host || (a.iface ?? '').localeCompare(b.iface ?? '')),
    }))
    .sort((a, b) => rank(a.kind) - rank(b.kind) || b.cells - a.cells);
}

/**
 * One line per group: a cause found at one end is said whole (`42 cells: 34/ibp75s0: port mlx5_2/1
 * is DOWN (Disabled)`); one found at many is named by its kind and where (`378 cells: no per-NIC
 * routing on 24 NICs — ibfleet deploy -i fleet.yaml --hosts 16,34,40`, `inventory` the run's, as a
 * cell's own cause says it).
 */
export function formatCauseGroupText(group: CauseGroup, inventory?: string): string {
  const count = pluralize(group.cells, 'cell');
  if (group.kind === 'unexplained')
    return `${count}: nothing in the hosts' state explains ${group.cells === 1 ? 'it' : 'them'} (each cell's detail says what its tool saw)`;
  if (group.causes.length === 1) return `${count}: ${sanitizeLine(group.causes[0]!.text)}`;
  const hosts = foldHosts([...new Set(group.causes.map((c) => c.host))]);
  const nics = group.causes.filter((c) => c.iface !== undefined);
  // The fix names the hosts, so the NICs need not (the line stays within 80 columns).
  const fix =
    group.kind === 'routing-missing' || group.kind === 'arp-flux' ? ` — ${deployCommand(hosts, inventory)}` : '';
  const where =
    nics.length === 0
      ? `hosts ${hosts}`
      : nics.length <= 3
        ? nics.map((c) => `${c.host}/${c.iface}`).join(', ')
        : fix
          ? `${nics.length} NICs`
          : `${nics.length} NICs on ${hosts}`;
  return `${count}: ${KIND_WORDS[group.kind]} on ${where}${fix}`;
}

/**
 * Cells that could not run because one of their hosts could not be reached, one line per such
 * host: `not run: 16 cells — host 40 unreachable at connect: connection refused by …` (the cells
 * themselves are not listed: each would say the same).
 */
export function unreachableCellLines(cells: readonly Pick<MatrixCell, 'state' | 'causes'>[]): string[] {
  const groups = new Map<string, number>();
  for (const cell of cells) {
    const cause = cell.state === 'not-run' ? cell.causes?.find((c) => c.kind === 'unreachable') : undefined;
    if (cause) groups.set(cause.text, (groups.get(cause.text) ?? 0) + 1);
  }
  return [...groups].map(([text, count]) => `not run: ${pluralize(count, 'cell')} — ${sanitizeLine(text)}`);
}

/** Whether a cell is one unreachableCellLines folds (displays do not list it on its own). */
export function notRunForUnreachable(cell: Pick<MatrixCell, 'state' | 'causes'>): boolean {
  return cell.state === 'not-run' && cell.causes?.some((c) => c.kind === 'unreachable') === true;
}
