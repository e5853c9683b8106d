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
 * This module connects the hosts, chooses and judges the cells, and gives each host its result;
 * running the cells on the hosts is verify-cells.ts's.
 */
import { clipHostText } from '../host-text.js';
import type { Fleet } from '../inventory/model.js';
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
import { cellKey, chooseCells, finishCell, notRunCell, hostVerdict } from '../plan/matrix.js';
import { parseCapabilities, rpingUnavailable, type Capabilities } from '../plan/verify-output.js';
import { renderCapabilityScript } from '../render/verify-scripts.js';
import {
  hostRef,
  type CellCause,
  type CellSpec,
  type HostResult,
  type MatrixCell,
  type MatrixStart,
  type RunEvents,
} from '../vocabulary.js';
import { Deadlines, runHosts, timeLimitText } from './fanout.js';
import { requireWhole, type Session } from './transport.js';
import { proberOf, runPingCells, runRpingCells, type Connected } from './verify-cells.js';
import type { VerifyOptions } from './verify-options.js';

export type { VerifyOptions } from './verify-options.js';

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
  // A host that could not be reached may well have rping: its rping cells are listed, and end not run
  // as its ping cells do — left out, they would shrink the matrix (`96/128 passed` for 160 cells).
  const canRping = (id: number) => {
    const host = connected.get(id);
    if (host?.failure) return true;
    return host?.caps !== undefined && rpingUnavailable('', host.caps) === undefined;
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

  await runPingCells(
    runnable.filter((c) => c.spec.method === 'ping'),
    connected,
    options,
    finish,
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
