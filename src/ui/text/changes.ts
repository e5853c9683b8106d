/**
 * A host's changes in a few words, by kind: `+2 rules +2 table routes −2 main routes, 8 sysctls set,
 * script, sysctl file and hook installed`. Every display says a host's changes this way (the live
 * view's rows, plain lines, the folded dry-run plan), so hosts whose plans differ only in their
 * addresses read alike and fold together. Kinds, their words and their order are the steps' own
 * (src/steps/registry.ts); a kind no step names is still counted (`2 rdma changes`), never dropped. Pure.
 */
import { CHANGE_KINDS, kindPlace } from '../../steps/registry.js';
import type { Change, ChangeAction, ChangeKind } from '../../vocabulary.js';

const PAST: Readonly<Record<ChangeAction, string>> = {
  add: 'added',
  remove: 'removed',
  replace: 'replaced',
  set: 'set',
  reset: 'reset',
  install: 'installed',
  start: 'started',
  reorder: 'reordered',
};

const SIGN: Partial<Record<ChangeAction, string>> = { add: '+', remove: '−' };

function noun(forms: readonly [string, string], count: number): string {
  return count === 1 ? forms[0] : forms[1];
}

/** `a, b and c`. */
function listWords(words: readonly string[]): string {
  return words.length <= 1 ? (words[0] ?? '') : `${words.slice(0, -1).join(', ')} and ${words.at(-1)}`;
}

/** Changes grouped by kind and action, in the kinds' order (unknown kinds last, in the order seen). */
export function changeCounts(changes: readonly Change[]): { kind: ChangeKind; action: ChangeAction; count: number }[] {
  const groups = new Map<string, { kind: ChangeKind; action: ChangeAction; count: number; first: number }>();
  changes.forEach((c, i) => {
    const key = `${c.kind}\u0000${c.action}`;
    const group = groups.get(key);
    if (group) group.count++;
    else groups.set(key, { kind: c.kind, action: c.action, count: 1, first: i });
  });
  return [...groups.values()]
    .sort((a, b) => kindPlace(a.kind) - kindPlace(b.kind) || a.first - b.first)
    .map(({ kind, action, count }) => ({ kind, action, count }));
}

/** `+2 rules +2 table routes −2 main routes, 8 sysctls set, script, sysctl file and hook installed`; '' for none. */
export function summarizeChanges(changes: readonly Change[]): string {
  const signed: string[] = [];
  const phrases: string[] = [];
  const filesByAction = new Map<ChangeAction, string[]>();
  for (const { kind, action, count } of changeCounts(changes)) {
    const spec = CHANGE_KINDS.get(kind);
    if (spec?.shape === 'counted' && SIGN[action]) signed.push(`${SIGN[action]}${count} ${noun(spec.noun, count)}`);
    else if (spec?.shape === 'counted') phrases.push(`${count} ${noun(spec.noun, count)} ${PAST[action]}`);
    else if (spec) {
      const words = filesByAction.get(action) ?? [];
      words.push(count === 1 ? spec.noun[0] : `${count} ${spec.noun[1]}`);
      filesByAction.set(action, words);
    } else phrases.push(`${count} ${kind} ${count === 1 ? 'change' : 'changes'}`);
  }
  for (const [action, words] of filesByAction) phrases.push(`${listWords(words)} ${PAST[action]}`);
  return [signed.join(' '), ...phrases].filter((p) => p !== '').join(', ');
}

/** Changes in the order a plan lists them: by kind (CHANGE_KINDS' order), then as the assessment found them. */
export function byKind(changes: readonly Change[]): Change[] {
  return changes
    .map((c, i) => ({ c, i }))
    .sort((a, b) => kindPlace(a.c.kind) - kindPlace(b.c.kind) || a.i - b.i)
    .map(({ c }) => c);
}
