/**
 * What an onboard run came to: its outcome, what it changed where, and one paragraph saying what
 * happened and what to do next, in words a student can act on. Pure: the runner fills the report
 * (ReportBuilder), the displays show it (the paragraph is --json's `message`).
 */
import type { Host } from '../inventory/model.js';
import type { CheatSheet } from './cheat-sheet.js';
import type { HostResult, MatrixCell } from '../vocabulary.js';
import { onboardName, type HostDiscovery } from './onboard.js';
import type { OnboardRequest } from './onboard-request.js';

export type OnboardOutcome =
  'ok' | 'refused' | 'discovery-failed' | 'deploy-failed' | 'inventory-failed' | 'verify-failed' | 'interrupted';

export interface InventoryChange {
  readonly file: string;
  /** written: the hosts and/or the pair were added; unchanged: they were there already. */
  readonly change: 'written' | 'unchanged' | 'not-written';
  readonly addedHosts: readonly number[];
  readonly addedPair: boolean;
  readonly addedLines: readonly string[];
}

export interface OnboardReport {
  readonly outcome: OnboardOutcome;
  readonly request: OnboardRequest;
  /** The pair's hosts as the run ended up describing them (discovered interfaces once known). */
  readonly hosts: readonly Host[];
  readonly discovered: readonly HostDiscovery[];
  readonly discovery: readonly HostResult[];
  readonly deploy: readonly HostResult[];
  readonly verify: { readonly results: readonly HostResult[]; readonly cells: readonly MatrixCell[] } | undefined;
  readonly inventory: InventoryChange;
  readonly cheatSheet: CheatSheet | undefined;
  /** Why it stopped: refusal reasons or the failing hosts' one-liners. */
  readonly problems: readonly string[];
  /** One paragraph: what happened and what to do next. */
  readonly summary: string;
  readonly durationMs: number;
}

function bullets(lines: readonly string[]): string {
  return lines.map((l) => `  - ${l}`).join('\n');
}

/** What happened, and the next step, in words a student can act on. */
export function summarize(report: Omit<OnboardReport, 'durationMs' | 'summary'>, file: string): string {
  const { request } = report;
  // The names the hosts have (or will have) in the inventory: the one given, the inventory's, or the machine's own.
  const nameOf = (role: 'cpu' | 'mem', id: number) =>
    report.hosts.find((h) => h.id === id)?.name ?? onboardName(role, id);
  const names = `${nameOf('cpu', request.cpu)} (${request.cpu}) and ${nameOf('mem', request.mem)} (${request.mem})`;
  const problems = report.problems.join('; ');
  const again = 'then run the same onboard command again';
  switch (report.outcome) {
    case 'ok':
      return `${request.owner}'s pair ${names} is deployed and verified; ${file} ${report.inventory.change === 'written' ? 'now lists both hosts and the pair' : 'already listed both hosts and the pair'}.`;
    case 'refused':
      return `onboard refused:\n${bullets(report.problems)}\nNothing was deployed and ${file} was not changed; fix the above, ${again}.`;
    case 'discovery-failed':
      return `discovery failed on ${problems}. Nothing was deployed and ${file} was not changed; check the address and SSH access (a machine whose host key is new needs --accept-new; a sudo user with a password needs -K), ${again}.`;
    case 'deploy-failed': {
      const deployed = report.deploy
        .filter((r) => r.status === 'changed' || r.status === 'unchanged')
        .map((r) => r.host.id);
      return `deploy failed on ${problems}. ${file} was not changed${deployed.length ? ` (host ${deployed.join(', ')} was deployed; running onboard again finds it done)` : ''}; fix the cause, ${again}.`;
    }
    case 'inventory-failed':
      return `both hosts are deployed, but ${problems}. Add these lines to ${file} by hand:\n${report.inventory.addedLines.map((l) => `  ${l}`).join('\n')}`;
    case 'verify-failed':
      return `verify failed: ${report.problems.length} cell${report.problems.length === 1 ? '' : 's'} did not pass (each with the command that reproduces it above). Both hosts are deployed and ${report.inventory.change === 'written' ? 'now in' : 'in'} ${file}; fix the fabric, then check again with: ibfleet -i ${file} verify --pair ${request.owner}`;
    case 'interrupted':
      if (report.inventory.change !== 'not-written' && report.deploy.length > 0) {
        return `interrupted after deploy: both hosts are deployed and in ${file}; check them with: ibfleet -i ${file} verify --pair ${request.owner}`;
      }
      return `interrupted${report.deploy.length ? ' during deploy' : ' before deploying'}: ${file} was not changed; run the same onboard command again.`;
  }
}

/** Why onboard refused before contacting anything (a usage error). */
export function refusedBeforeContact(conflicts: readonly string[], file: string): string {
  return `onboard refused:\n${bullets(conflicts)}\nNothing was contacted and ${file} was not changed.`;
}

type Progress = Omit<OnboardReport, 'durationMs' | 'summary'>;

/** The report as the run fills it in, and how it ends: with the summary and the time taken. */
export class ReportBuilder {
  private report: Progress;
  constructor(
    request: OnboardRequest,
    private readonly file: string,
    hosts: readonly Host[],
    private readonly elapsed: () => number,
  ) {
    this.report = {
      outcome: 'refused',
      request,
      hosts,
      discovered: [],
      discovery: [],
      deploy: [],
      verify: undefined,
      inventory: { file, change: 'not-written', addedHosts: [], addedPair: false, addedLines: [] },
      cheatSheet: undefined,
      problems: [],
    };
  }

  get hosts(): readonly Host[] {
    return this.report.hosts;
  }

  note(patch: Partial<Progress>): void {
    this.report = { ...this.report, ...patch };
  }

  finish(patch: Partial<Progress>): OnboardReport {
    this.note(patch);
    return { ...this.report, summary: summarize(this.report, this.file), durationMs: this.elapsed() };
  }
}
