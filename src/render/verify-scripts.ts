/**
 * Scripts verify runs on hosts. Cells run in parallel batches on the source host; each job writes
 * its output to its own file and the batch's results are printed one after another between
 * markers, so parallel output never interleaves. Pure string builders; their output is read by
 * src/plan/verify-output.ts.
 */
import type { Fleet, Host } from '../inventory/model.js';
import type { CellSpec } from '../vocabulary.js';
import { renderProbeBody } from './probe-script.js';
import { receivedWhole, shellCommand } from './shell.js';
import { pingArgv, rpingClientArgv, rpingServerArgv } from './verify-commands.js';

export const CELL_MARK = '@@cell';
export const CELL_END_MARK = '@@cell-end';
export const READY_MARK = '@@rping-ready';
/** Cells run at once on one host: enough to hide ping's waits, few enough for a small host. */
export const CELLS_PER_BATCH = 16;
/** rping has no timeout of its own; a server nobody connects to is ended after this long. */
export const RPING_SERVER_SECONDS = 20;
export const RPING_CLIENT_SECONDS = 15;

const PRELUDE = ['set -u', 'export LC_ALL=C PATH=/usr/sbin:/usr/bin:/sbin:/bin', 'dir=$(mktemp -d "${TMPDIR:-/tmp}/ibfleet-verify.XXXXXX") || exit 70', "trap 'rm -rf \"$dir\"' EXIT"];

/**
 * What the host can check (an RDMA device, rping) and, from the probe, the state a failed cell is
 * explained by: links, rules, tables, `route get` per NIC, the RDMA ports.
 */
export function renderCapabilityScript(host: Host, fleet: Fleet): string {
  return receivedWhole('__ibfleet_caps_main', [
    'export LC_ALL=C PATH=/usr/sbin:/usr/bin:/sbin:/bin',
    'printf "rdma-devices="; ls /sys/class/infiniband 2>/dev/null | tr "\\n" " "; echo',
    'printf "rping="; command -v rping || echo',
    'printf "ping="; command -v ping || echo',
    renderProbeBody(host, fleet, { managerEvidence: false }),
  ].join('\n'));
}

function batches<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** Runs `jobs` (id, command) in batches, printing `@@cell <id> <exit>` + output for each. */
function batchedJobs(jobs: readonly { id: number; command: string }[]): string[] {
  const lines = [
    'job() {',
    '\tid=$1',
    '\tshift',
    '\t"$@" >"$dir/$id" 2>&1',
    '\techo $? >"$dir/$id.rc"',
    '}',
    'show() {',
    `\tfor id in "$@"; do printf '${CELL_MARK} %s %s\\n' "$id" "$(cat "$dir/$id.rc")"; cat "$dir/$id"; echo; echo ${CELL_END_MARK}; done`,
    '}',
  ];
  for (const batch of batches(jobs, CELLS_PER_BATCH)) {
    for (const job of batch) lines.push(`job ${job.id} ${job.command} &`);
    lines.push('wait', `show ${batch.map((j) => j.id).join(' ')}`);
  }
  return lines;
}

/** Every ping cell whose source is one host; `ids` are the cells' indexes in the run. */
export function renderPingScript(cells: readonly { id: number; cell: CellSpec }[]): string {
  return receivedWhole('__ibfleet_ping_main', [...PRELUDE, ...batchedJobs(cells.map(({ id, cell }) => ({ id, command: shellCommand(pingArgv(cell.from, cell.to)) })))].join('\n'));
}

/**
 * rping servers on the destination host, one per cell on its own port. They start in the
 * background, the script says when they are listening, and prints each server's output when it
 * has ended (after its client's pings, or after RPING_SERVER_SECONDS).
 */
export function renderRpingServerScript(servers: readonly { id: number; cell: CellSpec; port: number }[]): string {
  return receivedWhole('__ibfleet_rping_server_main', [
    ...PRELUDE,
    ...servers.map(({ id, cell, port }) => `timeout ${RPING_SERVER_SECONDS} ${shellCommand(rpingServerArgv(cell.to, port))} >"$dir/${id}" 2>&1 & pid_${id}=$!`),
    // rping prints nothing when it starts listening; give rdma_listen a moment before clients dial.
    'sleep 0.5',
    `echo ${READY_MARK}`,
    ...servers.map(({ id }) => `wait "$pid_${id}"; echo $? >"$dir/${id}.rc"`),
    `for id in ${servers.map((s) => s.id).join(' ')}; do printf '${CELL_MARK} %s %s\\n' "$id" "$(cat "$dir/$id.rc")"; cat "$dir/$id"; echo; echo ${CELL_END_MARK}; done`,
  ].join('\n'));
}

export function renderRpingClientScript(clients: readonly { id: number; cell: CellSpec; port: number }[]): string {
  return receivedWhole(
    '__ibfleet_rping_client_main',
    [...PRELUDE, ...batchedJobs(clients.map(({ id, cell, port }) => ({ id, command: `timeout ${RPING_CLIENT_SECONDS} ${shellCommand(rpingClientArgv(cell.from, cell.to, port))}` })))].join('\n'),
  );
}
