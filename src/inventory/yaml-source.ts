/**
 * YAML with positions: parse a document once, then find the line and column of any path in it so
 * every validation problem can name file:line:col. Shared by the inventory and the playbooks.
 */
import {
  isAlias,
  isMap,
  isPair,
  isScalar,
  isSeq,
  LineCounter,
  parseDocument,
  visit,
  type Alias,
  type Document,
  type Node,
  type Pair,
  type YAMLMap,
} from 'yaml';
import { clipInput, ConfigError, type ConfigKind, type InventoryProblem, type SourcePosition } from '../errors.js';

export type YamlPath = readonly (string | number)[];

/**
 * Characters YAML does not allow in a stream (C0 controls but tab, LF and CR; DEL; C1 controls
 * but NEL): one of them means the file is not YAML text — most likely a binary — and is said once,
 * rather than as hundreds of syntax errors each quoting garbage.
 */
const NOT_YAML_TEXT = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u0084\u0086-\u009f]/;

/**
 * Aliased nodes a document may expand to in all. Aliases of aliases multiply ("billion laughs"):
 * a few lines can stand for billions of nodes, so expansion stops here and the file is refused.
 */
export const MAX_ALIAS_NODES = 100;

/** Whole numbers as written in ibfleet's files: plain decimal digits (`016` is 16: YAML 1.2 has no implicit octal). */
export const DECIMAL = /^[0-9]+$/;
/** Values that are hex by nature (a P_Key): `0x` and hex digits. */
const HEX = /^0x[0-9a-f]+$/i;

/**
 * YAML 1.2 also reads `0x10`, `0o20`, `1e3`, `+16` and `16.0` as whole numbers; where ibfleet
 * wants one (a host number, a table base, a port, a sysctl value) each is far more likely a slip
 * than a wish for the number YAML makes of it, so such a spelling is refused with its position.
 */
export interface NotDecimal {
  /** As written in the file. */
  readonly written: string;
  /** What YAML reads it as. */
  readonly value: number;
}

/** Maps longer than this (the hosts, a long list of settings) are looked up through an index; a host's few fields are scanned. */
const INDEXED_MAP_SIZE = 16;

export class YamlSource {
  readonly file: string;
  readonly doc: Document.Parsed;
  private readonly lines: LineCounter;
  private js: unknown;
  private readonly keyIndex = new WeakMap<YAMLMap<unknown, unknown>, Map<string, Pair<unknown, unknown>>>();

  private constructor(file: string, doc: Document.Parsed, lines: LineCounter) {
    this.file = file;
    this.doc = doc;
    this.lines = lines;
  }

