/**
 * The words every layer shares about a run: the hosts it works on (HostRef), the stages a host
 * moves through, how each host ended (HostResult), the verify matrix's cells, the events a run
 * emits and the verdict it comes to. plan/ fills cells, runner/ emits the events, ui/ shows them,
 * cli.ts turns the verdict into an exit code — all import these words from here, downwards.
 * Pure types and the few rules that define them; it depends on the inventory's model alone.
 *
 * The runner never prints: the plain-line logger, `--json`, the Ink TUI and the recording
 * handler in tests are all handlers of RunEvents (ClusterShell's ev_start / ev_hup / ev_close).
 */
import type { Host, Manager } from './inventory/model.js';
import type { Stage } from './stages.js';

/** The commands whose runs a display shows (render only with --diff, which asks the hosts). */
export type CommandName = 'deploy' | 'status' | 'render' | 'rollback' | 'verify' | 'onboard' | 'exec';

/** status and render --diff report each host's state (folded by answer, no per-host rows kept); they change nothing. */
export function reportsHostState(command: CommandName): boolean {
  return command === 'status' || command === 'render';
}

export { STAGES, type Stage } from './stages.js';

/**
 * `not-run`: the host never started, or was stopped before it did its work (Ctrl-C): not a failure of
 * the host, and not a success either; the run as a whole ends as interrupted (exit 130).
 */
export type HostStatus = 'changed' | 'unchanged' | 'planned' | 'failed' | 'unreachable' | 'ok' | 'drift' | 'not-run';

/** Outcome → verdict contribution: these statuses make the run fail. */
export const FAILING_STATUSES: ReadonlySet<HostStatus> = new Set(['failed', 'unreachable', 'drift']);

export interface HostRef {
  readonly id: number;
  readonly name: string;
  /** The SSH target as given (address or name). */
  readonly target: string;
  /** Its fabric NICs: displays read a plan's texts with them (hosts alike but for their addresses fold together). */
  readonly nics?: readonly NicRef[];
}

export interface NicRef {
  readonly index: number;
  readonly iface: string;
  readonly address: string;
}

export function hostRef(host: Host): HostRef {
  return {
    id: host.id,
    name: host.name,
    target: host.target,
    nics: host.nics.map((n) => ({ index: n.index, iface: n.iface, address: n.address })),
  };
}

/** What a run is, as its displays, its log and its JSON document head it. */
export interface RunHeader {
  /** What the user ran. */
  readonly command: CommandName;
  readonly inventory: string;
  readonly playbook?: string;
  readonly dryRun?: boolean;
  /** --dry-run --show-scripts: displays show each host's exact script, not only the plan. */
  readonly showScripts?: boolean;
  /** status --diff, render --diff: displays show each differing file as a diff. */
  readonly diff?: boolean;
}

/** A run's start event: its header, and the hosts, concurrency and time it starts with. */
export interface RunStart extends RunHeader {
  readonly hosts: readonly HostRef[];
  readonly concurrency: number;
  /** Epoch milliseconds. */
  readonly startedAt: number;
}

export interface HostFailure {
  readonly stage: Stage;
  /** One line: what went wrong and, where possible, what to do. */
  readonly message: string;
  /** The last lines of the remote command's output, if any. */
  readonly stderrTail: string;
  readonly exitCode?: number;
}

/**
 * What a change touches. Displays summarise a host's changes by kind (`+2 rules +2 table routes
 * −2 main routes, hook installed`) and fold hosts whose plans are alike; a kind they do not know
 * is still counted, so new kinds of change slot in without touching the displays.
 */
/** A kind of change, named by the step that makes it (src/steps: `rule`, `table-route`, `hook`, …, with the words displays use). */
export type ChangeKind = string;
export type ChangeAction = 'add' | 'remove' | 'replace' | 'set' | 'reset' | 'install' | 'start' | 'reorder';

export interface Change {
  readonly kind: ChangeKind;
  readonly action: ChangeAction;
  /** What it applies to: an interface (`ib1`) or a path. */
  readonly subject: string;
  /** One line, e.g. `ib1: rule 942: from 172.16.34.2 lookup 942`. */
  readonly text: string;
}

/** One of ibfleet's files that differs on a host from what deploy would install (`status --diff`). */
export interface FileDiff {
  readonly path: string;
  /** missing: not on the host; differs: other content; mode: same content, other mode or owner. */
  readonly state: 'missing' | 'differs' | 'mode';
  /** A unified diff from the host's copy to the rendered one (or, for mode, one line). */
  readonly diff: string;
}

export interface Check {
  readonly name: string;
  readonly ok: boolean;
  readonly detail: string;
}

