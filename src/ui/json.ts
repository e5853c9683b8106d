/** The `--json` document: one object on stdout describing the whole run. Pure. */
import { clipHostLines, clipHostText } from '../host-text.js';
import { runPassed, type HostFailure, type MatrixCell, type RunEnd, type RunHeader } from '../vocabulary.js';
import { countStatuses } from './text/format.js';

/**
 * A host's error text in the document is cut too, later than on a terminal (a program reads it):
 * a failing host may send 1 MiB on one line, and 254 of them, each in `error`, `errorDetail` and
 * its tail, would make one document of hundreds of MiB — past what a JavaScript string holds
 * (about 512 MiB), so not even printable. `errorDetail.cut` says which fields were cut and how
 * long they were; the run log (`log`) has the whole text.
 */
export const JSON_HOST_TEXT = 16 * 1024;
export const JSON_TAIL_LINE = 4 * 1024;

/** A piece of a host's text as the document carries it: at most JSON_HOST_TEXT characters. */
export function jsonHostText(text: string): string {
  return clipHostText(text, JSON_HOST_TEXT);
}

function errorDetail(error: HostFailure) {
  const message = jsonHostText(error.message);
  const stderrTail = clipHostLines(error.stderrTail, JSON_TAIL_LINE);
  const cut = {
    ...(message === error.message ? {} : { message: error.message.length }),
    ...(stderrTail === error.stderrTail ? {} : { stderrTail: error.stderrTail.length }),
  };
  return { ...error, message, stderrTail, ...(Object.keys(cut).length > 0 ? { cut } : {}) };
}

/** A run's document: its header, then how it ended; `matrix` only where the run had cells to give. */
export function runDocument(
  header: RunHeader,
  input: Omit<RunEnd, 'cells'> & { readonly cells?: readonly MatrixCell[] },
) {
  const cells = input.cells ?? [];
  return {
    command: header.command,
    ok: runPassed(input.results, cells) && !input.problems?.length && !input.interrupted,
    inventory: header.inventory,
    ...(header.playbook ? { playbook: header.playbook } : {}),
    ...(header.dryRun ? { dryRun: true } : {}),
    interrupted: input.interrupted,
    durationMs: Math.round(input.durationMs),
    summary: Object.fromEntries(countStatuses(input.results)),
    ...(input.warnings?.length ? { warnings: input.warnings } : {}),
    ...(input.problems?.length ? { problems: input.problems } : {}),
    hosts: input.results.map((r) => ({
      id: r.host.id,
      name: r.host.name,
      target: r.host.target,
      status: r.status,
      error: r.error ? `${r.error.stage}: ${jsonHostText(r.error.message)}` : null,
      ...(r.error ? { errorDetail: errorDetail(r.error) } : {}),
      manager: r.manager ?? null,
      os: r.os ?? null,
      durationMs: Math.round(r.durationMs),
      // A failure's reasons hold its message again.
      reasons: r.reasons.map(jsonHostText),
      ...(r.changes ? { changes: r.changes } : {}),
      ...(r.warnings?.length ? { warnings: r.warnings } : {}),
      ...(r.fabric ? { fabric: r.fabric } : {}),
      ...(r.checks ? { checks: r.checks } : {}),
      ...(r.notDeployed ? { notDeployed: true } : {}),
      ...(r.diffs ? { diffs: r.diffs } : {}),
      ...(r.planText ? { plan: r.planText } : {}),
      ...(r.exec
        ? {
            exitCode: r.exec.exitCode,
            ...(r.exec.signal ? { signal: r.exec.signal } : {}),
            stdout: r.exec.stdout,
            stderr: r.exec.stderr,
            ...(r.exec.cut ? { outputCut: r.exec.cut } : {}),
          }
        : {}),
      ...(r.prober ? { prober: r.prober } : {}),
      ...(r.connections !== undefined ? { ssh: { connections: r.connections, channels: r.channels ?? 0 } } : {}),
    })),
    // Which matrix ran (full, rail, ring), and why when verify chose it.
    ...(input.matrix
      ? { matrixMode: input.matrix.mode, ...(input.matrix.reason ? { matrixReason: input.matrix.reason } : {}) }
      : {}),
    ...(input.cells
      ? {
          matrix: cells.map((c) => ({
            from: { host: c.from.host, nic: c.from.nic, iface: c.from.iface, ip: c.from.ip },
            to: { host: c.to.host, nic: c.to.nic, iface: c.to.iface, ip: c.to.ip },
            ok: c.ok,
            state: c.state,
            method: c.method,
            detail: c.detail,
            reproduce: c.reproduce,
            ...(c.causes ? { causes: c.causes } : {}),
          })),
        }
      : {}),
  };
}
