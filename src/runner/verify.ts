/**
 * verify: the NIC-to-NIC matrix. One SSH connection per host for the whole run (an rping cell needs
 * its server on one host while its client runs on another): the hosts connect through the fan-out
 * (runHosts), then the matrix runs over their sessions, each host under the one deadline it started
 * with: in the matrix it runs while the host owes an answer and starts over with each part the host
 * finishes (a dead host is cut off within --timeout; a large matrix that keeps going is not). A
 * host's ping cells run in one run of the best prober it has (python3, fping, ping) and stream back
 * as they end, each judged with the source's neighbour table (ARP flux fails a cell whose echoes
 * came back); rping cells
 * start their servers on the destination host, then the clients on the sources, each on its own
 * port, in batches as many at once as keeps each host within RPING_ENDS_PER_HOST rping processes.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PACKAGE_ROOT } from '../package-root.js';
import { clipHostText } from '../host-text.js';
import type { Fleet, Host } from '../inventory/model.js';
import {
  cellCauses,
  corroborate,
  explainFailure,
  replyCauses,
  wrongPathCauses,
  type CellEvidence,
} from '../plan/cell-causes.js';
import type { HostFacts } from '../facts/host-facts.js';
import { readProbe } from '../plan/change-output.js';
import { verifyFabricFindings } from '../steps/fabric-health/consistency.js';
import {
  cellKey,
  chooseCells,
  finishCell,
  notRunCell,
  rpingCellVerdict,
  hostVerdict,
  type MatrixMode,
  type RpingMode,
} from '../plan/matrix.js';
import {
  ProbeStream,
  chooseProber,
  parseCapabilities,
  type NeighbourEntry,
  type ProbeOutcome,
  parseCellOutput,
  rpingUnavailable,
  type Capabilities,
  type CellOutput,
} from '../plan/verify-output.js';
import { RPING_BASE_PORT } from '../render/verify-commands.js';
import {
  CLIENTS_DONE_MARK,
  PORT_MARK,
  READY_MARK,
  RPING_BATCH,
  RPING_ENDS_PER_HOST,
  RPING_SERVER_SECONDS,
  STOP_SERVERS,
  renderCapabilityScript,
  renderPingScript,
  renderRpingClientScript,
  renderRpingServerScript,
} from '../render/verify-scripts.js';
import {
  hostRef,
  type CellCause,
  type CellSpec,
  type HostResult,
  type MatrixCell,
  type MatrixStart,
  type ProberKind,
  type RunEvents,
} from '../vocabulary.js';
import { Deadlines, runHosts, timeLimitText, type Deadline } from './fanout.js';
import { HostSlots } from './host-slots.js';
import { requireWhole, type ExecResult, type Session, type Transport } from './transport.js';

export interface VerifyOptions {
  /** The inventory the hosts come from: a failed cell is explained from its NICs' derived state. */
  readonly fleet: Fleet;
  readonly hosts: readonly Host[];
  readonly mode: MatrixMode;
  /** Why verify chose `mode` when none was asked for (chooseMatrixMode); shown with the matrix. */
  readonly modeReason?: string;
  readonly rping: RpingMode;
  readonly transport: Transport;
  readonly concurrency: number;
  readonly timeoutMs: number;
  readonly interrupt: AbortSignal;
  readonly events: RunEvents;
  readonly basePort?: number;
  readonly now?: () => number;
}

/** A host after the connect phase: its session and what it can check, or how it failed. */
interface Connected {
  readonly host: Host;
  readonly session: Session | undefined;
  readonly caps: Capabilities | undefined;
  /** What the host's probe found as it connected (links, rules, tables, RDMA ports). */
  readonly facts: HostFacts | undefined;
  readonly failure: HostResult | undefined;
  /** Its one deadline, from the connect phase through every cell it takes part in (see Deadline). */
  readonly deadline: Deadline | undefined;
}