/**
 * What the probe found about one fabric NIC's RDMA side (what status reads of the fabric's ports): the
 * device and port behind the interface (ibdev2netdev), the port's attributes as ibstat shows them,
 * the IPoIB mode and MTU. null where the host has nothing to read (no RDMA device, not IPoIB).
 */
export interface NicFabric {
  readonly nic: number;
  readonly iface: string;
  readonly device: string | null;
  readonly port: number | null;
  /** `ACTIVE`, `DOWN`, `INIT`, `ARMED`. */
  readonly state: string | null;
  /** `LinkUp`, `Polling`, `Disabled`, … */
  readonly physState: string | null;
  /** `100 Gb/sec (4X EDR)`. */
  readonly rate: string | null;
  /** `InfiniBand` or `Ethernet` (RoCE). */
  readonly linkLayer: string | null;
  readonly lid: number | null;
  readonly smLid: number | null;
  /** IPoIB `datagram` or `connected`. */
  readonly mode: string | null;
  readonly mtu: number | null;
  /** The interface is administratively up. */
  readonly up: boolean;
  /** Ethernet link layer: index of the RoCE v2 GID carrying the NIC's address, or null. */
  readonly roceV2Gid: number | null;
  /** Ethernet link layer: every GID entry in use (index, GID, `RoCE v2` / `IB/RoCE v1`); null on InfiniBand. */
  readonly gids?: readonly { readonly index: number; readonly gid: string; readonly type: string }[] | null;
  /** InfiniBand: the subnet prefix the subnet manager gave the port (GID 0's upper half), or null. */
  readonly subnetPrefix?: string | null;
  /** InfiniBand: the P_Keys in the port's table (`0xffff`, `0x8002`), or null. */
  readonly pkeys?: readonly string[] | null;
}

export interface HostResult {
  readonly host: HostRef;
  readonly status: HostStatus;
  readonly manager?: Manager;
  /** e.g. "Ubuntu 18.04.3 LTS". */
  readonly os?: string;
  readonly durationMs: number;
  /**
   * One-line reasons: for deploy the changes made or planned, for status the drift found,
   * for failures a copy of error.message.
   */
  readonly reasons: readonly string[];
  /** deploy and rollback: the changes made or planned, each with its kind (their texts are among `reasons`). */
  readonly changes?: readonly Change[];
  readonly error?: HostFailure;
  /** status --diff: each of ibfleet's files that differs from what deploy would install. */
  readonly diffs?: readonly FileDiff[];
  /** Things worth knowing that do not make the host fail (status: a degraded link, a small neighbour table). */
  readonly warnings?: readonly string[];
  /** Status: each fabric NIC's RDMA device and port (empty with `fabric.rdma: false`). */
  readonly fabric?: readonly NicFabric[];
  /** Checks run on the host after apply (deploy) or during status. */
  readonly checks?: readonly Check[];
  /** Status: none of ibfleet's files is on the host — it was never deployed (or rolled back), and deploy is the fix. */
  readonly notDeployed?: boolean;
  /** For --dry-run: the exact files and commands that would run. */
  readonly planText?: string;
  /** exec: what the admin's command printed and how it exited. */
  readonly exec?: ExecOutput;
  /** verify: what ran this host's ping cells. */
  readonly prober?: ProberKind;
  /** SSH connections and channels this host used (the benchmark counts them). */
  readonly connections?: number;
  readonly channels?: number;
}

/** What `ibfleet exec` kept of one host's command: each stream's last EXEC_OUTPUT_MAX characters, and how much went before. */
export interface ExecOutput {
  /** null: killed by a signal (`signal` says which). */
  readonly exitCode: number | null;
  readonly signal?: string;
  readonly stdout: string;
  readonly stderr: string;
  /** Characters cut from the start of a stream; `more: true` when the host printed more than ibfleet reads at all. */
  readonly cut?: { readonly stdout?: number; readonly stderr?: number; readonly more?: boolean };
}

/** One end of a matrix cell: a NIC of a host. */
export interface CellEnd {
  readonly host: number;
  readonly name: string;
  readonly nic: number;
  readonly iface: string;
  readonly ip: string;
}

export type CellMethod = 'ping' | 'rping';

/**
 * What ran a host's ping cells, best first: python3 with raw ICMP sockets (host/ibfleet-probe.py),
 * fping, or ping processes in batches. The same cells and verdicts whichever ran.
 */
export type ProberKind = 'python3' | 'fping' | 'ping';

/**
 * Which NIC pairs a verify run checks: every pair (full), each host to the next (ring), or NIC n to
 * NIC n of every other host (rail). src/plan/matrix.ts builds the cells.
 */
export type MatrixMode = 'full' | 'ring' | 'rail';

/** The matrix a verify run is about to fill (onMatrix): its mode, and why when verify chose it. */
export interface MatrixStart {
  readonly mode: MatrixMode;
  /** Set when no mode was asked for and the full matrix was too large: what was left out, and how to get it. */
  readonly reason?: string;
}

