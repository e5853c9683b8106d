/** The `--json` document: one object on stdout describing the whole run. Pure. */
import { runPassed, type CommandName, type HostResult, type MatrixCell } from '../vocabulary.js';
import { countStatuses } from './text/format.js';

export interface RunSummaryInput {
  readonly command: CommandName;
  readonly inventory: string;
  readonly playbook?: string;
  readonly dryRun?: boolean;
  readonly results: readonly HostResult[];
  readonly cells?: readonly MatrixCell[];
  readonly warnings?: readonly string[];
  readonly durationMs: number;
  readonly interrupted: boolean;
}

export function runDocument(input: RunSummaryInput) {
  const cells = input.cells ?? [];
  return {
    command: input.command,
    ok: runPassed(input.results, cells) && !input.interrupted,
    inventory: input.inventory,
    ...(input.playbook ? { playbook: input.playbook } : {}),
    ...(input.dryRun ? { dryRun: true } : {}),
    interrupted: input.interrupted,
    durationMs: Math.round(input.durationMs),
    summary: Object.fromEntries(countStatuses(input.results)),
    ...(input.warnings?.length ? { warnings: input.warnings } : {}),
    hosts: input.results.map((r) => ({
      id: r.host.id,
      name: r.host.name,
      target: r.host.target,
      status: r.status,
      error: r.error ? `${r.error.stage}: ${r.error.message}` : null,
      ...(r.error ? { errorDetail: r.error } : {}),
      manager: r.manager ?? null,
      os: r.os ?? null,
      durationMs: Math.round(r.durationMs),
      reasons: r.reasons,
      ...(r.changes ? { changes: r.changes } : {}),
      ...(r.warnings?.length ? { warnings: r.warnings } : {}),
      ...(r.fabric ? { fabric: r.fabric } : {}),
      ...(r.checks ? { checks: r.checks } : {}),
      ...(r.diffs ? { diffs: r.diffs } : {}),
      ...(r.planText ? { plan: r.planText } : {}),
      ...(r.connections !== undefined ? { ssh: { connections: r.connections, channels: r.channels ?? 0 } } : {}),
    })),
    ...(input.cells ? { matrix: cells.map((c) => ({ from: { host: c.from.host, nic: c.from.nic, iface: c.from.iface, ip: c.from.ip }, to: { host: c.to.host, nic: c.to.nic, iface: c.to.iface, ip: c.to.ip }, ok: c.ok, state: c.state, method: c.method, detail: c.detail, reproduce: c.reproduce })) } : {}),
  };
}
