/**
 * Status folded `clush -b` style, with one rule that keeps the answer short: a host none of
 * ibfleet's files is on (never deployed, or rolled back) has two dozen drift lines that all mean
 * "deploy it", worded differently per manager. Such hosts fold into one line carrying the deploy
 * command for exactly them, whatever their manager (deploy finds it); their details stay in --json
 * and the run log. Every status display folds through here. Pure.
 */
import type { HostResult } from '../../vocabulary.js';
import { deployCommand } from '../../plan/deploy-command.js';
import { foldResults, type HostGroup } from './fold.js';

/** What never-deployed hosts fold by; \u0000 keeps it apart from any reason a host sends. */
const NOT_DEPLOYED_KEY = '\u0000not deployed';

export type StatusInput = Pick<HostResult, 'status' | 'reasons' | 'notDeployed' | 'error'> & {
  readonly host: { readonly id: number };
};

export function statusGroups<R extends StatusInput>(
  results: readonly R[],
  inventory: string | undefined,
  reasonsOf: (r: R) => readonly string[] = (r) => r.reasons,
): HostGroup[] {
  const groups = foldResults(
    results.map((r) => ({
      id: r.host.id,
      status: r.status,
      reasons: r.notDeployed && r.status === 'drift' ? [NOT_DEPLOYED_KEY] : reasonsOf(r),
    })),
  );
  return groups.map((g) => {
    if (g.reasons.length !== 1 || g.reasons[0] !== NOT_DEPLOYED_KEY) return g;
    return { ...g, reasons: [], summary: notDeployedLine(g.hostSet, inventory) };
  });
}

/** `not deployed — ibfleet deploy -i lab.yaml --hosts 60-62`. */
export function notDeployedLine(hostSet: string, inventory: string | undefined): string {
  return `not deployed — ${deployCommand(hostSet, inventory)}`;
}
