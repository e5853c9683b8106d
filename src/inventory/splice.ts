/**
 * Where new lines go in an inventory's text: offsets from the YAML document's node ranges (hosts in
 * host-number order, comments kept with the entry below them, the pair after the last pair), and
 * the insertions applied to the text, every other byte left as it was. Pure.
 */
import {
  isMap,
  isScalar,
  isSeq,
  type Document,
  type Node,
  type Pair as YamlPair,
  type YAMLMap,
  type YAMLSeq,
} from 'yaml';
import { BugError } from '../errors.js';
import type { HostEntry } from './entry.js';
import { detectStyle, flowMap, hostLines, lineStart, pairFields } from './entry-style.js';
import type { Pair } from './model.js';

export interface Insertion {
  readonly at: number;
  /** Replace text[at, at + remove) first (an empty `{}` / `[]` that becomes a block). */
  readonly remove?: number;
  /** Text inserted as is at `at`, inside a flow collection (`, 50: {...}`); `lines` then only report it. */
  readonly inline?: string;
  /** Whole lines to insert (no line ends), or what an inline insertion added, for reporting. */
  readonly lines: readonly string[];
  /** Sort key among insertions at the same offset. */
  readonly order: number;
}

/** The offset just after the line that holds text[offset - 1] (or `offset` if that is a line end). */
function endOfLine(text: string, offset: number): number {
  if (offset > 0 && text[offset - 1] === '\n') return offset;
  const nl = text.indexOf('\n', offset);
  return nl < 0 ? text.length : nl + 1;
}