export async function runVerify(options: VerifyOptions): Promise<{
  results: HostResult[];
  cells: MatrixCell[];
  matrix: MatrixStart;
  warnings: string[];
  problems: string[];
  /** What each host's capability check read (onboard's cheat sheet derives the pair's job settings from it). */
  facts: ReadonlyMap<number, HostFacts>;
}> {
  const now = options.now ?? Date.now;
  const deadlines = new Deadlines(options.timeoutMs, options.interrupt);
  const sessions = new Map<number, { session: Session; caps?: Capabilities; facts?: HostFacts }>();
  try {
    // Hosts end (onHostDone) only once their cells have: the connect phase reports starts and stages.
    const events: RunEvents = {
      onHostStart: (h, at) => options.events.onHostStart?.(h, at),
      onStage: (h, stage, at) => options.events.onStage?.(h, stage, at),
    };
    const reached = await runHosts(
      options.hosts,
      {
        concurrency: options.concurrency,
        timeoutMs: options.timeoutMs,
        interrupt: options.interrupt,
        events,
        now,
        deadlines,
      },
      async (task) => {
        task.stage('connect');
        const session = await options.transport.connect(task.host, task.signal);
        sessions.set(task.host.id, { session });
        task.stage('probe');
        const result = requireWhole(
          'probe',
          'the capability check',
          await session.run(renderCapabilityScript(task.host, options.fleet), { signal: task.signal }),
        );
        sessions.set(task.host.id, {
          session,
          caps: parseCapabilities(result.stdout),
          facts: readProbe(result.stdout),
        });
        // Its time stops until the matrix asks it something: waiting for the other hosts is not silence.
        deadlines.of(task.host.id)?.pause();
        return { status: 'ok', reasons: [] };
      },
    );
    const connected = new Map<number, Connected>(
      reached.map((r) => {
        const host = options.hosts.find((h) => h.id === r.host.id)!;
        const reachedHost = sessions.get(host.id);
        const failure = r.status === 'ok' ? undefined : r;
        return [
          host.id,
          {
            host,
            session: reachedHost?.session,
            caps: reachedHost?.caps,
            facts: reachedHost?.facts,
            failure,
            deadline: deadlines.of(host.id),
          },
        ];
      }),
    );
    // A cause only one host's report shows is charged to that host (corroborate).
    const cells = corroborate(await runMatrix(options, connected));
    // What the hosts' RDMA ports say together: GID indexes that differ, ports in another IB subnet.
    const { warnings, problems } = verifyFabricFindings(options.fleet, options.hosts, (id) => connected.get(id)?.facts);
    const results = hostResults(options, connected, cells, now);
    const facts = new Map([...connected].flatMap(([id, c]) => (c.facts ? [[id, c.facts] as const] : [])));
    return { results, cells, matrix: matrixStart(options), warnings, problems, facts };
  } finally {
    deadlines.stopAll();
    for (const { session } of sessions.values()) session.close();
  }
}

