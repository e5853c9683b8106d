/**
 * verify: the NIC-to-NIC matrix. One SSH connection per host for the whole run (an rping cell needs
 * its server on one host while its client runs on another): the hosts connect through the fan-out
 * (runHosts), then the matrix runs over their sessions, each host under the one deadline it started
 * with. Ping cells run on their source host in parallel batches and stream back cell by cell; rping
 * cells start their servers on the destination host, then the clients on the sources, each on its
 * own port.
 */
import pLimit from 'p-limit';
import type { Fleet, Host } from '../inventory/model.js';
import { cellCauses, explainFailure } from '../plan/cell-causes.js';
import { parseProbe, type HostFacts } from '../plan/facts.js';
import { cellKey, chooseCells, finishCell, notRunCell, parsePing, rpingCellVerdict, sourceVerdict, type MatrixMode, type RpingMode } from '../plan/matrix.js';
import { CellStream, parseCapabilities, parseCellOutput, rpingUnavailable, type Capabilities, type CellOutput } from '../plan/verify-output.js';
import { RPING_BASE_PORT } from '../render/verify-commands.js';
import { READY_MARK, renderCapabilityScript, renderPingScript, renderRpingClientScript, renderRpingServerScript } from '../render/verify-scripts.js';
import { hostRef, type CellSpec, type HostResult, type MatrixCell, type RunEvents } from '../vocabulary.js';
import { Deadlines, runHosts, type Deadline } from './fanout.js';
import { requireWhole, type Session, type Transport } from './transport.js';

export interface VerifyOptions {
  /** The inventory the hosts come from: a failed cell is explained from its NICs' derived state. */
  readonly fleet: Fleet;
  readonly hosts: readonly Host[];
  readonly mode: MatrixMode;
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
  /** Its one deadline, running on from the connect phase through every cell it takes part in. */
  readonly deadline: Deadline | undefined;
}

export async function runVerify(options: VerifyOptions): Promise<{ results: HostResult[]; cells: MatrixCell[] }> {
  const now = options.now ?? Date.now;
  const deadlines = new Deadlines(options.timeoutMs, options.interrupt);
  const sessions = new Map<number, { session: Session; caps?: Capabilities; facts?: HostFacts }>();
  try {
    // Hosts end (onHostDone) only once their cells have: the connect phase reports starts and stages.
    const events: RunEvents = { onHostStart: (h, at) => options.events.onHostStart?.(h, at), onStage: (h, stage, at) => options.events.onStage?.(h, stage, at) };
    const reached = await runHosts(options.hosts, { concurrency: options.concurrency, timeoutMs: options.timeoutMs, interrupt: options.interrupt, events, now, deadlines }, async (task) => {
      task.stage('connect');
      const session = await options.transport.connect(task.host, task.signal);
      sessions.set(task.host.id, { session });
      task.stage('probe');
      const result = requireWhole('probe', 'the capability check', await session.run(renderCapabilityScript(task.host, options.fleet), { signal: task.signal }));
      sessions.set(task.host.id, { session, caps: parseCapabilities(result.stdout), facts: parseProbe(result.stdout) });
      return { status: 'ok', reasons: [] };
    });
    const connected = new Map<number, Connected>(
      reached.map((r) => {
        const host = options.hosts.find((h) => h.id === r.host.id)!;
        const reachedHost = sessions.get(host.id);
        const failure = r.status === 'ok' ? undefined : r;
        return [host.id, { host, session: reachedHost?.session, caps: reachedHost?.caps, facts: reachedHost?.facts, failure, deadline: deadlines.of(host.id) }];
      }),
    );
    const cells = await runMatrix(options, connected);
    return { results: hostResults(options, connected, cells, now), cells };
  } finally {
    deadlines.stopAll();
    for (const { session } of sessions.values()) session.close();
  }
}

/** The cells, run once every host has connected or failed to; streamed to onCell as they end. */
async function runMatrix(options: VerifyOptions, connected: ReadonlyMap<number, Connected>): Promise<MatrixCell[]> {
  const limit = pLimit(options.concurrency);
  const canRping = (id: number) => {
    const caps = connected.get(id)?.caps;
    return caps !== undefined && rpingUnavailable('', caps) === undefined;
  };
  const specs = chooseCells(options.hosts, options.mode, options.rping, canRping);
  options.events.onMatrix?.(specs);
  const done = new Map<string, MatrixCell>();
  const factsOf = (id: number) => connected.get(id)?.facts;
  const finish = (result: MatrixCell) => {
    if (done.has(cellKey(result))) return;
    // A failed cell says why when the hosts' state can tell (a port down, the routing missing).
    const cell = result.ok === false ? { ...result, detail: explainFailure(result.detail, cellCauses(options.fleet, result, factsOf)) } : result;
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
    if (down) return finish(finishCell(spec, { ok: false, detail: `host ${down.host.id} ${down.status}: ${down.error?.message ?? ''}` }));
    if (spec.method === 'rping') {
      const why = rpingUnavailable(spec.from.name, a.caps!) ?? rpingUnavailable(spec.to.name, b.caps!);
      if (why) return finish(finishCell(spec, { ok: null, detail: `skipped: ${why}` }));
    }
    runnable.push({ id, spec });
  });

  await Promise.all([...groupBy(runnable.filter((c) => c.spec.method === 'ping'), (c) => c.spec.from.host)].map(([source, cells]) => limit(() => pingFrom(connected.get(source)!, cells, options, finish))));
  const rpingCells = runnable.filter((c) => c.spec.method === 'rping');
  await Promise.all([...groupBy(rpingCells, (c) => c.spec.to.host)].map(([dest, cells]) => limit(() => rpingInto(dest, cells, connected, options, finish))));

  for (const { spec } of runnable) if (!done.has(cellKey(spec))) finish(options.interrupt.aborted ? notRunCell(spec) : finishCell(spec, { ok: false, detail: 'no result from the host' }));
  return specs.map((s) => done.get(cellKey(s))!);
}

