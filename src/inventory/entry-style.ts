/**
 * How an inventory file already writes things — line ends, indentation, flow or block host
 * entries, spaces inside braces and brackets — and new entries written the same way, so added
 * lines look like their neighbours. Pure.
 */
import { printableLine } from '../host-text.js';
import { isMap, isSeq, parse, type Document, type Node, type Pair as YamlPair } from 'yaml';
import type { HostEntry } from './entry.js';
import type { Pair } from './model.js';

export interface Style {
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

export function detectStyle(text: string, doc: Document): Style {
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
    if (isMap(node) || isSeq(node))
      for (const item of node.items) collect(isMap(node) ? (item as YamlPair).value : item);
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

export function flowMap(fields: readonly [string, string][], style: Style): string {
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

/**
 * How long a written entry's comment may be. Onboard's (the owner, the role, the OS name the host
 * reports — itself cut at OS_NAME_MAX — and the manager) fits; the cap guards every other caller.
 */
const COMMENT_MAX = 160;

/**
 * ` # comment`: one line of printable text whatever the caller passes — a line break in a comment
 * (NEL, U+2028, U+2029 end a line for YAML 1.1 readers) would start a line of YAML of its own.
 */
function trailingComment(comment: string | undefined): string {
  const line = comment === undefined ? '' : printableLine(comment, COMMENT_MAX);
  return line ? ` # ${line}` : '';
}

/** A host as block lines at `indent` (without line ends). */
export function hostLines(entry: HostEntry, style: Style, indent: string): string[] {
  const fields = hostFields(entry, style);
  if (style.flowHosts) return [`${indent}${entry.id}: ${flowMap(fields, style)}${trailingComment(entry.comment)}`];
  return [
    `${indent}${entry.id}:${trailingComment(entry.comment)}`,
    ...fields.map(([k, v]) => `${indent}${style.fieldIndent}${k}: ${v}`),
  ];
}

export function pairFields(pair: Pair): [string, string][] {
  return [
    ['owner', yamlScalar(pair.owner)],
    ['cpu', String(pair.cpu)],
    ['mem', String(pair.mem)],
  ];
}

/** The offset where the line holding text[offset] starts. */
export function lineStart(text: string, offset: number): number {
  return text.lastIndexOf('\n', offset - 1) + 1;
}
