/**
 * Adding hosts and a pair to an inventory as a person would: new lines spliced into the text,
 * every other byte as it was — comments, key order, blank lines, spacing inside `{ }`, quoting.
 * The YAML Document API finds where things are (splice.ts) and how the existing entries are
 * written (entry-style.ts); the text itself is never re-serialised, because yaml's stringifier would normalise the spacing and
 * comment alignment the file's author chose. Pure: text in, text out; the result is checked with
 * loadInventory (and against the intended data) before anyone writes it.
 */
import { isDeepStrictEqual } from 'node:util';
import { parse, parseDocument, type Document } from 'yaml';
import { BugError, ConfigError } from '../errors.js';
import type { HostEntry, InventoryAddition } from './entry.js';
import { loadInventory } from './load.js';
import type { Fleet, Host, HostOverride, Pair } from './model.js';
import { applyInsertions, hostInsertions, lineOf, pairInsertion } from './splice.js';

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
 * owner who already has another pair, is a conflict and nothing is added. Throws ConfigError
 * when `text` itself is not a valid inventory.
 */
export function planInventoryAddition(
  text: string,
  file: string,
  baseDir: string,
  addition: InventoryAddition,
  overrides: readonly HostOverride[] = [],
): InventoryEdit {
  const fleet = loadInventory(text, file, baseDir, overrides);
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
        conflicts.push(
          `${pair.owner} already has a pair in ${file} (cpu ${other.cpu}, mem ${other.mem}); an owner has one pair — remove that pair first, or onboard under another owner name`,
        );
      }
      for (const other of fleet.pairs.filter((p) => p.owner !== pair.owner)) {
        for (const id of [pair.cpu, pair.mem]) {
          if (other.cpu === id || other.mem === id)
            conflicts.push(
              `host ${id} already belongs to ${other.owner}'s pair (cpu ${other.cpu}, mem ${other.mem}); a machine serves one pair`,
            );
        }
      }
    }
  }
  if (conflicts.length > 0) return { ok: false, conflicts };
  if (newHosts.length === 0 && !addPair)
    return { ok: true, text, fleet, addedHosts: [], addedPair: false, addedLines: [] };

  const insertions = [
    ...hostInsertions(text, doc, newHosts),
    ...(addPair ? [pairInsertion(text, doc, addition.pair!)] : []),
  ];
  const next = applyInsertions(text, insertions);
  checkResult(text, next, newHosts, addPair ? addition.pair : undefined);
  let nextFleet: Fleet;
  try {
    nextFleet = loadInventory(next, file, baseDir, overrides);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    return {
      ok: false,
      conflicts: error.problems.map(
        (p) =>
          `with these entries ${file} would not be valid: line ${p.position.line}: ${p.message}${p.hint ? ` (${p.hint})` : ''}`,
      ),
    };
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
  const defaults = ((doc.toJS() as { defaults?: Record<string, unknown> } | null)?.defaults ?? {}) as {
    interfaces?: string[];
    user?: string;
    manager?: string;
    role?: string;
    nics?: number;
  };
  return {
    // A new host without nics of its own has defaults' count, else the fabric's.
    interfaces:
      defaults.interfaces ??
      Array.from({ length: typeof defaults.nics === 'number' ? defaults.nics : nics }, (_, i) => `ib${i}`),
    user: defaults.user,
    manager: defaults.manager ?? 'auto',
    role: defaults.role,
  };
}

/** A new entry names only what differs from what it would inherit: `interfaces:` only for other names, and so on. */
function withoutInherited(entry: HostEntry, inherit: Inherited): HostEntry {
  const same = (a: readonly string[] | undefined, b: readonly string[]) =>
    a !== undefined && a.length === b.length && a.every((x, i) => x === b[i]);
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
  const differ = (what: string, has: string | undefined, wants: string) =>
    diffs.push(`${what} ${has ?? '(none)'} (onboard would write ${wants})`);
  if (existing.name !== entry.name) differ('name', existing.name, entry.name);
  if (entry.address !== undefined && existing.address !== entry.address)
    differ('address', existing.address, entry.address);
  if (entry.role !== undefined && existing.role !== entry.role) differ('role', existing.role, entry.role);
  const ifaces = existing.nics.map((n) => n.iface);
  if (entry.interfaces !== undefined && !isDeepStrictEqual(ifaces, [...entry.interfaces]))
    differ('interfaces', ifaces.join(', '), entry.interfaces.join(', '));
  if (entry.user !== undefined && (existing.user ?? 'root') !== entry.user)
    differ('user', existing.user ?? 'root', entry.user);
  if (entry.manager !== undefined && existing.manager !== entry.manager)
    differ('manager', existing.manager, entry.manager);
  return diffs;
}

/** The object an entry stands for in the YAML (also what the result is checked against). */
function entryData(entry: HostEntry): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries({
      name: entry.name,
      address: entry.address,
      role: entry.role,
      interfaces: entry.interfaces && [...entry.interfaces],
      user: entry.user,
      manager: entry.manager,
    }).filter(([, v]) => v !== undefined),
  );
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
  if (pair)
    expected.pairs = [
      ...((expected.pairs as unknown[] | undefined) ?? []),
      { owner: pair.owner, cpu: pair.cpu, mem: pair.mem },
    ];
  let actual: unknown;
  try {
    actual = parse(after);
  } catch (error) {
    throw new BugError(`inventory edit produced invalid YAML: ${(error as Error).message}`);
  }
  if (!isDeepStrictEqual(actual, expected)) throw new BugError(`inventory edit produced unexpected data:\n${after}`);
}
