/**
 * Adding hosts and a pair to an inventory as a person would: new lines spliced into the text,
 * every other byte as it was — comments, key order, blank lines, spacing inside `{ }`, quoting.
 * The YAML Document API finds where things are and how the existing entries are written; the
 * text itself is never re-serialised, because yaml's stringifier would normalise the spacing and
 * comment alignment the file's author chose. Pure: text in, text out; the result is checked with
 * loadInventory (and against the intended data) before anyone writes it.
 */
import { isDeepStrictEqual } from 'node:util';
import { isMap, isScalar, isSeq, parse, parseDocument, type Document, type Node, type Pair as YamlPair, type YAMLMap, type YAMLSeq } from 'yaml';
import { BugError, InventoryError } from '../errors.js';
import { loadInventory } from './load.js';
import type { Fleet, Host, Manager, Pair } from './model.js';

/** One host as onboard would write it. */
export interface HostEntry {
  readonly id: number;
  readonly name: string;
  /** The management (SSH) address; undefined: the inventory's entry says (not compared). */
  readonly address?: string | undefined;
  readonly role?: string | undefined;
  /** Undefined: not known yet — the entry's or the defaults' apply and are not compared. */
  readonly interfaces?: readonly string[] | undefined;
  readonly user?: string | undefined;
  readonly manager?: Manager | undefined;
  /** A trailing comment for a newly written entry, e.g. what onboard found on the machine. */
  readonly comment?: string | undefined;
}

export interface InventoryAddition {
  readonly hosts: readonly HostEntry[];
  readonly pair?: Pair | undefined;
}

export type InventoryEdit =
  | {
      readonly ok: true;
      /** The new inventory text (=== the input when nothing had to be added). */
      readonly text: string;
      /** The inventory the new text loads to. */
      readonly fleet: Fleet;
      readonly addedHosts: readonly number[];
      readonly addedPair: boolean;
      /** The lines that were added, as written (for messages and --json). */
      readonly addedLines: readonly string[];
    }
  | { readonly ok: false; readonly conflicts: readonly string[] };

/**
 * Plans adding `addition` to the inventory `text`. Entries already present with the same data are
 * left alone (an idempotent re-run adds nothing); a host number present with other data, or an
 * owner who already has another pair, is a conflict and nothing is added. Throws InventoryError
 * when `text` itself is not a valid inventory.
 */
export function planInventoryAddition(text: string, file: string, baseDir: string, addition: InventoryAddition): InventoryEdit {
  const fleet = loadInventory(text, file, baseDir);
  const doc = parseDocument(text, { keepSourceTokens: false });
  const conflicts: string[] = [];
  const newHosts: HostEntry[] = [];
  const inherit = inheritedSettings(doc, fleet.fabric.nics);
  for (const entry of addition.hosts) {
    const existing = fleet.hosts.find((h) => h.id === entry.id);
    if (!existing) {
      newHosts.push(withoutInherited(entry, inherit));
      continue;
    }
    const diffs = hostDifferences(existing, entry);
    if (diffs.length > 0) {
      conflicts.push(
        `host ${entry.id} is already in ${file}${lineOf(text, doc, ['hosts', entry.id])} with other data: ${diffs.join(', ')}; correct or remove that entry, or choose another host number`,
      );
    }
  }
  let addPair = false;
  if (addition.pair) {
    const pair = addition.pair;
    const same = fleet.pairs.find((p) => p.owner === pair.owner && p.cpu === pair.cpu && p.mem === pair.mem);
    if (!same) {
      addPair = true;
      for (const other of fleet.pairs.filter((p) => p.owner === pair.owner)) {
        conflicts.push(`${pair.owner} already has a pair in ${file} (cpu ${other.cpu}, mem ${other.mem}); an owner has one pair — remove that pair first, or onboard under another owner name`);
      }
      for (const other of fleet.pairs.filter((p) => p.owner !== pair.owner)) {
        for (const id of [pair.cpu, pair.mem]) {
          if (other.cpu === id || other.mem === id) conflicts.push(`host ${id} already belongs to ${other.owner}'s pair (cpu ${other.cpu}, mem ${other.mem}); a machine serves one pair`);
        }
      }
    }
  }
  if (conflicts.length > 0) return { ok: false, conflicts };
  if (newHosts.length === 0 && !addPair) return { ok: true, text, fleet, addedHosts: [], addedPair: false, addedLines: [] };

  const insertions = [...hostInsertions(text, doc, newHosts), ...(addPair ? [pairInsertion(text, doc, addition.pair!)] : [])];
  const next = applyInsertions(text, insertions);
  checkResult(text, next, newHosts, addPair ? addition.pair : undefined);
  let nextFleet: Fleet;
  try {
    nextFleet = loadInventory(next, file, baseDir);
  } catch (error) {
    if (!(error instanceof InventoryError)) throw error;
    return { ok: false, conflicts: error.problems.map((p) => `with these entries ${file} would not be valid: line ${p.position.line}: ${p.message}${p.hint ? ` (${p.hint})` : ''}`) };
  }
  return {
    ok: true,
    text: next,
    fleet: nextFleet,
    addedHosts: newHosts.map((h) => h.id).sort((a, b) => a - b),
    addedPair: addPair,
    addedLines: insertions.flatMap((i) => i.lines),
  };
}

