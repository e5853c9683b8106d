/**
 * Scripts verify runs on hosts. A host's ping cells run in one script of the prober it has: python3
 * (host/ibfleet-probe.py, sent in the script), fping per source address, or ping processes in
 * parallel batches, each job writing its output to its own file and the batch printed between
 * markers, so parallel output never interleaves; each ends with the host's neighbour table. rping
 * servers and clients run as batches too. Pure string builders; their output is read by
 * src/plan/verify-output.ts.
 */
import type { Fleet, Host } from '../inventory/model.js';
import type { CellSpec } from '../vocabulary.js';
import { renderProbeBody } from './probe-script.js';
import { hostScript } from '../script/host-functions.js';
import { sentShell } from '../script/sent-shell.js';
import { receivedWhole, shellCommand, shellQuote } from '../script/shell.js';
import type { ProberKind } from '../vocabulary.js';
import {
  PING_COUNT,
  PING_GAP_MS,
  PING_WAIT_MS,
  fpingArgv,
  pingArgv,
  rpingClientArgv,
  rpingServerArgv,
} from './verify-commands.js';

export const CELL_MARK = '@@cell';
export const CELL_END_MARK = '@@cell-end';
export const READY_MARK = '@@rping-ready';
/**
 * rping processes a host runs at once, servers and clients together. Each is an RDMA CM connection
 * (address and route resolution, then the CM's REQ/REP/RTU handshake) and a queue pair; the CM
 * answers a burst in turn, and rping gives resolution 2 s: a host handed hundreds at once (as when
 * every destination's batch put its first clients on the same few sources) reads slow answers as
 * UNREACHABLE or ADDR_ERROR cells that are not the fabric's fault. Eight also keeps the
 * conversations one host is in (at least one rping a conversation) within the eight channels a
 * session opens at once (ssh-session.ts, under sshd's MaxSessions 10): no conversation queues for
 * a channel while a peer waits on it.
 */
export const RPING_ENDS_PER_HOST = 8;
/** rping cells into one host per batch: half a host's bound, so a host serves one batch while it is a client in another. */
export const RPING_BATCH = RPING_ENDS_PER_HOST / 2;
/** rping has no timeout of its own; a server nobody connects to is ended after this long. */
export const RPING_SERVER_SECONDS = 20;
export const RPING_CLIENT_SECONDS = 15;

/**
 * python3 as verify runs it: isolated (no PYTHONPATH, PYTHONHOME or user site of the login's
 * environment changes what the prober imports) and without the site module, which a program of the
 * standard library alone never needs. What it saves depends on the host's site-packages: 51 → 24 ms
 * of CPU a start for a python3 with a .pth to run, 20 → 19 ms for the lab hosts' Debian python3.
 * (host/sent/capabilities.sh runs it so too.)
 */
const PYTHON3 = 'python3 -I -S';

/** $dir, removed when the script ends, and job/show (host/sent/verify.sh). */
const PRELUDE = () => sentShell('verify');

/**
 * What the host can check (an RDMA device, rping) and, from the probe, the state a failed cell is
 * explained by: links, rules, tables, `route get` per NIC, the RDMA ports.
 */
export function renderCapabilityScript(host: Host, fleet: Fleet): string {
  return hostScript(
    '__ibfleet_caps_main',
    [sentShell('capabilities'), renderProbeBody(host, fleet, { managerEvidence: false })].join('\n'),
  );
}

function batches<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** Runs `jobs` (id, command) in batches, printing `@@cell <id> <exit>` + output for each, then the neighbours. */
function batchedJobs(jobs: readonly { id: number; command: string }[]): string[] {
  const lines: string[] = [];
  for (const batch of batches(jobs, PING_JOBS_AT_ONCE)) {
    for (const job of batch) lines.push(`job ${job.id} ${job.command} &`);
    lines.push('wait', `show ${batch.map((j) => j.id).join(' ')}`, NEIGHBOURS);
  }
  return lines;
}

/** ping processes at once on a host without python3 or fping. */
export const PING_JOBS_AT_ONCE = 32;
export const NEIGH_MARK = '@@neigh';
export const NEIGH_END_MARK = '@@neigh-end';
export const FPING_MARK = '@@fping';
export const FPING_END_MARK = '@@fping-end';
/**
 * The host's IPv4 neighbours after a part of the run: what each cell's destination resolved to, on
 * which NIC (ARP flux, a neighbour that never resolved). Read by verify-output.ts parseNeighbours.
 */
