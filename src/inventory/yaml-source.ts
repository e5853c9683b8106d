/**
 * YAML with positions: parse a document once, then find the line and column of any path in it so
 * every validation problem can name file:line:col. Shared by the inventory and the playbooks.
 */
import { isMap, isPair, isScalar, isSeq, LineCounter, parseDocument, type Document, type Node, type Pair } from 'yaml';
import { InventoryError, type InventoryProblem, type SourcePosition } from '../errors.js';

export type YamlPath = readonly (string | number)[];

export class YamlSource {
  readonly file: string;
  readonly doc: Document.Parsed;
  private readonly lines: LineCounter;

  private constructor(file: string, doc: Document.Parsed, lines: LineCounter) {
    this.file = file;
    this.doc = doc;
    this.lines = lines;
  }

  /** Parses `text`; malformed YAML (including duplicate keys) throws an InventoryError with positions. */
  static parse(text: string, file: string): YamlSource {
    const lines = new LineCounter();
    const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
    const source = new YamlSource(file, doc, lines);
    if (doc.errors.length > 0) {
      throw new InventoryError(
        doc.errors.map((e) => ({
          position: source.positionAt(e.pos[0]),
          message: `invalid YAML: ${e.message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '')}`,
          hint: 'fix the syntax; a YAML linter shows the same spot',
        })),
      );
    }
    return source;
  }

  positionAt(offset: number): SourcePosition {
    const { line, col } = this.lines.linePos(offset);
    return { file: this.file, line, column: col };
  }

  /** The pair at `path` (the last segment is a key of a map), if present. */
  pairAt(path: YamlPath): Pair<unknown, unknown> | undefined {
    if (path.length === 0) return undefined;
    const parent = this.nodeAt(path.slice(0, -1));
    if (!isMap(parent)) return undefined;
    const last = String(path[path.length - 1]);
    return parent.items.find((p) => isPair(p) && keyText(p.key) === last) as Pair<unknown, unknown> | undefined;
  }

  nodeAt(path: YamlPath): Node | undefined {
    let node: unknown = this.doc.contents;
    for (const segment of path) {
      if (isMap(node)) {
        const pair = node.items.find((p) => keyText(p.key) === String(segment));
        node = pair?.value;
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

  toJS(): unknown {
    return this.doc.toJS({ maxAliasCount: 100 });
  }
}

function keyText(key: unknown): string | undefined {
  if (isScalar(key)) return String(key.value);
  return key === null || key === undefined ? undefined : String(key);
}

/** `hosts.16.interfaces[1]` for messages. */
export function formatPath(path: YamlPath): string {
  return path.reduce<string>((acc, seg) => (typeof seg === 'number' ? `${acc}[${seg}]` : acc ? `${acc}.${seg}` : seg), '');
}
