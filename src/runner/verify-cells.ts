/**
 * verify's cells on the hosts, once they have connected: each source's ping cells in one run of the
 * best prober it has, streamed back and held for the neighbour table that judges them; the rping
 * cells in batches, servers on the destination before clients on the sources, no host running more
 * than RPING_ENDS_PER_HOST rping processes at once and none left running when a connection closes.
 * Every cell ends through the `finish` it is given; what a cell's verdict means is verify.ts's.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PACKAGE_ROOT } from '../package-root.js';
import { clipHostText } from '../host-text.js';
import type { Host } from '../inventory/model.js';
import type { CellEvidence } from '../plan/cell-causes.js';
import type { HostFacts } from '../facts/host-facts.js';
import { finishCell, notRunCell, rpingCellVerdict } from '../plan/matrix.js';
import {
  ProbeStream,
  chooseProber,
  parseCellOutput,
  type Capabilities,
  type CellOutput,
  type NeighbourEntry,
  type ProbeOutcome,
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
  renderPingScript,
  renderRpingClientScript,
  renderRpingServerScript,
} from '../render/verify-scripts.js';
import { hostRef, type CellSpec, type HostResult, type MatrixCell, type ProberKind } from '../vocabulary.js';
import type { Deadline } from './fanout.js';
import { HostSlots } from './host-slots.js';
import { requireWhole, type ExecResult, type Session } from './transport.js';
import type { VerifyOptions } from './verify-options.js';

/** A host after the connect phase: its session and what it can check, or how it failed. */
export interface Connected {
  readonly host: Host;
  readonly session: Session | undefined;
  readonly caps: Capabilities | undefined;
  /** What the host's probe found as it connected (links, rules, tables, RDMA ports). */
  readonly facts: HostFacts | undefined;
  readonly failure: HostResult | undefined;
  /** Its one deadline, from the connect phase through every cell it takes part in (see Deadline). */
  readonly deadline: Deadline | undefined;
}

/**
 * Every host's prober at once, not --concurrency at a time: each is one process on a session already
 * open, and most of its run is waiting on answers — in waves, the waits would add up (100 GPU nodes'
 * rails: 69 s at 32 a time, 25 s all at once, on this 2-core machine under load).
 */
export async function runPingCells(
  cells: readonly { id: number; spec: CellSpec }[],
  connected: ReadonlyMap<number, Connected>,
  options: VerifyOptions,
  finish: (c: MatrixCell, evidence?: CellEvidence) => void,
): Promise<void> {
  await Promise.all(
    [...groupBy(cells, (c) => c.spec.from.host)].map(([source, from]) =>
      pingFrom(connected.get(source)!, from, options, finish),
    ),
  );
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
export function proberOf(host: Connected): ProberKind {
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
export async function runRpingCells(
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

  const clientOutputs = await runRpingClients(dest, batch, ports, connected);
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

/**
 * A batch's clients, each source's in one conversation, all sources at once; what each cell's client
 * printed, or why it never ran (no server listened for it, its host's run failed).
 */
async function runRpingClients(
  dest: number,
  batch: readonly { id: number; cell: CellSpec; port: number }[],
  ports: ReadonlyMap<number, number>,
  connected: ReadonlyMap<number, Connected>,
): Promise<Map<number, CellOutput>> {
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
  return clientOutputs;
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