const NEIGHBOURS = `echo ${NEIGH_MARK}; ip -4 neigh show; echo ${NEIGH_END_MARK}`;

/** A here-document of `text`; `text` must not hold the delimiter on a line of its own. */
function hereDocument(path: string, delimiter: string, text: string): string[] {
  if (text.split('\n').includes(delimiter)) throw new Error(`the text holds its delimiter ${delimiter}`);
  return [`cat >${path} <<'${delimiter}'`, text.replace(/\n$/, ''), delimiter];
}

/**
 * Every ping cell whose source is one host, in one run of the prober it has: python3 with raw ICMP
 * sockets (host/ibfleet-probe.py, given as `program`), fping per source address, or ping processes
 * in batches. Every kind sends from the cell's source address (`ping -I ADDR`), PING_COUNT echoes
 * PING_GAP_MS apart, each cell given PING_WAIT_MS after its last; `ids` are the cells' indexes in
 * the run.
 */
export function renderPingScript(
  cells: readonly { id: number; cell: CellSpec }[],
  prober: ProberKind = 'ping',
  program = '',
): string {
  const body =
    prober === 'python3'
      ? [
          ...hereDocument('"$dir/probe.py"', '__IBFLEET_PROBE_PY', program),
          ...hereDocument(
            '"$dir/cells"',
            '__IBFLEET_CELLS',
            cells.map(({ id, cell }) => `${id} ${cell.from.ip} ${cell.to.ip}`).join('\n'),
          ),
          `${PYTHON3} "$dir/probe.py" ${PING_COUNT} ${PING_GAP_MS} ${PING_WAIT_MS} <"$dir/cells"`,
          NEIGHBOURS,
        ]
      : prober === 'fping'
        ? fpingRuns(cells)
        : batchedJobs(cells.map(({ id, cell }) => ({ id, command: shellCommand(pingArgv(cell.from, cell.to)) })));
  return receivedWhole('__ibfleet_ping_main', [PRELUDE(), `echo '@@prober ${prober}'`, ...body].join('\n'));
}

/** One fping per source address, all at once, each over that address's destinations; framed by source. */
function fpingRuns(cells: readonly { id: number; cell: CellSpec }[]): string[] {
  const sources = [...new Set(cells.map((c) => c.cell.from.ip))];
  const lines: string[] = [];
  sources.forEach((source, n) => {
    const targets = cells.filter((c) => c.cell.from.ip === source).map((c) => c.cell.to.ip);
    lines.push(
      ...hereDocument(`"$dir/t${n}"`, '__IBFLEET_TARGETS', targets.join('\n')),
      `${shellCommand(fpingArgv(source))} -f "$dir/t${n}" >"$dir/o${n}" 2>&1 & pid_${n}=$!`,
    );
  });
  sources.forEach((source, n) =>
    lines.push(`wait "$pid_${n}"; echo "${FPING_MARK} ${source} $?"; cat "$dir/o${n}"; echo; echo ${FPING_END_MARK}`),
  );
  return [...lines, NEIGHBOURS];
}

/** A server's port, once it listens: `@@rping-port <cell> <port>`. */
export const PORT_MARK = '@@rping-port';
/** The client script's last line: every cell it ran has been printed. */
export const CLIENTS_DONE_MARK = '@@rping-clients-done';
/** What the controller sends a server script once the clients are done. */
export const STOP_SERVERS = 'stop';
/** A server whose port is taken tries the one this far up, at most PORT_TRIES times. */
export const PORT_STRIDE = 100;
const PORT_TRIES = 3;

/**
 * A connection closed early makes the next write fail: with SIGPIPE ignored the script carries on to
 * the end of its input and ends what it started, instead of dying and orphaning it. (The shell has
 * read the whole script before it runs — receivedWhole — so what it reads from its input later, the
 * stop word or the end of input, is never a line of the script.)
 */
const IGNORE_SIGPIPE = "trap '' PIPE";