interface Inherited {
  readonly interfaces: readonly string[];
  readonly user: string | undefined;
  readonly manager: string;
  readonly role: string | undefined;
}

/** What a host entry that leaves a field out gets (the inventory's `defaults:`, else the built-ins). */
function inheritedSettings(doc: Document, nics: number): Inherited {
  const defaults = ((doc.toJS() as { defaults?: Record<string, unknown> } | null)?.defaults ?? {}) as { interfaces?: string[]; user?: string; manager?: string; role?: string };
  return {
    interfaces: defaults.interfaces ?? Array.from({ length: nics }, (_, i) => `ib${i}`),
    user: defaults.user,
    manager: defaults.manager ?? 'auto',
    role: defaults.role,
  };
}

/** A new entry names only what differs from what it would inherit: `interfaces:` only for other names, and so on. */
function withoutInherited(entry: HostEntry, inherit: Inherited): HostEntry {
  const same = (a: readonly string[] | undefined, b: readonly string[]) => a !== undefined && a.length === b.length && a.every((x, i) => x === b[i]);
  return {
    ...entry,
    interfaces: same(entry.interfaces, inherit.interfaces) ? undefined : entry.interfaces,
    user: entry.user !== undefined && entry.user === inherit.user ? undefined : entry.user,
    manager: entry.manager !== undefined && entry.manager === inherit.manager ? undefined : entry.manager,
    role: entry.role !== undefined && entry.role === inherit.role ? undefined : entry.role,
  };
}

/** What differs between the inventory's host and the entry onboard would write, in words. */
export function hostDifferences(existing: Host, entry: HostEntry): string[] {
  const diffs: string[] = [];
  const differ = (what: string, has: string | undefined, wants: string) => diffs.push(`${what} ${has ?? '(none)'} (onboard would write ${wants})`);
  if (existing.name !== entry.name) differ('name', existing.name, entry.name);
  if (entry.address !== undefined && existing.address !== entry.address) differ('address', existing.address, entry.address);
  if (entry.role !== undefined && existing.role !== entry.role) differ('role', existing.role, entry.role);
  const ifaces = existing.nics.map((n) => n.iface);
  if (entry.interfaces !== undefined && !isDeepStrictEqual(ifaces, [...entry.interfaces])) differ('interfaces', ifaces.join(', '), entry.interfaces.join(', '));
  if (entry.user !== undefined && (existing.user ?? 'root') !== entry.user) differ('user', existing.user ?? 'root', entry.user);
  if (entry.manager !== undefined && existing.manager !== entry.manager) differ('manager', existing.manager, entry.manager);
  return diffs;
}

