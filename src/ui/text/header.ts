/** The line a run starts with, in every display: what runs, on which hosts, with what. Pure. */
import { foldHosts } from '../../inventory/select.js';
import type { CommandName, RunStart } from '../../vocabulary.js';
import { pluralize } from './format.js';

export interface RunHeading {
  readonly command: CommandName;
  readonly hostCount: number;
  /** `16-20,34`. */
  readonly hostSet: string;
  readonly inventory: string;
  readonly playbook: string | undefined;
  readonly concurrency: number;
  readonly dryRun: boolean;
  /** --dry-run --show-scripts: the exact scripts are shown under each host. */
  readonly showScripts: boolean;
  readonly diff: boolean;
}

export function runHeading(start: RunStart): RunHeading {
  return {
    command: start.command,
    hostCount: start.hosts.length,
    hostSet: foldHosts(start.hosts.map((h) => h.id)),
    inventory: start.inventory,
    playbook: start.playbook,
    concurrency: start.concurrency,
    dryRun: start.dryRun ?? false,
    showScripts: start.showScripts ?? false,
    diff: start.diff ?? false,
  };
}

/** `ibfleet deploy --dry-run`, and what it runs with: `3 hosts (16,34,40)`, `playbook P`, `inventory I`, `concurrency 32`. */
export function runHeadingParts(heading: RunHeading): { readonly title: string; readonly details: readonly string[] } {
  const details = [`${pluralize(heading.hostCount, 'host')}${heading.hostCount > 0 ? ` (${heading.hostSet})` : ''}`];
  if (heading.playbook !== undefined) details.push(`playbook ${heading.playbook}`);
  details.push(`inventory ${heading.inventory}`, `concurrency ${heading.concurrency}`);
  return {
    title: `ibfleet ${heading.command}${heading.dryRun ? ' --dry-run' : ''}${heading.diff ? ' --diff' : ''}`,
    details,
  };
}