/** Comment lines directly above an entry belong to it: insert before them, not between. */
function aboveComments(text: string, start: number): number {
  let at = start;
  while (at > 0) {
    const prev = lineStart(text, at - 1);
    if (!/^[ \t]*#/.test(text.slice(prev, at))) break;
    at = prev;
  }
  return at;
}

export function keyText(key: unknown): string {
  return isScalar(key) ? String(key.value) : String(key);
}

function nodeEnd(pair: YamlPair): number {
  const value = pair.value as Node | null;
  const key = pair.key as Node;
  return value?.range?.[1] ?? key.range?.[1] ?? 0;
}

function topLevelPair(doc: Document, key: string): YamlPair | undefined {
  const contents = doc.contents;
  return isMap(contents) ? (contents.items.find((p) => keyText(p.key) === key) as YamlPair | undefined) : undefined;
}

export function hostInsertions(text: string, doc: Document, entries: readonly HostEntry[]): Insertion[] {
  if (entries.length === 0) return [];
  const style = detectStyle(text, doc);
  const hostsPair = topLevelPair(doc, 'hosts');
  const hosts = hostsPair?.value as Node | undefined;
  const sorted = [...entries].sort((a, b) => a.id - b.id);
  if (!isMap(hosts) || !hosts.range) throw new BugError('planInventoryAddition: a valid inventory has a hosts map');
  if (hosts.flow && hosts.items.length > 0) {
    // `hosts: { 16: {...} }`: stay inside the braces, right after the last entry.
    const flowStyle = { ...style, flowHosts: true };
    const entries = sorted.map((e) => hostLines({ ...e, comment: undefined }, flowStyle, '')[0]!);
    return [
      {
        at: nodeEnd(hosts.items[hosts.items.length - 1] as YamlPair),
        inline: entries.map((e) => `, ${e}`).join(''),
        lines: entries,
        order: 0,
      },
    ];
  }
  if (hosts.flow)
    return [emptyToBlock(text, hosts as YAMLMap, sorted.map((e) => hostLines(e, style, style.indent)).flat(), 0)];
  const items = hosts.items as YamlPair[];
  const byOffset = new Map<number, string[]>();
  for (const entry of sorted) {
    const next = items.find((p) => Number(keyText(p.key)) > entry.id);
    const at = next
      ? aboveComments(text, lineStart(text, (next.key as Node).range![0]))
      : endOfLine(text, nodeEnd(items[items.length - 1]!));
    byOffset.set(at, [...(byOffset.get(at) ?? []), ...hostLines(entry, style, style.indent)]);
  }
  return [...byOffset].map(([at, lines]) => ({ at, lines, order: 0 }));
}

export function pairInsertion(text: string, doc: Document, pair: Pair): Insertion {
  const style = detectStyle(text, doc);
  const pairsPair = topLevelPair(doc, 'pairs');
  const pairs = pairsPair?.value as Node | undefined;
  const flowLine = flowMap(pairFields(pair), style);
  if (!pairsPair || pairs === null || pairs === undefined) {
    // No pairs yet: a new top-level key at the end of the file.
    const indent = style.indent;
    return { at: text.length, lines: ['pairs:', `${indent}- ${flowLine}`], order: 1 };
  }
  if (!isSeq(pairs) || !pairs.range) throw new BugError('planInventoryAddition: a valid inventory has a pairs list');
  if (pairs.flow && pairs.items.length > 0) {
    const lastItem = pairs.items[pairs.items.length - 1] as Node;
    return { at: lastItem.range![1], inline: `, ${flowLine}`, lines: [flowLine], order: 1 };
  }
  if (pairs.flow) return emptyToBlock(text, pairs as YAMLSeq, [`${style.indent}- ${flowLine}`], 1);
  const last = pairs.items[pairs.items.length - 1] as Node;
  const start = last.range![0];
  const written = text.slice(lineStart(text, start), start);
  const prefix = /^[ \t]*-[ \t]+$/.test(written) ? written : `${style.indent}- `;
  const at = endOfLine(text, last.range![1]);
  if (isMap(last) && !last.flow) {
    const align = ' '.repeat(prefix.length);
    const [first, ...rest] = pairFields(pair).map(([k, v]) => `${k}: ${v}`);
    return { at, lines: [`${prefix}${first}`, ...rest.map((l) => `${align}${l}`)], order: 1 };
  }
  const padBraces = isMap(last) && last.flow ? /^\{[ \t]/.test(text.slice(start, last.range![1])) : style.padBraces;
  return { at, lines: [`${prefix}${flowMap(pairFields(pair), { ...style, padBraces })}`], order: 1 };
}

/** `hosts: {}` / `pairs: []` → the key alone on its line (a trailing comment stays), the new block under it. */
function emptyToBlock(text: string, node: YAMLMap | YAMLSeq, lines: readonly string[], order: number): Insertion {
  const [start, end] = node.range as [number, number, number];
  let from = start;
  while (from > 0 && (text[from - 1] === ' ' || text[from - 1] === '\t')) from--;
  return { at: from, remove: end - from, lines, order };
}

export function applyInsertions(text: string, insertions: readonly Insertion[]): string {
  const eol = text.includes('\r\n') ? '\r\n' : '\n';
  let out = text;
  const sorted = [...insertions].sort((a, b) => b.at - a.at || b.order - a.order);
  for (const ins of sorted) {
    if (ins.inline !== undefined) {
      out = `${out.slice(0, ins.at)}${ins.inline}${out.slice(ins.at)}`;
      continue;
    }
    const block = ins.lines.map((l) => `${l}${eol}`).join('');
    if (ins.remove !== undefined) {
      // The collection was `{}` / `[]` on the key's line: the block goes after that line.
      const withoutBrackets = `${out.slice(0, ins.at)}${out.slice(ins.at + ins.remove)}`;
      const lineEnd = endOfLine(withoutBrackets, ins.at);
      const needsEol = lineEnd === withoutBrackets.length && !withoutBrackets.endsWith('\n');
      out = `${withoutBrackets.slice(0, lineEnd)}${needsEol ? eol : ''}${block}${withoutBrackets.slice(lineEnd)}`;
      continue;
    }
    const needsEol = ins.at === out.length && out.length > 0 && !out.endsWith('\n');
    out = `${out.slice(0, ins.at)}${needsEol ? eol : ''}${block}${out.slice(ins.at)}`;
  }
  return out;
}

/** ` (line 16)` for messages, when the path exists in the document. */
export function lineOf(text: string, doc: Document, path: readonly (string | number)[]): string {
  let node: unknown = doc.contents;
  let keyNode: Node | undefined;
  for (const segment of path) {
    if (!isMap(node)) return '';
    const pair = node.items.find((p) => keyText(p.key) === String(segment));
    keyNode = pair?.key as Node | undefined;
    node = pair?.value;
  }
  if (!keyNode?.range) return '';
  return ` (line ${text.slice(0, keyNode.range[0]).split('\n').length})`;
}
