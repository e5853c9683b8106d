/** What onboard shows besides the deploy and verify displays: discovery lines and the --json document. Pure. */
import type { HostRef } from '../vocabulary.js';
import type { OnboardReport } from '../plan/onboard-summary.js';
import type { HostDiscovery } from '../plan/onboard.js';
import { runDocument } from './json.js';

/** `[50 cpuserver50] found Ubuntu 18.04.6 LTS · netplan (detected) · NIC 1 ibp1s0 172.16.50.1/16 · NIC 2 ibp2s0 172.16.50.2/16` */
export function formatDiscoveryLines(d: HostDiscovery, host: HostRef): string[] {
  const label = `[${host.id} ${host.name}]`;
  const nics = d.nics.map((n) => `NIC ${n.nic} ${n.iface} ${n.address}/${n.prefixLength}`);
  const manager = d.manager ? `${d.manager} (${d.managerSource === 'detected' ? 'detected' : `from ${d.managerSource === 'flag' ? `--${d.role}-manager` : 'the inventory'}`})` : undefined;
  const found = [d.os ?? 'unknown OS', ...(manager ? [manager] : []), ...nics].join(' · ');
  return [`${label} ${d.role}: ${found}`, ...d.problems.map((p) => `${label} REFUSED: ${p}`)];
}

export function onboardDocument(report: OnboardReport, inventory: string) {
  const base = runDocument({
    command: 'onboard',
    inventory,
    results: report.deploy.length > 0 ? report.deploy : report.discovery,
    ...(report.verify ? { cells: report.verify.cells } : {}),
    durationMs: report.durationMs,
    interrupted: report.outcome === 'interrupted',
  });
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
    deploy: report.deploy.map((r) => ({ id: r.host.id, status: r.status, manager: r.manager ?? null, reasons: r.reasons, error: r.error ? `${r.error.stage}: ${r.error.message}` : null })),
    cheatSheet: report.cheatSheet ?? null,
  };
}
