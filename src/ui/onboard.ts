/** onboard's --json document: the run's document, plus what discovery found, the inventory change and the cheat sheet. Pure. */
import type { OnboardReport } from '../plan/onboard-summary.js';
import { jsonHostText, runDocument } from './json.js';

export function onboardDocument(report: OnboardReport, inventory: string) {
  const base = runDocument(
    { command: 'onboard', inventory },
    {
      results: report.deploy.length > 0 ? report.deploy : report.discovery,
      ...(report.verify ? { cells: report.verify.cells } : {}),
      durationMs: report.durationMs,
      interrupted: report.outcome === 'interrupted',
    },
  );
  return {
    ...base,
    ok: report.outcome === 'ok',
    outcome: report.outcome,
    message: report.summary,
    problems: report.problems,
    pair: { owner: report.request.owner, cpu: report.request.cpu, mem: report.request.mem },
    inventoryChange: report.inventory,
    discovered: report.discovered.map((d) => {
      const host = report.hosts.find((h) => h.id === d.id);
      return {
        id: d.id,
        role: d.role,
        name: host?.name ?? null,
        target: host?.target ?? null,
        os: d.os ?? null,
        manager: d.manager ?? null,
        managerSource: d.managerSource ?? null,
        evidence: d.evidence,
        interfaces: d.nics,
        problems: d.problems,
      };
    }),
    deploy: report.deploy.map((r) => ({
      id: r.host.id,
      status: r.status,
      manager: r.manager ?? null,
      reasons: r.reasons.map(jsonHostText),
      error: r.error ? `${r.error.stage}: ${jsonHostText(r.error.message)}` : null,
    })),
    cheatSheet: report.cheatSheet ?? null,
  };
}
