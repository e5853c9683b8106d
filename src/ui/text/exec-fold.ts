/**
 * `ibfleet exec`'s plain output, folded as `clush -b` folds it: hosts whose output (stdout, stderr)
 * and exit are identical print it once, under one header naming them all
 * (`---------------- 16,34 (exit 0)`); a host that never ran the command (unreachable, refused)
 * gets a header saying why and no body. Every line of a host's text goes through sanitizeLine
 * (escape sequences dropped, controls shown as `?`). Pure.
 */
import { foldHosts } from '../../inventory/select.js';
import type { ExecOutput, HostResult } from '../../vocabulary.js';
import { oneLine, sanitizeLines } from './sanitize.js';

const RULE = '----------------';

/** What a header says of how the host ended: `exit 0`, `killed by SIGKILL`, `unreachable: …`. */
function ending(result: HostResult): string {
  const exec = result.exec;
  if (exec) return exec.exitCode === null ? `killed by ${exec.signal ?? 'a signal'}` : `exit ${exec.exitCode}`;
  return `${result.status}${result.error ? `: ${oneLine(result.error.message)}` : ''}`;
}

function cutNote(stream: 'stdout' | 'stderr', exec: ExecOutput): string[] {
  const cut = exec.cut?.[stream];
  if (!cut) return [];
  // The transport itself keeps only the tail of a huge stream: then even the count is a floor.
  return [
    `[${stream}: ${exec.cut?.more ? 'more than ' : ''}${cut} characters cut before what follows; the run log has more]`,
  ];
}

/** The body under a header: stdout, then stderr, each with a note where its start was cut. */
function body(exec: ExecOutput | undefined): string[] {
  if (!exec) return [];
  const lines = (text: string) => (text.trimEnd() === '' ? [] : sanitizeLines(text, 'keep'));
  return [...cutNote('stdout', exec), ...lines(exec.stdout), ...cutNote('stderr', exec), ...lines(exec.stderr)];
}

/** The key hosts fold by: everything the reader sees under a header. */
function foldKey(result: HostResult): string {
  return JSON.stringify([ending(result), body(result.exec)]);
}

/** Groups of hosts with identical output and ending, in the order of their first host. */
export function foldExec(results: readonly HostResult[]): { ids: number[]; header: string; lines: string[] }[] {
  const groups = new Map<string, { ids: number[]; header: string; lines: string[] }>();
  for (const result of [...results].sort((a, b) => a.host.id - b.host.id)) {
    const key = foldKey(result);
    const group = groups.get(key) ?? { ids: [], header: ending(result), lines: body(result.exec) };
    group.ids.push(result.host.id);
    groups.set(key, group);
  }
  return [...groups.values()];
}

/** The folded output as lines, then one line counting how the hosts ended. */
export function execLines(results: readonly HostResult[]): string[] {
  const out: string[] = [];
  for (const group of foldExec(results)) out.push(`${RULE} ${foldHosts(group.ids)} (${group.header})`, ...group.lines);
  out.push(execSummary(results));
  return out;
}

/** `exec: 3 hosts — exit 0: 16,34; exit 3: 40; unreachable: 60`. */
export function execSummary(results: readonly HostResult[]): string {
  const by = new Map<string, number[]>();
  for (const r of [...results].sort((a, b) => a.host.id - b.host.id)) {
    const word = r.exec ? (r.exec.exitCode === null ? 'killed' : `exit ${r.exec.exitCode}`) : r.status;
    by.set(word, [...(by.get(word) ?? []), r.host.id]);
  }
  const parts = [...by].map(([word, ids]) => `${word}: ${foldHosts(ids)}`);
  return `exec: ${results.length} host${results.length === 1 ? '' : 's'} — ${parts.join('; ')}`;
}
