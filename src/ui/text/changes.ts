/**
 * A host's changes in a few words, by kind: `+2 rules +2 table routes −2 main routes, 8 sysctls set,
 * script, hook and sysctl file installed`. Every display says a host's changes this way (the live
 * view's rows, plain lines, the folded dry-run plan), so hosts whose plans differ only in their
 * addresses read alike and fold together. Kinds come from the changes themselves: one this table
 * does not know is still counted (`2 other changes`), never dropped. Pure.
 */
import type { Change, ChangeAction, ChangeKind } from '../../vocabulary.js';

/** Kinds counted with a sign: `+2 rules`, `−2 main routes`. */
const COUNTED: Readonly<Partial<Record<ChangeKind, readonly [string, string]>>> = {
  rule: ['rule', 'rules'],
  'table-route': ['table route', 'table routes'],
  'main-route': ['main route', 'main routes'],
  'old-table': ['old table', 'old tables'],
  'old-rule': ['old rule', 'old rules'],
  sysctl: ['sysctl', 'sysctls'],
  'nm-profile': ['connection profile', 'connection profiles'],
};

/** Kinds that are files: named, with what happened to them (`hook installed`). */
const FILES: Readonly<Partial<Record<ChangeKind, readonly [string, string]>>> = {
  script: ['script', 'scripts'],
  hook: ['hook', 'hooks'],
  'sysctl-file': ['sysctl file', 'sysctl files'],
  'netplan-file': ['netplan file', 'netplan files'],
  record: ['ownership record', 'ownership records'],
  timer: ['timer unit', 'timer units'],
  file: ['file', 'files'],
};

/** The order kinds are told in: the fix itself first (rules and routes), then what makes it last. */
const KIND_ORDER: readonly ChangeKind[] = ['nm-profile', 'rule', 'table-route', 'main-route', 'old-rule', 'old-table', 'sysctl', 'script', 'hook', 'sysctl-file', 'netplan-file', 'record', 'timer', 'file'];

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

function rank(kind: ChangeKind): number {
  const at = KIND_ORDER.indexOf(kind);
  return at < 0 ? KIND_ORDER.length : at;
}

function noun(forms: readonly [string, string], count: number): string {
  return count === 1 ? forms[0] : forms[1];
}

/** `a, b and c`. */
function listWords(words: readonly string[]): string {
  return words.length <= 1 ? (words[0] ?? '') : `${words.slice(0, -1).join(', ')} and ${words.at(-1)}`;
}

/** Changes grouped by kind and action, in KIND_ORDER (unknown kinds last, in the order seen). */
export function changeCounts(changes: readonly Change[]): { kind: ChangeKind; action: ChangeAction; count: number }[] {
  const groups = new Map<string, { kind: ChangeKind; action: ChangeAction; count: number; first: number }>();
  changes.forEach((c, i) => {
    const key = `${c.kind}\u0000${c.action}`;
    const group = groups.get(key);
    if (group) group.count++;
    else groups.set(key, { kind: c.kind, action: c.action, count: 1, first: i });
  });
  return [...groups.values()].sort((a, b) => rank(a.kind) - rank(b.kind) || a.first - b.first).map(({ kind, action, count }) => ({ kind, action, count }));
}

/** `+2 rules +2 table routes −2 main routes, 8 sysctls set, script, hook and sysctl file installed`; '' for none. */
export function summarizeChanges(changes: readonly Change[]): string {
  const signed: string[] = [];
  const phrases: string[] = [];
  const filesByAction = new Map<ChangeAction, string[]>();
  for (const { kind, action, count } of changeCounts(changes)) {
    const counted = COUNTED[kind];
    const file = FILES[kind];
    if (counted && SIGN[action] && kind !== 'sysctl') signed.push(`${SIGN[action]}${count} ${noun(counted, count)}`);
    else if (counted) phrases.push(`${count} ${noun(counted, count)} ${PAST[action]}`);
    else if (file) {
      const words = filesByAction.get(action) ?? [];
      words.push(count === 1 ? file[0] : `${count} ${file[1]}`);
      filesByAction.set(action, words);
    } else phrases.push(`${count} ${kind} ${count === 1 ? 'change' : 'changes'}`);
  }
  for (const [action, words] of filesByAction) phrases.push(`${listWords(words)} ${PAST[action]}`);
  return [signed.join(' '), ...phrases].filter((p) => p !== '').join(', ');
}

/** The label a change's kind is listed under in a plan: `rule`, `table route`, `hook`. */
export function kindLabel(kind: ChangeKind): string {
  return (COUNTED[kind] ?? FILES[kind])?.[0] ?? kind;
}

/** Changes in the order a plan lists them: by kind (KIND_ORDER), then as the assessment found them. */
export function byKind(changes: readonly Change[]): Change[] {
  return changes.map((c, i) => ({ c, i })).sort((a, b) => rank(a.c.kind) - rank(b.c.kind) || a.i - b.i).map(({ c }) => c);
}