  /** Parses `text`, a `kind` of file; malformed YAML (including duplicate keys) throws a ConfigError with positions. */
  static parse(text: string, file: string, kind: ConfigKind): YamlSource {
    const binary = NOT_YAML_TEXT.exec(text);
    if (binary) {
      const before = text.slice(0, binary.index);
      const line = before.split('\n').length;
      const column = binary.index - before.lastIndexOf('\n');
      const code = `U+${binary[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}`;
      throw new ConfigError(kind, [
        {
          position: { file, line, column },
          message: `not a YAML text file: it contains the control character ${code}`,
          hint: 'is it a binary file? give the YAML file itself',
        },
      ]);
    }
    const lines = new LineCounter();
    // logLevel error: the library's warnings (a map key that is itself a map) would go to the
    // process's stderr; the schema reports such keys where they are.
    const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true, logLevel: 'error' });
    const source = new YamlSource(file, doc, lines);
    if (doc.errors.length > 0) {
      throw new ConfigError(
        kind,
        doc.errors.map((e) => {
          const position = source.positionAt(e.pos[0]);
          const duplicate = e.code === 'DUPLICATE_KEY' ? source.describeDuplicateKey(e.pos[0]) : undefined;
          if (duplicate !== undefined) return { position, ...duplicate };
          return {
            position,
            message: `invalid YAML: ${clipInput(e.message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, ''), 120)}`,
            hint: 'fix the syntax; a YAML linter shows the same spot',
          };
        }),
      );
    }
    // A key can read __proto__ only where the text spells it, or through a double-quoted escape
    // (`"\x5f_proto__"`): a text with neither is not walked node by node (15 ms for 100 hosts).
    const proto = text.includes('__proto__') || text.includes('\\') ? source.findKey('__proto__') : undefined;
    if (proto)
      throw new ConfigError(kind, [
        { position: proto, message: 'key __proto__ is not allowed', hint: 'it names no setting; remove it' },
      ]);
    // Converted once, here, so every error of the conversion is a problem with a position too.
    try {
      source.js = doc.toJS({ maxAliasCount: MAX_ALIAS_NODES });
    } catch (error) {
      throw new ConfigError(kind, [source.conversionProblem(error)]);
    }
    return source;
  }

  /** Where a map key with this text first appears, anywhere in the document. */
  private findKey(text: string): SourcePosition | undefined {
    let found: SourcePosition | undefined;
    visit(this.doc, {
      Pair: (_, pair) => {
        const key = pair.key as Node | null;
        if (keyText(key) !== text) return undefined;
        found = this.positionAt(key?.range?.[0] ?? 0);
        return visit.BREAK;
      },
    });
    return found;
  }

  /**
   * The library throws plain errors while it expands aliases: an alias with no anchor before it,
   * or aliases that expand too far (the alias bomb). Each becomes a problem at the alias to blame.
   */
  private conversionProblem(error: unknown): InventoryProblem {
    const aliases: Alias[] = [];
    visit(this.doc, { Alias: (_, node) => void aliases.push(node) });
    const at = (node: Alias | undefined) => this.positionAt(node?.range?.[0] ?? 0);
    const message = error instanceof Error ? error.message : String(error);
    const unresolved = /^Unresolved alias[^:]*: (.*)$/.exec(message);
    if (unresolved) {
      const alias = aliases.find((a) => a.source === unresolved[1]);
      return {
        position: at(alias),
        message: `alias *${clipInput(unresolved[1]!)} names no anchor before it`,
        hint: `set &${clipInput(unresolved[1]!)} on a node above, or write the value out`,
      };
    }
    if (/Excessive alias count/.test(message)) {
      // Blame the first alias of a node that itself holds aliases: that is where expansion multiplies.
      const nested = aliases.find((a) => {
        const target = a.resolve(this.doc);
        let inner = false;
        if (target && !isAlias(target)) visit(target as Node, { Alias: () => ((inner = true), visit.BREAK) });
        return inner;
      });
      const alias = nested ?? aliases[0];
      return {
        position: at(alias),
        message: `alias *${clipInput(alias?.source ?? '?')} expands into too many nodes: aliases of aliases multiply (a "billion laughs"), and ibfleet expands at most ${MAX_ALIAS_NODES}`,
        hint: 'write the repeated values out, or alias only small nodes without aliases in them',
      };
    }
    return {
      position: { file: this.file, line: 1, column: 1 },
      message: `cannot read the YAML: ${clipInput(message.split('\n')[0]!, 120)}`,
      hint: 'fix the document; a YAML linter shows the same spot',
    };
  }

  /**
   * The parser only says "Map keys must be unique"; name the map, the repeated key as written and
   * where it first appeared — `16` and `016` are the same key (the same host number) in YAML 1.2.
   */
  private describeDuplicateKey(offset: number): { message: string; hint: string } | undefined {
    const search = (node: unknown, path: YamlPath): { message: string; hint: string } | undefined => {
      if (isSeq(node)) {
        for (const [i, item] of node.items.entries()) {
          const found = search(item, [...path, i]);
          if (found) return found;
        }
      } else if (isMap(node)) {
        for (const [i, pair] of node.items.entries()) {
          const key = pair.key as Node | null;
          if (key?.range?.[0] === offset) {
            const repeated = keyText(key);
            const first = node.items.slice(0, i).find((p) => keyText(p.key) === repeated);
            if (first === undefined) return undefined;
            const firstKey = first.key as Node;
            const written = sourceText(key);
            const firstWritten = sourceText(firstKey);
            const firstAt = firstKey.range ? this.positionAt(firstKey.range[0]) : undefined;
            const where = firstAt
              ? `first at line ${firstAt.line}${firstWritten !== written ? ` as ${firstWritten}` : ''}`
              : 'given earlier';
            return {
              message: `${formatPath(path) || 'the document'}: key ${written} is repeated (${where})`,
              hint: 'each key may appear only once in a map',
            };
          }
          const found = search(pair.value, [...path, keyText(pair.key)]);
          if (found) return found;
        }
      }
      return undefined;
    };
    return search(this.doc.contents, []);
  }

  positionAt(offset: number): SourcePosition {
    const { line, col } = this.lines.linePos(offset);
    return { file: this.file, line, column: col };
  }

  /**
   * The first pair of `map` whose key reads `key`, as a search from the map's start finds it. Each
   * map is indexed on first use (the document is never changed after parse): the checks look up a
   * path per host and field, and a scan of every host for each was quadratic in the hosts.
   */
  private pairOf(map: YAMLMap<unknown, unknown>, key: string): Pair<unknown, unknown> | undefined {
    if (map.items.length <= INDEXED_MAP_SIZE) return map.items.find((p) => isPair(p) && keyText(p.key) === key);
    let index = this.keyIndex.get(map);
    if (index === undefined) {
      index = new Map();
      for (const pair of map.items) {
        const text = keyText(pair.key);
        if (isPair(pair) && !index.has(text)) index.set(text, pair);
      }
      this.keyIndex.set(map, index);
    }
    return index.get(key);
  }

  /** The pair at `path` (the last segment is a key of a map), if present. */
  pairAt(path: YamlPath): Pair<unknown, unknown> | undefined {
    if (path.length === 0) return undefined;
    const parent = this.nodeAt(path.slice(0, -1));
    if (!isMap(parent)) return undefined;
    return this.pairOf(parent, String(path[path.length - 1]));
  }

  nodeAt(path: YamlPath): Node | undefined {
    let node: unknown = this.doc.contents;
    for (const segment of path) {
      if (isMap(node)) {
        node = this.pairOf(node, String(segment))?.value;
      } else if (isSeq(node) && typeof segment === 'number') {
        node = node.items[segment];
      } else {
        return undefined;
      }
    }
    return node as Node | undefined;
  }

  /**
   * Position of the value at `path`, or of its key with `{ key: true }`; falls back to the
   * nearest existing ancestor so a missing field is reported where it should have been.
   */
  position(path: YamlPath, options: { key?: boolean } = {}): SourcePosition {
    for (let depth = path.length; depth >= 0; depth--) {
      const sub = path.slice(0, depth);
      if (options.key && depth === path.length && depth > 0) {
        const pair = this.pairAt(sub);
        const keyNode = pair?.key as Node | undefined;
        if (keyNode?.range) return this.positionAt(keyNode.range[0]);
      }
      const node = this.nodeAt(sub);
      if (node?.range) return this.positionAt(node.range[0]);
    }
    return { file: this.file, line: 1, column: 1 };
  }

  problem(path: YamlPath, message: string, hint?: string, options: { key?: boolean } = {}): InventoryProblem {
    return hint === undefined
      ? { position: this.position(path, options), message }
      : { position: this.position(path, options), message, hint };
  }

  /**
   * The whole number at `path` (its key with `{ key: true }`) when it is not written in plain
   * decimal digits (a minus sign allowed: the range checks say what is wrong with a negative).
   * Anything else — a string, a fraction, no node — is the schema's to judge: undefined.
   */
  notDecimal(path: YamlPath, options: { key?: boolean } = {}): NotDecimal | undefined {
    const node = options.key ? this.pairAt(path)?.key : this.nodeAt(path);
    if (!isScalar(node) || typeof node.value !== 'number' || !Number.isInteger(node.value)) return undefined;
    const written = sourceText(node);
    return DECIMAL.test(written.replace(/^-/, '')) ? undefined : { written, value: node.value };
  }

  /** The problem with the whole number at `path` when it is not written in decimal (notDecimal), else undefined. */
  notDecimalProblem(path: YamlPath): InventoryProblem | undefined {
    const odd = this.notDecimal(path);
    if (!odd) return undefined;
    const meant = Number.isSafeInteger(odd.value) ? `; write ${odd.value} if that is what you mean` : '';
    return this.problem(
      path,
      `${formatPath(path)} = ${clipInput(odd.written)} is not written in decimal (YAML reads it as ${odd.value})`,
      `whole numbers are plain decimal digits${meant}`,
    );
  }

  /**
   * The problem with the number at `path` when it is not written in hex (`0x…`), for values that are
   * hex by nature (a P_Key, named `noun`): YAML reads `pkey: 8002` as decimal 8002 = 0x1f42, never
   * the 0x8002 its writer meant. Digits given as text ("8002") are the same slip. Anything else (a
   * word) is the schema's to judge: undefined.
   */
  notHexProblem(path: YamlPath, noun: string): InventoryProblem | undefined {
    const node = this.nodeAt(path);
    if (!isScalar(node)) return undefined;
    const written =
      typeof node.value === 'number'
        ? sourceText(node)
        : typeof node.value === 'string' && DECIMAL.test(node.value.trim())
          ? node.value.trim()
          : undefined;
    if (written === undefined || HEX.test(written)) return undefined;
    const value = typeof node.value === 'number' ? node.value : Number(written);
    const hex = Number.isSafeInteger(value) && value >= 0 ? `0x${value.toString(16)}` : undefined;
    if (DECIMAL.test(written)) {
      const meant = written.length <= 4 ? `0x${written}` : hex;
      return this.problem(
        path,
        `${formatPath(path)} = ${clipInput(written)} is decimal ${value}${hex ? ` = ${hex}` : ''}`,
        `${noun} is written in hex${meant ? `: ${meant}` : ', e.g. 0x8002'}`,
      );
    }
    return this.problem(
      path,
      `${formatPath(path)} = ${clipInput(written)} is not written in hex (YAML reads it as ${value}${hex ? ` = ${hex}` : ''})`,
      `${noun} is written in hex, e.g. 0x8002`,
    );
  }

  /** The document as plain data, converted once when it was parsed. */
  toJS(): unknown {
    return this.js;
  }
}

/** A key as the user wrote it (`016`, not 16). */
function sourceText(node: unknown): string {
  if (isScalar(node)) return typeof node.source === 'string' ? node.source : String(node.value);
  return String(node);
}

/** A map key as toJS() names it in the plain object, so paths from validation find their node (`~:` is ""). */
function keyText(key: unknown): string {
  const value = isScalar(key) ? key.value : key;
  return value === null || value === undefined ? '' : String(value);
}

/** `hosts.16.interfaces[1]` for messages. */
export function formatPath(path: YamlPath): string {
  return path.reduce<string>(
    (acc, seg) => (typeof seg === 'number' ? `${acc}[${seg}]` : acc ? `${acc}.${seg}` : seg),
    '',
  );
}