/** Each host's result: how it failed to connect, or how the cells from it went. */
function hostResults(options: VerifyOptions, connected: ReadonlyMap<number, Connected>, cells: readonly MatrixCell[], now: () => number): HostResult[] {
  return options.hosts.map((host): HostResult => {
    const c = connected.get(host.id)!;
    if (c.failure) {
      options.events.onHostDone?.(c.failure);
      return c.failure;
    }
    const result: HostResult = { host: hostRef(host), durationMs: now() - c.deadline!.startedAt, ...sourceVerdict(host, cells), connections: 1, channels: c.session?.channels ?? 0 };
    options.events.onHostDone?.(result);
    return result;
  });
}

function groupBy<T>(items: readonly T[], key: (item: T) => number): Map<number, T[]> {
  const groups = new Map<number, T[]>();
  for (const item of items) groups.set(key(item), [...(groups.get(key(item)) ?? []), item]);
  return groups;
}

async function pingFrom(source: Connected, cells: readonly { id: number; spec: CellSpec }[], options: VerifyOptions, finish: (c: MatrixCell) => void): Promise<void> {
  options.events.onStage?.(hostRef(source.host), 'check', (options.now ?? Date.now)());
  const byId = new Map(cells.map((c) => [c.id, c.spec]));
  const stream = new CellStream((out: CellOutput) => {
    const spec = byId.get(out.id);
    if (spec) finish(finishCell(spec, parsePing(out.output, out.exitCode)));
  });
  try {
    requireWhole('check', 'the ping run', await source.session!.run(renderPingScript(cells.map(({ id, spec }) => ({ id, cell: spec }))), { signal: source.deadline!.signal, onLine: (l) => stream.push(l) }));
  } catch (error) {
    for (const { spec } of cells) finish(options.interrupt.aborted ? notRunCell(spec) : finishCell(spec, { ok: false, detail: `ping on ${source.host.name} failed: ${(error as Error).message}` }));
  }
}

async function rpingInto(
  dest: number,
  cells: readonly { id: number; spec: CellSpec }[],
  connected: ReadonlyMap<number, Connected>,
  options: VerifyOptions,
  finish: (c: MatrixCell) => void,
): Promise<void> {
  const base = options.basePort ?? RPING_BASE_PORT;
  // One port per cell into this host: concurrent servers on one host never collide.
  const withPorts = cells.map((c, i) => ({ id: c.id, cell: c.spec, port: base + i }));
  const server = connected.get(dest)!;
  const stopServers = new AbortController();
  let markReady!: () => void;
  const ready = new Promise<void>((resolve) => (markReady = resolve));
  const serverRun = server.session!.run(renderRpingServerScript(withPorts), {
    signal: AbortSignal.any([server.deadline!.signal, stopServers.signal]),
    onLine: (line) => line === READY_MARK && markReady(),
  });
  serverRun.then(markReady, markReady);
  await ready;

  const clientOutputs = new Map<number, CellOutput>();
  await Promise.all(
    [...groupBy(withPorts, (c) => c.cell.from.host)].map(async ([source, group]) => {
      try {
        const client = connected.get(source)!;
        const result = requireWhole('check', 'the rping client run', await client.session!.run(renderRpingClientScript(group), { signal: client.deadline!.signal }));
        for (const [id, out] of parseCellOutput(result.stdout)) clientOutputs.set(id, out);
      } catch (error) {
        for (const c of group) clientOutputs.set(c.id, { id: c.id, exitCode: null, output: `rping client on host ${source} failed: ${(error as Error).message}` });
      }
    }),
  );
  // Servers whose client never connected would wait out their timeout; the clients are done.
  const serverTimer = setTimeout(() => stopServers.abort(), 3000);
  const serverOutputs = await serverRun.then(
    (r) => parseCellOutput(r.stdout),
    () => new Map<number, CellOutput>(),
  );
  clearTimeout(serverTimer);
  for (const { id, cell, port } of withPorts) {
    const client = clientOutputs.get(id);
    // A client the interrupt stopped (or never started) did not check its cell.
    if (options.interrupt.aborted && (client === undefined || client.exitCode === null)) finish(notRunCell(cell));
    else finish(finishCell(cell, rpingCellVerdict(client, serverOutputs.get(id)?.output), port));
  }
}