/** Each cell's exit status and output between its marks (verify.sh's show). */
function frames(ids: readonly number[]): string {
  return `show ${ids.join(' ')}`;
}

/**
 * rping servers on the destination host, one per cell, each bound to the cell's destination
 * address. A server whose port is taken (its output says so at once) moves PORT_STRIDE up, so the
 * clients are told the port each one really listens on. Then READY_MARK; the servers are ended
 * (those whose client never came) when the controller says STOP_SERVERS or the input closes — the
 * script holds the shell's input open, so Ctrl-C, a timeout or a lost controller all end what it
 * started — and each server's output is printed.
 */
export function renderRpingServerScript(
  servers: readonly { id: number; cell: CellSpec; port: number }[],
  serverSeconds = RPING_SERVER_SECONDS,
): string {
  // The port is the shell's variable: it moves up when taken. -d makes rping say `rdma_listen` as it
  // starts listening (and stdbuf flushes that line to the file at once): the clients dial only then.
  const command = (cell: CellSpec, port: string) => {
    const argv = [...rpingServerArgv(cell.to, 0), '-d'];
    const at = argv.indexOf('-p') + 1;
    return argv.map((arg, i) => (i === at ? port : shellQuote(arg))).join(' ');
  };
  const start = (id: number, cell: CellSpec, port: string) =>
    `timeout ${serverSeconds} stdbuf -oL ${command(cell, port)} >"$dir/${id}" 2>&1 & pid_${id}=$!`;
  const ids = servers.map((s) => s.id);
  const pids = ids.map((id) => `"$pid_${id}"`).join(' ');
  return receivedWhole(
    '__ibfleet_rping_server_main',
    [
      IGNORE_SIGPIPE,
      PRELUDE(),
      ...servers.map(({ id, cell, port }) => `port_${id}=${port}; ${start(id, cell, `"$port_${id}"`)}`),
      // Each server listening (or ended); one whose port was taken moves up (host/sent/rping-server.sh).
      sentShell('rping-server'),
      ...servers.flatMap(({ id, cell }) => [
        `listening "$pid_${id}" "$dir/${id}"`,
        'tries=0',
        `while [ "$tries" -lt ${PORT_TRIES} ] && ! kill -0 "$pid_${id}" 2>/dev/null && grep -q 'already in use' "$dir/${id}"; do`,
        `	tries=$((tries + 1)); port_${id}=$((port_${id} + ${PORT_STRIDE}))`,
        `	${start(id, cell, `"$port_${id}"`)}`,
        `	listening "$pid_${id}" "$dir/${id}"`,
        'done',
        `echo "${PORT_MARK} ${id} $port_${id}"`,
      ]),
      // READY_MARK; then, until the controller says stop or its connection (and with it this input) goes.
      `end_servers ${pids}`,
      ...ids.map((id) => `wait "$pid_${id}" 2>/dev/null; echo $? >"$dir/${id}.rc"`),
      frames(ids),
    ].join('\n'),
  );
}

/**
 * rping clients on the source host, all at once, each bound to its cell's source address, each
 * ended within RPING_CLIENT_SECONDS; a watcher ends them if the script's input closes before they
 * are done (the controller's connection went).
 */
export function renderRpingClientScript(clients: readonly { id: number; cell: CellSpec; port: number }[]): string {
  const ids = clients.map((c) => c.id);
  const pids = ids.map((id) => `"$pid_${id}"`).join(' ');
  return receivedWhole(
    '__ibfleet_rping_client_main',
    [
      IGNORE_SIGPIPE,
      PRELUDE(),
      ...clients.map(
        ({ id, cell, port }) =>
          `timeout ${RPING_CLIENT_SECONDS} ${shellCommand(rpingClientArgv(cell.from, cell.to, port))} >"$dir/${id}" 2>&1 & pid_${id}=$!`,
      ),
      'exec 3<&0',
      `(read -r _ <&3; kill ${pids} 2>/dev/null) &`,
      'watch=$!',
      ...ids.map((id) => `wait "$pid_${id}"; echo $? >"$dir/${id}.rc"`),
      'kill "$watch" 2>/dev/null',
      frames(ids),
      `echo ${CLIENTS_DONE_MARK}`,
    ].join('\n'),
  );
}
