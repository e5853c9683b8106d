/**
 * Inventory text → validated Fleet. Pure: the caller reads the file; every problem found is
 * reported at once, each with file:line:col, and nothing is returned unless all is well. This
 * module reads the document (YAML, then the schema) and gathers the problems; the model is built
 * and checked in build-fleet.ts.
 */
import { dirname } from 'node:path';
import { isMap } from 'yaml';
import type * as z from 'zod';
import { ConfigError, type InventoryProblem } from '../errors.js';
import { buildFleet } from './build-fleet.js';
import type { Fleet, HostOverride } from './model.js';
import {
  fabricSchema,
  inventorySchema,
  inventorySchemas,
  pairSchema,
  sshSchema,
  type InventorySchemas,
} from './schema.js';
import { YamlSource, type YamlPath } from './yaml-source.js';
import { issuesToProblems } from './zod-problems.js';

const TOP_KEYS = Object.keys(inventorySchema.shape);

function allowedKeys(schemas: InventorySchemas): (path: YamlPath) => readonly string[] | undefined {
  return (path) => {
    if (path.length === 0) return TOP_KEYS;
    const [top] = path;
    if (top === 'fabric') return Object.keys(fabricSchema.shape);
    // A step's override (`links:`), under a host or defaults.
    const override = schemas.overrides.find((o) => o.key === path[top === 'hosts' ? 2 : 1]);
    if (override && (top === 'defaults' ? path.length === 2 : top === 'hosts' && path.length === 3))
      return override.keys;
    if (top === 'defaults') return schemas.defaults.keys;
    if (top === 'hosts' && path.length === 2) return schemas.host.keys;
    if (top === 'pairs') return Object.keys(pairSchema.shape);
    if (top === 'ssh') return Object.keys(sshSchema.shape);
    return undefined;
  };
}

/**
 * `file` names the inventory in messages; `baseDir` (default: its directory) anchors the relative
 * paths it contains, so the caller can resolve them against its own working directory.
 * `overrides`: the settings steps let a host override (the registry's HOST_OVERRIDES); a key
 * none of them names is unknown, as any other.
 */
export function loadInventory(
  text: string,
  file: string,
  baseDir: string = dirname(file),
  overrides: readonly HostOverride[] = [],
): Fleet {
  const source = YamlSource.parse(text, file, 'inventory');
  if (!isMap(source.doc.contents)) {
    throw new ConfigError('inventory', [
      source.problem(
        [],
        'an inventory is a YAML map with fabric, defaults, hosts and pairs',
        'start from inventory/fleet.yaml',
      ),
    ]);
  }
  const schemas = inventorySchemas(overrides);
  const raw = source.toJS();
  const parsed = schemas.inventory.safeParse(raw);
  if (parsed.success) {
    const built = buildFleet(parsed.data, source, baseDir, new Set(), overrides);
    if (built.fleet) return built.fleet;
    throw new ConfigError('inventory', inFileOrder(built.problems));
  }
  // Every independent problem in one pass: what the schema refused is set aside (unknown keys
  // dropped, a refused host or pair left out but still known by its number), and the rest is
  // checked as usual, so an unknown key does not hide a pair naming a missing host.
  const problems = issuesToProblems(parsed.error.issues, source, allowedKeys(schemas));
  const rest = setAside(raw, parsed.error.issues);
  const reparsed = rest && schemas.inventory.safeParse(rest.input);
  if (rest && reparsed?.success)
    problems.push(...buildFleet(reparsed.data, source, baseDir, rest.refusedHosts, overrides).problems);
  throw new ConfigError('inventory', inFileOrder(unique(problems)));
}

function unique(problems: readonly InventoryProblem[]): InventoryProblem[] {
  const seen = new Set<string>();
  return problems.filter((p) => {
    const key = `${p.position.line}:${p.position.column}:${p.message}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/**
 * The document without what the schema refused: unknown keys removed, hosts and pairs with a
 * refused field left out (the numbers of such hosts are kept: a pair naming one is not "unknown").
 * Undefined when a refusal is in fabric, defaults or ssh: every host depends on those.
 */
function setAside(
  raw: unknown,
  issues: readonly z.core.$ZodIssue[],
): { input: unknown; refusedHosts: Set<number> } | undefined {
  if (raw === null || typeof raw !== 'object') return undefined;
  const input = structuredClone(raw) as Record<string, unknown>;
  const refusedHosts = new Set<number>();
  const droppedPairs = new Set<number>();
  for (const issue of issues) {
    const path = issue.path.map((p) => (typeof p === 'symbol' ? String(p) : p));
    if (issue.code === 'unrecognized_keys') {
      const parent = path.reduce<unknown>(
        (node, key) =>
          node !== null && typeof node === 'object' ? (node as Record<string | number, unknown>)[key] : undefined,
        input,
      );
      if (parent !== null && typeof parent === 'object')
        for (const key of issue.keys) delete (parent as Record<string, unknown>)[key];
      continue;
    }
    const [top, second] = path;
    const hosts = input.hosts;
    if (top === 'hosts' && second !== undefined && hosts !== null && typeof hosts === 'object') {
      delete (hosts as Record<string, unknown>)[String(second)];
      if (/^[0-9]+$/.test(String(second))) refusedHosts.add(Number(second));
    } else if (top === 'pairs' && typeof second === 'number') droppedPairs.add(second);
    else return undefined;
  }
  if (Array.isArray(input.pairs)) input.pairs = input.pairs.filter((_, i) => !droppedPairs.has(i));
  return { input, refusedHosts };
}

/** Problems are found schema-first, check by check; the user reads them top to bottom. */
function inFileOrder(problems: readonly InventoryProblem[]): InventoryProblem[] {
  return [...problems].sort((a, b) => a.position.line - b.position.line || a.position.column - b.position.column);
}