/** The cells, run once every host has connected or failed to; streamed to onCell as they end. */
async function runMatrix(options: VerifyOptions, connected: ReadonlyMap<number, Connected>): Promise<MatrixCell[]> {
  const canRping = (id: number) => {
    const caps = connected.get(id)?.caps;
    return caps !== undefined && rpingUnavailable('', caps) === undefined;
  };
  const specs = chooseCells(options.hosts, options.mode, options.rping, canRping);
  options.events.onMatrix?.(specs, matrixStart(options));
  const done = new Map<string, MatrixCell>();
  const factsOf = (id: number) => connected.get(id)?.facts;
  const finish = (result: MatrixCell, evidence?: CellEvidence) => {
    if (done.has(cellKey(result))) return;
    // A cell answered through the wrong port (ARP flux, the source's traffic leaving by another NIC) fails.
    const wrongPath = result.ok === true && evidence ? wrongPathCauses(options.fleet, result, evidence, factsOf) : [];
    const checked: MatrixCell =
      wrongPath.length > 0
        ? { ...result, ok: false, state: 'failed', detail: `${result.detail}, through the wrong port` }
        : result;
    // A failed cell says why: cut off by an end's time limit, or what the hosts' state tells (a port down, the routing missing).
    const cutOff =
      checked.ok === false
        ? [checked.from.host, checked.to.host].find((id) => connected.get(id)?.deadline?.hardSignal.aborted)
        : undefined;
    const causes: CellCause[] =
      cutOff !== undefined
        ? [{ kind: 'timed-out', host: cutOff, text: timedOut(cutOff, options.timeoutMs) }]
        : wrongPath.length > 0
          ? wrongPath
          : failureCauses(options.fleet, checked, evidence, factsOf);
    const cell =
      checked.ok === false
        ? { ...checked, detail: explainFailure(checked.detail, causes), ...(causes.length > 0 ? { causes } : {}) }
        : checked;
    done.set(cellKey(cell), cell);
    options.events.onCell?.(cell);
  };

  // Cells with an end that could not be reached, or a method the ends cannot do, end right away.
  const runnable: { id: number; spec: CellSpec }[] = [];
  specs.forEach((spec, id) => {
    const a = connected.get(spec.from.host)!;
    const b = connected.get(spec.to.host)!;
    const down = a.failure ?? b.failure;
    if (down?.status === 'not-run') return finish(notRunCell(spec));
    // Not a failure of the cell, nor of the other end: it could not run. Charged to the host that could not be reached.
    if (down) return finish(unreachableCell(spec, down));
    if (spec.method === 'rping') {
      const why = rpingUnavailable(spec.from.name, a.caps!) ?? rpingUnavailable(spec.to.name, b.caps!);
      if (why) return finish(finishCell(spec, { ok: null, detail: `skipped: ${why}` }));
    }
    runnable.push({ id, spec });
  });

  // Every host's prober at once, not --concurrency at a time: each is one process on a session already
  // open, and most of its run is waiting on answers — in waves, the waits would add up (100 GPU nodes'
  // rails: 69 s at 32 a time, 25 s all at once, on this 2-core machine under load).
  await Promise.all(
    [
      ...groupBy(
        runnable.filter((c) => c.spec.method === 'ping'),
        (c) => c.spec.from.host,
      ),
    ].map(([source, cells]) => pingFrom(connected.get(source)!, cells, options, finish)),
  );
  await runRpingCells(
    runnable.filter((c) => c.spec.method === 'rping'),
    connected,
    options,
    finish,
  );

  for (const { spec } of runnable)
    if (!done.has(cellKey(spec)))
      finish(
        options.interrupt.aborted
          ? notRunCell(spec)
          : finishCell(spec, { ok: false, detail: 'no result from the host' }),
      );
  return specs.map((s) => done.get(cellKey(s))!);
}

/** A cell one of whose hosts could not be reached (or failed its probe): not run, the cause that host. */
function unreachableCell(spec: CellSpec, down: HostResult): MatrixCell {
  const text = `host ${down.host.id} ${down.status}${down.error ? ` at ${down.error.stage}` : ''}: ${clipHostText(down.error?.message ?? '')}`;
  return {
    ...finishCell(spec, { ok: null, detail: `not run: ${text}`, notRun: true }),
    causes: [{ kind: 'unreachable', host: down.host.id, text }],
  };
}

function matrixStart(options: Pick<VerifyOptions, 'mode' | 'modeReason'>): MatrixStart {
  return { mode: options.mode, ...(options.modeReason ? { reason: options.modeReason } : {}) };
}

/** A cell cut off by a host's deadline: the host owed an answer and finished nothing for --timeout. */
function timedOut(host: number, timeoutMs: number): string {
  return `host ${host}'s time limit ran out: it finished none of its cells for ${timeLimitText(timeoutMs)} (--timeout)`;
}

