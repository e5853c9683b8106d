/**
 * The restore a deploy sends when a host fails verification after its change (nmstate's
 * verify-and-rollback, netplan try): everything the change can touch goes back to what the probe
 * saw before it — ibfleet's files (from the copies the change kept under PREVIOUS_DIR, checked
 * against the checksums probed before), each step's part (the manager's configuration, then the
 * kernel state: rules, tables, main-table routes, sysctls) and the directories the change
 * created. Every step is unconditional and idempotent: the restore needs no trust in what the
 * change left. Pure; the steps quote every word of what the host printed.
 */
import type { Fleet, Host } from '../inventory/model.js';
import { hostScript } from '../script/host-functions.js';
import { sentShell } from '../script/sent-shell.js';
import { shellQuote } from '../script/shell.js';
import type { UndoLines } from '../steps/step.js';
import { afterProbe, finishLine, keptDirectories, renderPrelude } from './apply-script.js';
import { TAKE_ROUTING_LOCK } from './routing-lock.js';

export interface RestoreSpec {
  /** ibfleet's files: their state before (null: absent). */
  readonly files: readonly {
    readonly path: string;
    readonly before: { readonly mode: number; readonly sha256: string } | null;
  }[];
  /** Directories the change created, parents first. */
  readonly createdDirs: readonly string[];
  /** Each step's lines that put its part back. */
  readonly steps: readonly UndoLines[];
}

/** The rmdir of keptDirectories: the same line for every host, made once. */
let rmdirKept: string | undefined;
function rmdirKeptLine(): string {
  return (rmdirKept ??= `rmdir ${keptDirectories().map(shellQuote).join(' ')} 2>/dev/null`);
}

/**
 * The restore's own lines, after its prelude. `createdDirs`: the spec's, or — for the restore a
 * change carries for itself (apply-script.ts) — those the change's `$created` lists, as it made them.
 */
export function restoreLines(spec: RestoreSpec, createdDirs: 'spec' | 'shell' = 'spec'): string[] {
  const part = (key: keyof UndoLines) => spec.steps.flatMap((s) => s[key] ?? []);
  const lines: string[] = [sentShell('put-back')];
  // Files first, then the manager's configuration, then the kernel state: a manager applying its
  // configuration afterwards (networkd drops every rule it did not make) would undo what is put back.
  // What must happen while the change's files are still there (ifupdown takes a NIC down by its stanza).
  lines.push(...part('beforeFiles'));
  lines.push('', "# ibfleet's files: as they were, or gone if they were not there.");
  for (const f of spec.files) {
    // A line a file, in every change a host receives (its self-restore): the test is
    // host/sent/put-back.sh's, not ~190 bytes of shell repeated for each of ibfleet's ~20 paths.
    if (f.before === null) lines.push(`remove_new ${shellQuote(f.path)} || status=1`);
    else
      lines.push(
        `put_back ${shellQuote(f.path)} ${f.before.mode.toString(8).padStart(4, '0')} ${shellQuote(f.before.sha256)} || status=1`,
      );
  }
  // A manager told something below dispatches an event, and a hook put back above then runs the
  // routing script; it holds a lock on itself, held here until the state is read, so it runs after
  // and finds nothing to change.
  lines.push(TAKE_ROUTING_LOCK, ...part('manager'), ...part('kernel'));
  // put_back removed the copies of an admin's link it put back: a first deploy that failed leaves no
  // directory of them either (nor, below, /etc/ibfleet). Deepest first; one that is not empty stays
  // (ibfleet's kept versions of its own files, from an earlier deploy).
  lines.push(rmdirKeptLine());
  if (createdDirs === 'shell')
    lines.push(
      '# $created: the directories the change made, deepest first, one word each.',
      '# shellcheck disable=SC2086',
      '[ -z "$created" ] || rmdir $created 2>/dev/null',
    );
  else if (spec.createdDirs.length)
    lines.push(`rmdir ${[...spec.createdDirs].reverse().map(shellQuote).join(' ')} 2>/dev/null`);
  lines.push(...part('last'));
  return lines;
}

export function renderRestoreScript(host: Host, fleet: Fleet, spec: RestoreSpec, runId: string): string {
  const lines: string[] = [
    `# ibfleet restore after a failed verification: host ${host.id} (${host.name})`,
    renderPrelude('restore', runId),
    'status=0',
    ...restoreLines(spec),
  ];
  lines.push(afterProbe(host, fleet), finishLine(runId), 'exit "$status"', '');
  return hostScript('__ibfleet_restore_main', lines);
}
