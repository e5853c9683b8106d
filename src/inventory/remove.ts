/**
 * Taking hosts and pairs out of an inventory as a person would (offboard): the lines of each
 * removed entry go — a one-line flow entry with its trailing comment, a block entry with all its
 * lines — and every other byte stays as it was: comments above and between entries, key order,
 * blank lines, quoting. A pair naming a removed host goes with it. When the last pair goes, the
 * `pairs:` key goes too (an empty list key would not load). The result is loaded again and must
 * hold exactly the hosts and pairs that were meant to stay; an inventory whose layout defeats
 * line-wise removal (`hosts: {16: …, 34: …}` on one line) is refused, never half-edited. Pure.
 */
import { isMap, isSeq, parseDocument, type Node } from 'yaml';
import { ConfigError } from '../errors.js';
import { loadInventory } from './load.js';
import type { Fleet, HostOverride, Pair } from './model.js';
import { keyText } from './splice.js';

export type InventoryRemoval =
  | {
      readonly ok: true;
      readonly text: string;
      readonly fleet: Fleet;
      readonly removedHosts: readonly number[];
      readonly removedPairs: readonly Pair[];
      /** The lines taken out, as they were written. */
      readonly removedLines: readonly string[];
    }
  | { readonly ok: false; readonly problems: readonly string[] };

/** Start of the line holding `at`, and the end of the line holding `end - 1` (its line break included). */
function wholeLines(text: string, at: number, end: number): [number, number] {
  const start = text.lastIndexOf('\n', at - 1) + 1;
  const stop = text.indexOf('\n', Math.max(end - 1, at));
  return [start, stop === -1 ? text.length : stop + 1];
}

/** Something else on the lines a removal would take: `hosts: {16: …}` written inline. */
function sharesLines(text: string, [start, stop]: [number, number], ownStart: number, ownEnd: number): boolean {
  const before = text.slice(start, ownStart).replace(/^\s*(- )?\s*/, '');
  const after = text.slice(ownEnd, stop).replace(/^\s*,?\s*(#.*)?\r?\n?$/, '');
  return before !== '' || after !== '';
}

/**
 * Plans removing `hosts` and the pairs of `owners` (and every pair naming a removed host) from
 * the inventory `text`. Throws ConfigError when `text` itself is not a valid inventory.
 */
export function planInventoryRemoval(
  text: string,
  file: string,
  baseDir: string,
  remove: { readonly hosts: readonly number[]; readonly owners: readonly string[] },
  overrides: readonly HostOverride[] = [],
): InventoryRemoval {
  const fleet = loadInventory(text, file, baseDir, overrides);
  const hostIds = new Set(remove.hosts);
  const pairs = fleet.pairs.filter((p) => remove.owners.includes(p.owner) || hostIds.has(p.cpu) || hostIds.has(p.mem));
  for (const p of pairs) if (remove.owners.includes(p.owner)) for (const id of [p.cpu, p.mem]) hostIds.add(id);
  const doc = parseDocument(text, { keepSourceTokens: false });
  const root = doc.contents;
  if (!isMap(root)) return { ok: false, problems: [`${file}: not a mapping`] };
  const ranges: [number, number][] = [];
  const problems: string[] = [];
  const take = (what: string, node: Node | undefined, keyNode?: Node) => {
    const own = [keyNode?.range?.[0] ?? node?.range?.[0], node?.range?.[1]] as const;
    if (own[0] === undefined || own[1] === undefined) return problems.push(`${what}: not found in ${file}`);
    const lines = wholeLines(text, own[0], own[1]);
    if (sharesLines(text, lines, own[0], own[1]))
      return problems.push(`${what} shares its line with other entries in ${file}; take it out by hand`);
    ranges.push(lines);
  };
  const hostsNode = root.items.find((p) => keyText(p.key) === 'hosts')?.value;
  for (const id of hostIds) {
    const entry = isMap(hostsNode) ? hostsNode.items.find((p) => keyText(p.key) === String(id)) : undefined;
    take(`host ${id}`, entry?.value as Node | undefined, entry?.key as Node | undefined);
  }
  const pairsEntry = root.items.find((p) => keyText(p.key) === 'pairs');
  const pairsNode = pairsEntry?.value;
  if (pairs.length > 0 && isSeq(pairsNode)) {
    const owners = new Set(pairs.map((p) => p.owner));
    const items = pairsNode.items.filter((item) => isMap(item) && owners.has(String(item.get('owner'))));
    // The last pair: the `pairs:` key goes with its items, whole.
    if (items.length === pairsNode.items.length) take('pairs', pairsNode as Node, pairsEntry!.key as Node);
    else
      for (const item of items)
        take(`${String((item as { get(k: string): unknown }).get('owner'))}'s pair`, item as Node);
  }
  if (problems.length > 0) return { ok: false, problems };
  ranges.sort((a, b) => b[0] - a[0]);
  let next = text;
  const removedLines: string[] = [];
  for (const [start, stop] of ranges) {
    removedLines.unshift(
      ...text
        .slice(start, stop)
        .replace(/\r?\n$/, '')
        .split(/\r?\n/),
    );
    next = next.slice(0, start) + next.slice(stop);
  }
  return checked(next, file, baseDir, overrides, fleet, { hostIds, pairs, removedLines });
}

/** The edited text must load, and hold the hosts and pairs that were to stay — no more, no fewer. */
function checked(
  next: string,
  file: string,
  baseDir: string,
  overrides: readonly HostOverride[],
  before: Fleet,
  removed: { hostIds: Set<number>; pairs: readonly Pair[]; removedLines: string[] },
): InventoryRemoval {
  let fleet: Fleet;
  try {
    fleet = loadInventory(next, file, baseDir, overrides);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    return {
      ok: false,
      problems: error.problems.map(
        (p) => `without these entries ${file} would not be valid: line ${p.position.line}: ${p.message}`,
      ),
    };
  }
  const ids = (f: Fleet) => f.hosts.map((h) => h.id).join(',');
  const owners = (ps: readonly Pair[]) => ps.map((p) => p.owner).join(',');
  const keptPairs = before.pairs.filter((p) => !removed.pairs.includes(p));
  if (
    ids(fleet) !==
      before.hosts
        .filter((h) => !removed.hostIds.has(h.id))
        .map((h) => h.id)
        .join(',') ||
    owners(fleet.pairs) !== owners(keptPairs)
  ) {
    return {
      ok: false,
      problems: [`${file} is laid out so that removing lines would change other entries; take the entries out by hand`],
    };
  }
  return {
    ok: true,
    text: next,
    fleet,
    removedHosts: [...removed.hostIds].sort((a, b) => a - b),
    removedPairs: removed.pairs,
    removedLines: removed.removedLines,
  };
}