/** Each host's result: how it failed to connect, or how the cells from it went. */
function hostResults(
  options: VerifyOptions,
  connected: ReadonlyMap<number, Connected>,
  cells: readonly MatrixCell[],
  now: () => number,
): HostResult[] {
  // Each host's cells, found once: hostVerdict over every cell for every host was 4 s of CPU at 100 × 2 NICs.
  const involving = new Map<number, MatrixCell[]>();
  for (const cell of cells)
    for (const id of cell.from.host === cell.to.host ? [cell.from.host] : [cell.from.host, cell.to.host])
      if (involving.has(id)) involving.get(id)!.push(cell);
      else involving.set(id, [cell]);
  return options.hosts.map((host): HostResult => {
    const c = connected.get(host.id)!;
    if (c.failure) {
      options.events.onHostDone?.(c.failure);
      return c.failure;
    }
    const result: HostResult = {
      host: hostRef(host),
      durationMs: now() - c.deadline!.startedAt,
      ...hostVerdict(host, involving.get(host.id) ?? []),
      ...((involving.get(host.id) ?? []).some((cell) => cell.method === 'ping' && cell.from.host === host.id)
        ? { prober: proberOf(c) }
        : {}),
      connections: 1,
      channels: c.session?.channels ?? 0,
    };
    options.events.onHostDone?.(result);
    return result;
  });
}

function groupBy<T>(items: readonly T[], key: (item: T) => number): Map<number, T[]> {
  const groups = new Map<number, T[]>();
  for (const item of items) {
    const group = groups.get(key(item));
    if (group) group.push(item);
    else groups.set(key(item), [item]);
  }
  return groups;
}

/**
 * Why a failed cell failed: the hosts' state at either end (cellCauses); where that finds nothing,
 * what its probes met (replyCauses); and what the source's neighbours say about the path.
 */
function failureCauses(
  fleet: Fleet,
  cell: MatrixCell,
  evidence: CellEvidence | undefined,
  factsOf: (host: number) => HostFacts | undefined,
): CellCause[] {
  if (cell.ok !== false) return [];
  const found = cellCauses(fleet, cell, factsOf);
  if (found.length > 0 || !evidence) return found;
  const path = wrongPathCauses(fleet, cell, evidence, factsOf);
  return path.length > 0 ? path : replyCauses(cell, evidence, factsOf(cell.from.host));
}

/**
 * The ping cells from one host, in one run of the best prober it has (chooseProber). Results stream
 * in as cells end and are held until the neighbour table the run prints after them (within ~1 s for
 * python3 and fping, after each batch for ping): a cell's verdict needs what its destination
 * resolved to.
 */
async function pingFrom(
  source: Connected,
  cells: readonly { id: number; spec: CellSpec }[],
  options: VerifyOptions,
  finish: (c: MatrixCell, evidence?: CellEvidence) => void,
): Promise<void> {
  options.events.onStage?.(hostRef(source.host), 'check', (options.now ?? Date.now)());
  const prober = proberOf(source);
  const byId = new Map(cells.map((c) => [c.id, c.spec]));
  const bySource = new Map(cells.map((c) => [`${c.spec.from.ip} ${c.spec.to.ip}`, c.id]));
  const held = new Map<number, ProbeOutcome>();
  const release = (neighbours?: readonly NeighbourEntry[]) => {
    for (const [id, outcome] of held)
      finish(finishCell(byId.get(id)!, outcome.verdict), {
        ...(outcome.note ? { note: outcome.note } : {}),
        ...(neighbours ? { neighbours } : {}),
      });
    held.clear();
  };
  // The host's time starts over as its cells come in; a timer re-armed for every line was a tenth of the run's CPU.
  let renewedAt = 0;
  const stream = new ProbeStream(
    (outcome) => {
      const now = Date.now();
      if (now - renewedAt >= 100) {
        renewedAt = now;
        source.deadline!.renew();
      }
      if (byId.has(outcome.id) && !held.has(outcome.id)) held.set(outcome.id, outcome);
    },
    release,
    (from, to) => bySource.get(`${from} ${to}`),
  );
  const owed = source.deadline!.owe();
  try {
    const script = renderPingScript(
      cells.map(({ id, spec }) => ({ id, cell: spec })),
      prober,
      prober === 'python3' ? await probeProgram() : '',
    );
    requireWhole(
      'check',
      `the ${prober} prober run`,
      await source.session!.run(script, { signal: source.deadline!.signal, onLine: (l) => stream.push(l) }),
    );
    release();
  } catch (error) {
    release();
    for (const { spec } of cells)
      finish(
        options.interrupt.aborted
          ? notRunCell(spec)
          : finishCell(spec, {
              ok: false,
              detail: `${prober} on ${source.host.name} failed: ${clipHostText((error as Error).message)}`,
            }),
      );
  } finally {
    owed();
  }
}