/**
 * What the hosts' own state says about a failed cell, at one of its ends: a port that is not ACTIVE,
 * an interface down, the per-NIC routing missing, traffic leaving through another NIC, no route, a
 * host whose time ran out. Displays fold failing cells by these (`378 cells: no per-NIC routing on
 * 24 NICs — ibfleet deploy -i fleet.yaml --hosts 16,34,40`), deciding on the kind, never on the text.
 */
export const CELL_CAUSE_KINDS = [
  'no-interface',
  'link-down',
  'no-carrier',
  'no-rdma',
  'port-not-active',
  'no-subnet-manager',
  'routing-missing',
  'other-nic',
  'no-route',
  'timed-out',
  'unreachable',
  'arp-flux',
  'address-conflict',
  'neighbour-failed',
  'unexpected-source',
  'no-reply',
] as const;
export type CellCauseKind = (typeof CELL_CAUSE_KINDS)[number];

export interface CellCause {
  readonly kind: CellCauseKind;
  readonly host: number;
  /** The NIC's interface at that end; absent for a host-wide cause (its time limit). */
  readonly iface?: string;
  /** One line: `34/ib1: port mlx5_1/1 is DOWN (Disabled)`. */
  readonly text: string;
}

/** A cell of the verify matrix before it is checked: from which NIC, to which, how. */
export interface CellSpec {
  readonly from: CellEnd;
  readonly to: CellEnd;
  readonly method: CellMethod;
}

/** How a cell ended; `not-run`: the run was interrupted before the cell was checked, or one of its hosts could not be reached. */
export type CellState = 'passed' | 'failed' | 'skipped' | 'not-run';

export interface MatrixCell extends CellSpec {
  /** true passed, false failed, null skipped (e.g. no RDMA device) or not run — never counted as passed. */
  readonly ok: boolean | null;
  readonly state: CellState;
  /** "3/3 replies, 0.05 ms", "REJECTED", "skipped: no RDMA device on host 34". */
  readonly detail: string;
  /** The exact command(s) to run by hand to see this cell's result. */
  readonly reproduce: string;
  /** A failed cell: what the hosts' state says about it, the source end first (also in `detail`, `— likely: …`). */
  readonly causes?: readonly CellCause[];
}

export interface RunEnd {
  readonly results: readonly HostResult[];
  readonly cells: readonly MatrixCell[];
  /** Verify: which matrix ran, and why when verify chose it. */
  readonly matrix?: MatrixStart;
  /** Findings about the selected hosts together (status: odd IPoIB modes, ports below the fleet's rate). */
  readonly warnings?: readonly string[];
  /** What the selected hosts together cannot do (ports in another IB subnet): the run fails. */
  readonly problems?: readonly string[];
  readonly durationMs: number;
  readonly interrupted: boolean;
}

/** All optional: a handler implements what it needs. */
export interface RunEvents {
  onRunStart?(event: RunStart): void;
  onHostStart?(host: HostRef, at: number): void;
  onStage?(host: HostRef, stage: Stage, at: number): void;
  /** What was sent to a host or what it printed, for the run log (`apply script`, `apply output`). */
  onOutput?(host: HostRef, label: string, text: string): void;
  onHostDone?(result: HostResult): void;
  /** Verify: the cells of the matrix to be filled, once, before any onCell; and which matrix it is. */
  onMatrix?(cells: readonly CellSpec[], start?: MatrixStart): void;
  onCell?(cell: MatrixCell): void;
  onRunEnd?(event: RunEnd): void;
}

/** A display of one run: its event handlers, and what to do once the run has ended (print the JSON document, draw the last frame). */
export interface RunDisplay {
  readonly events: RunEvents;
  finish(end: RunEnd): Promise<void>;
}

/**
 * How a command ended, as the exit code will say it (src/cli.ts maps it): ok, something on a host
 * or in the matrix failed, the request was refused before anything changed, or the user stopped it.
 */
export type RunVerdict = 'ok' | 'failed' | 'refused' | 'interrupted';

/** Every host ended well and no cell failed (skipped cells are not failures). */
export function runPassed(
  results: readonly Pick<HostResult, 'status'>[],
  cells: readonly Pick<MatrixCell, 'ok'>[] = [],
): boolean {
  return results.every((r) => !FAILING_STATUSES.has(r.status)) && cells.every((c) => c.ok !== false);
}

export function runVerdict(end: Pick<RunEnd, 'results' | 'cells' | 'interrupted' | 'problems'>): RunVerdict {
  if (end.interrupted) return 'interrupted';
  return runPassed(end.results, end.cells) && !end.problems?.length ? 'ok' : 'failed';
}