/** The object an entry stands for in the YAML (also what the result is checked against). */
function entryData(entry: HostEntry): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries({ name: entry.name, address: entry.address, role: entry.role, interfaces: entry.interfaces && [...entry.interfaces], user: entry.user, manager: entry.manager }).filter(
      ([, v]) => v !== undefined,
    ),
  );
}

// ---------------------------------------------------------------------------------------------
// Style: how the file already writes things, so new lines look like their neighbours.

interface Style {
  readonly eol: string;
  /** Indentation of the host keys / pair items when a new block collection is started. */
  readonly indent: string;
  /** Host entries as `{ ... }` on one line (the seeds' style) or as nested blocks. */
  readonly flowHosts: boolean;
  /** Spaces inside `{ }` and inside `[ ]`. */
  readonly padBraces: boolean;
  readonly padBrackets: boolean;
  /** For block-style hosts: the extra indentation of their fields. */
  readonly fieldIndent: string;
}

function detectStyle(text: string, doc: Document): Style {
  const eol = text.includes('\r\n') ? '\r\n' : '\n';
  const hosts = doc.get('hosts', true) as Node | undefined;
  let indent = '  ';
  let flowHosts = true;
  let fieldIndent = '  ';
  let padBraces: boolean | undefined;
  let padBrackets: boolean | undefined;
  const flowSources: { open: string; source: string }[] = [];
  const collect = (node: unknown) => {
    if ((isMap(node) || isSeq(node)) && node.flow && node.range && node.items.length > 0) {
      flowSources.push({ open: isMap(node) ? '{' : '[', source: text.slice(node.range[0], node.range[1]) });
    }
    if (isMap(node) || isSeq(node)) for (const item of node.items) collect(isMap(node) ? (item as YamlPair).value : item);
  };
  if (isMap(hosts) && !hosts.flow && hosts.items.length > 0) {
    const first = hosts.items[0]!;
    const keyNode = first.key as Node;
    if (keyNode.range) indent = text.slice(lineStart(text, keyNode.range[0]), keyNode.range[0]);
    const value = first.value;
    if (isMap(value) && !value.flow) {
      flowHosts = false;
      const firstField = value.items[0]?.key as Node | undefined;
      if (firstField?.range && keyNode.range) {
        const fieldCol = firstField.range[0] - lineStart(text, firstField.range[0]);
        const keyCol = keyNode.range[0] - lineStart(text, keyNode.range[0]);
        fieldIndent = ' '.repeat(Math.max(1, fieldCol - keyCol));
      }
    }
  }
  collect(hosts);
  collect(doc.get('pairs', true));
  for (const { open, source } of flowSources) {
    const padded = /^[{[][ \t]/.test(source);
    if (open === '{') padBraces ??= padded;
    else padBrackets ??= padded;
  }
  if (!/^[ \t]*$/.test(indent)) indent = '  ';
  // yaml's own default pads braces; `[a, b]` is how the seeds and most hand-written files list.
  return { eol, indent, flowHosts, padBraces: padBraces ?? true, padBrackets: padBrackets ?? false, fieldIndent };
}

/** A scalar as YAML that reads back as the same value, in any context (block or flow). */
export function yamlScalar(value: string | number): string {
  if (typeof value === 'number') return String(value);
  if (/^[A-Za-z0-9_][A-Za-z0-9_./@+-]*$/.test(value) && parse(value) === value) return value;
  return JSON.stringify(value);
}

function flowSeq(items: readonly string[], style: Style): string {
  const inner = items.map(yamlScalar).join(', ');
  return style.padBrackets && inner ? `[ ${inner} ]` : `[${inner}]`;
}

function flowMap(fields: readonly [string, string][], style: Style): string {
  const inner = fields.map(([k, v]) => `${k}: ${v}`).join(', ');
  return style.padBraces && inner ? `{ ${inner} }` : `{${inner}}`;
}

function hostFields(entry: HostEntry, style: Style): [string, string][] {
  const fields: [string, string][] = [['name', yamlScalar(entry.name)]];
  if (entry.address !== undefined) fields.push(['address', yamlScalar(entry.address)]);
  if (entry.role !== undefined) fields.push(['role', yamlScalar(entry.role)]);
  if (entry.interfaces !== undefined) fields.push(['interfaces', flowSeq(entry.interfaces, style)]);
  if (entry.user !== undefined) fields.push(['user', yamlScalar(entry.user)]);
  if (entry.manager !== undefined) fields.push(['manager', yamlScalar(entry.manager)]);
  return fields;
}

function trailingComment(comment: string | undefined): string {
  const oneLine = comment?.replace(/[\r\n]+/g, ' ').trim();
  return oneLine ? ` # ${oneLine}` : '';
}

/** A host as block lines at `indent` (without line ends). */
function hostLines(entry: HostEntry, style: Style, indent: string): string[] {
  const fields = hostFields(entry, style);
  if (style.flowHosts) return [`${indent}${entry.id}: ${flowMap(fields, style)}${trailingComment(entry.comment)}`];
  return [`${indent}${entry.id}:${trailingComment(entry.comment)}`, ...fields.map(([k, v]) => `${indent}${style.fieldIndent}${k}: ${v}`)];
}

function pairFields(pair: Pair): [string, string][] {
  return [
    ['owner', yamlScalar(pair.owner)],
    ['cpu', String(pair.cpu)],
    ['mem', String(pair.mem)],
  ];
}

// ---------------------------------------------------------------------------------------------
// Where: offsets in the text, from the document's node ranges.

interface Insertion {
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

function lineStart(text: string, offset: number): number {
  return text.lastIndexOf('\n', offset - 1) + 1;
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

function keyText(key: unknown): string {
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

function hostInsertions(text: string, doc: Document, entries: readonly HostEntry[]): Insertion[] {
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
    return [{ at: nodeEnd(hosts.items[hosts.items.length - 1] as YamlPair), inline: entries.map((e) => `, ${e}`).join(''), lines: entries, order: 0 }];
  }
  if (hosts.flow) return [emptyToBlock(text, hosts as YAMLMap, sorted.map((e) => hostLines(e, style, style.indent)).flat(), 0)];
  const items = hosts.items as YamlPair[];
  const byOffset = new Map<number, string[]>();
  for (const entry of sorted) {
    const next = items.find((p) => Number(keyText(p.key)) > entry.id);
    const at = next ? aboveComments(text, lineStart(text, (next.key as Node).range![0])) : endOfLine(text, nodeEnd(items[items.length - 1]!));
    byOffset.set(at, [...(byOffset.get(at) ?? []), ...hostLines(entry, style, style.indent)]);
  }
  return [...byOffset].map(([at, lines]) => ({ at, lines, order: 0 }));
}

function pairInsertion(text: string, doc: Document, pair: Pair): Insertion {
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

function applyInsertions(text: string, insertions: readonly Insertion[]): string {
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

/**
 * The splice must mean exactly "the old data plus these entries": anything else is a defect
 * here, never something to write to a user's inventory.
 */
function checkResult(before: string, after: string, hosts: readonly HostEntry[], pair: Pair | undefined): void {
  const expected = structuredClone(parse(before) as Record<string, unknown>);
  const expectedHosts = (expected.hosts ?? {}) as Record<string, unknown>;
  for (const h of hosts) expectedHosts[String(h.id)] = entryData(h);
  expected.hosts = expectedHosts;
  if (pair) expected.pairs = [...((expected.pairs as unknown[] | undefined) ?? []), { owner: pair.owner, cpu: pair.cpu, mem: pair.mem }];
  let actual: unknown;
  try {
    actual = parse(after);
  } catch (error) {
    throw new BugError(`inventory edit produced invalid YAML: ${(error as Error).message}`);
  }
  if (!isDeepStrictEqual(actual, expected)) throw new BugError(`inventory edit produced unexpected data:\n${after}`);
}

/** ` (line 16)` for messages, when the path exists in the document. */
function lineOf(text: string, doc: Document, path: readonly (string | number)[]): string {
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