/** The prober a connected host runs. */
function proberOf(host: Connected): ProberKind {
  return host.caps ? chooseProber(host.caps) : 'ping';
}

let programText: Promise<string> | undefined;
/** host/ibfleet-probe.py, read once per run. */
function probeProgram(): Promise<string> {
  programText ??= readFile(join(PACKAGE_ROOT, 'host/ibfleet-probe.py'), 'utf8');
  return programText;
}

/** Ports as the server script printed them (`@@rping-port <cell> <port>`). */
function parsePorts(output: string): Map<number, number> {
  const ports = new Map<number, number>();
  for (const m of output.matchAll(new RegExp(`^${PORT_MARK} (\\d+) (\\d+)$`, 'gm')))
    ports.set(Number(m[1]), Number(m[2]));
  return ports;
}

/**
 * The rping cells, in batches of up to RPING_BATCH cells into one host, as many batches at once as
 * every host's bound allows: no host runs more than RPING_ENDS_PER_HOST rping processes at once,
 * servers and clients together. Ports count up from the base, one per cell into a host, so its
 * servers never collide with each other; one taken by something else moves up (the script says
 * where).
 */
async function runRpingCells(
  cells: readonly { id: number; spec: CellSpec }[],
  connected: ReadonlyMap<number, Connected>,
  options: VerifyOptions,
  finish: (c: MatrixCell) => void,
): Promise<void> {
  const base = options.basePort ?? RPING_BASE_PORT;
  const perHost = [...groupBy(cells, (c) => c.spec.to.host)].map(([dest, into]) => {
    const numbered = into.map((c, i) => ({ id: c.id, cell: c.spec, port: base + i }));
    const batches: RpingBatch[] = [];
    for (let i = 0; i < numbered.length; i += RPING_BATCH)
      batches.push({ dest, cells: numbered.slice(i, i + RPING_BATCH) });
    return batches;
  });
  // Every host's first batch first: the earliest batches spread over all the hosts.
  const rounds = Math.max(0, ...perHost.map((b) => b.length));
  const order = Array.from({ length: rounds }, (_, n) => perHost.flatMap((b) => b.slice(n, n + 1))).flat();
  const slots = new HostSlots(RPING_ENDS_PER_HOST);
  await Promise.all(
    order.map((batch) =>
      slots.run(rpingEnds(batch), async () => {
        // Interrupted while it waited: its cells end as not run.
        if (!options.interrupt.aborted) await rpingBatch(batch.dest, batch.cells, connected, options, finish);
      }),
    ),
  );
}

interface RpingBatch {
  readonly dest: number;
  readonly cells: readonly { id: number; cell: CellSpec; port: number }[];
}

/** The rping processes a batch runs on each host: a server per cell on the destination, a client on each source. */
function rpingEnds(batch: RpingBatch): Map<number, number> {
  const ends = new Map<number, number>([[batch.dest, batch.cells.length]]);
  for (const { cell } of batch.cells) ends.set(cell.from.host, (ends.get(cell.from.host) ?? 0) + 1);
  return ends;
}

/**
 * One batch: the servers start on the destination and say their ports; the clients run on their
 * source hosts in parallel; then the servers are told to stop. Both sides run in conversations
 * that hold their input open, so a closed connection — Ctrl-C, a host's timeout, a controller that
 * dies — ends every server and client at once: nothing is left running on a host.
 */
async function rpingBatch(
  dest: number,
  batch: readonly { id: number; cell: CellSpec; port: number }[],
  connected: ReadonlyMap<number, Connected>,
  options: VerifyOptions,
  finish: (c: MatrixCell) => void,
): Promise<void> {
  const server = connected.get(dest)!;
  const session = server.session!;
  const signal = server.deadline!.signal;
  let clientsDone!: () => void;
  const done = new Promise<void>((resolve) => (clientsDone = resolve));
  let announce!: (ports: Map<number, number> | undefined) => void;
  const listening = new Promise<Map<number, number> | undefined>((resolve) => (announce = resolve));
  // The destination owes its servers' start, then waits on the clients (not its silence), then owes their output.
  let owed = server.deadline!.owe();
  let serverEnded = false;
  const serverRun: Promise<ExecResult> = session.converse(
    // A server gone before its client dials reads as REJECTED, the routing failure's own sign:
    // on a loaded host a client may come late, so servers wait as long as the host's time
    // limit; the stop word, or the input closing, ends them as soon as the clients are done.
    renderRpingServerScript(batch, Math.max(RPING_SERVER_SECONDS, Math.ceil(options.timeoutMs / 1000))),
    READY_MARK,
    async (first) => {
      // The servers' start is a part the host finished: its full time again (its own clients may
      // already owe an answer, so releasing alone would leave the clock started before it).
      server.deadline!.renew();
      owed();
      announce(parsePorts(first));
      await done;
      if (!serverEnded) owed = server.deadline!.owe();
      return { script: `${STOP_SERVERS}\n`, options: { signal } };
    },
    { signal },
  );
  serverRun.then(
    () => ((serverEnded = true), server.deadline!.renew(), owed(), announce(undefined)),
    () => ((serverEnded = true), owed(), announce(undefined)),
  );
  // A conversation that ended before READY_MARK started no server: its cells fail without a client.
  const ports = (await listening) ?? new Map<number, number>();

  const clientOutputs = new Map<number, CellOutput>();
  await Promise.all(
    [...groupBy(batch, (c) => c.cell.from.host)].map(async ([source, group]) => {
      const client = connected.get(source)!;
      const withPorts = group.filter((c) => ports.has(c.id)).map((c) => ({ ...c, port: ports.get(c.id)! }));
      for (const c of group)
        if (!ports.has(c.id))
          clientOutputs.set(c.id, { id: c.id, exitCode: null, output: `no rping server listened on host ${dest}` });
      if (withPorts.length === 0) return;
      const clientOwed = client.deadline!.owe();
      try {
        const result = requireWhole(
          'check',
          'the rping client run',
          await client.session!.converse(renderRpingClientScript(withPorts), CLIENTS_DONE_MARK, () => undefined, {
            signal: client.deadline!.signal,
          }),
        );
        client.deadline!.renew();
        // The clients' frames come before CLIENTS_DONE_MARK; a script cut short never said it.
        const output = result.first ?? result.stdout;
        for (const [id, out] of parseCellOutput(output)) clientOutputs.set(id, out);
      } catch (error) {
        for (const c of withPorts)
          clientOutputs.set(c.id, {
            id: c.id,
            exitCode: null,
            output: `rping client on host ${source} failed: ${(error as Error).message}`,
          });
      } finally {
        clientOwed();
      }
    }),
  );
  clientsDone();
  const serverOutputs = await serverRun.then(
    (r) => parseCellOutput(r.stdout),
    () => new Map<number, CellOutput>(),
  );
  for (const { id, cell } of batch) {
    const client = clientOutputs.get(id);
    // A client the interrupt stopped (or never started) did not check its cell.
    if (options.interrupt.aborted && (client === undefined || client.exitCode === null)) finish(notRunCell(cell));
    else finish(finishCell(cell, rpingCellVerdict(client, serverOutputs.get(id)?.output), ports.get(id)));
  }
}
