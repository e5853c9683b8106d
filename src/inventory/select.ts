/**
 * Host selection and folding, NodeSet-style: `16,34`, `16-20`, `memserver34`, `@cpu`,
 * `pair:alice`, `all` → a sorted set of host numbers; and back to `16-20,34` for display.
 */
import { UsageError } from '../errors.js';
import { MAX_HOST, MIN_HOST } from './derive.js';
import { closestWord } from './did-you-mean.js';
import type { Fleet } from './model.js';

export function parseHostSelection(expression: string, fleet: Fleet): number[] {
  const known = new Set(fleet.hosts.map((h) => h.id));
  const selected = new Set<number>();
  const fragments = expression.split(',').map((f) => f.trim());
  if (fragments.every((f) => f === ''))
    throw new UsageError('--hosts is empty; give host numbers, ranges, names, @role, pair:OWNER or all');
  for (const fragment of fragments) {
    if (fragment === '')
      throw new UsageError(
        `--hosts ${JSON.stringify(expression)} has an empty item; separate items with single commas`,
      );
    for (const id of resolveFragment(fragment, fleet, known)) selected.add(id);
  }
  return [...selected].sort((a, b) => a - b);
}

/** How one comma-separated item of --hosts is read: every form but `name` is a selection of its own. */
export function fragmentForm(fragment: string): 'all' | 'number' | 'range' | 'role' | 'pair' | 'name' {
  if (fragment === 'all') return 'all';
  if (/^\d+$/.test(fragment)) return 'number';
  if (/^\d+-\d+$/.test(fragment)) return 'range';
  if (fragment.startsWith('@')) return 'role';
  if (fragment.startsWith('pair:')) return 'pair';
  return 'name';
}

/**
 * A name --hosts would not read as that name: a number, a range, `all`, `@role`, `pair:owner`, or
 * text the list splits or trims (a comma, surrounding white space). A host called so could not be
 * selected by its name — `--hosts 16` is host 16 whatever is named `16` — so onboard does not take
 * a machine's hostname that reads this way.
 */
export function readsAsSelection(name: string): boolean {
  return name === '' || name.trim() !== name || name.includes(',') || fragmentForm(name) !== 'name';
}

function resolveFragment(fragment: string, fleet: Fleet, known: ReadonlySet<number>): number[] {
  const form = fragmentForm(fragment);
  if (form === 'all') return [...known];
  if (form === 'number') return [requireKnown(Number(fragment), fragment, fleet, known)];
  if (form === 'range') {
    const [from, to] = fragment.split('-').map(Number) as [number, number];
    if (from > to) throw new UsageError(`--hosts range ${fragment} runs backwards; write ${to}-${from}`);
    // Checked before expanding: a slip like 16-2000000 must be a usage error, not millions of ids.
    if (from < MIN_HOST || to > MAX_HOST) {
      throw new UsageError(
        `--hosts range ${fragment} goes outside ${MIN_HOST}..${MAX_HOST}, the possible host numbers${hintKnown(fleet)}`,
      );
    }
    const ids: number[] = [];
    for (let id = from; id <= to; id++) ids.push(id);
    const missing = ids.filter((id) => !known.has(id));
    if (missing.length > 0) {
      throw new UsageError(
        `--hosts range ${fragment} includes host${missing.length > 1 ? 's' : ''} ${foldHosts(missing)} not in ${fleet.file}${hintKnown(fleet)}`,
      );
    }
    return ids;
  }
  if (form === 'role') {
    const role = fragment.slice(1);
    const ids = fleet.hosts.filter((h) => h.role === role).map((h) => h.id);
    if (ids.length === 0) {
      const roles = [...new Set(fleet.hosts.map((h) => h.role).filter((r): r is string => r !== undefined))].sort();
      throw new UsageError(
        `--hosts ${fragment}: no host has role ${role}${suggest(role, roles, (r) => `@${r}`)}${roles.length ? ` (roles: ${roles.map((r) => `@${r}`).join(', ')})` : ''}`,
      );
    }
    return ids;
  }
  if (form === 'pair') {
    const owner = fragment.slice(5);
    const pairs = fleet.pairs.filter((p) => p.owner === owner);
    if (pairs.length === 0) {
      const owners = [...new Set(fleet.pairs.map((p) => p.owner))].sort();
      throw new UsageError(
        `--hosts ${fragment}: no pair belongs to ${owner}${suggest(owner, owners, (o) => `pair:${o}`)}${owners.length ? ` (owners: ${owners.join(', ')})` : ''}`,
      );
    }
    return pairs.flatMap((p) => [p.cpu, p.mem]);
  }
  const byName = fleet.hosts.find((h) => h.name === fragment);
  if (byName) return [byName.id];
  const meant = meantForm(fragment, fleet);
  if (meant !== undefined) throw new UsageError(`--hosts ${JSON.stringify(fragment)}: ${meant}`);
  throw new UsageError(
    `--hosts ${fragment}: no such host in ${fleet.file}${suggest(
      fragment,
      fleet.hosts.map((h) => h.name),
      (n) => n,
    )}${hintKnown(fleet)}`,
  );
}

/**
 * An item that is no host's name but plainly meant another form: a role or an owner without its
 * `@` / `pair:`, items split by spaces, a range with an end missing. The next step, or undefined.
 */
function meantForm(fragment: string, fleet: Fleet): string | undefined {
  const spacedRange = /^(\d+)\s*-\s*(\d+)$/.exec(fragment);
  if (spacedRange) return `a range is written without spaces: write ${spacedRange[1]}-${spacedRange[2]}`;
  if (/\s/.test(fragment)) {
    return `items are separated by commas, not spaces: write ${fragment
      .split(/[\s,]+/)
      .filter(Boolean)
      .join(',')}`;
  }
  if (/^\d+-$|^-\d+$|^\d+-\d+(-\d*)+$|^\d+--+\d+$/.test(fragment)) {
    return `a range is written FROM-TO with both ends, e.g. 16-20${hintKnown(fleet)}`;
  }
  if (fleet.hosts.some((h) => h.role === fragment))
    return `no host is named ${fragment}, but it is a role: write @${fragment}`;
  if (fleet.pairs.some((p) => p.owner === fragment))
    return `no host is named ${fragment}, but pairs belong to ${fragment}: write pair:${fragment}`;
  return undefined;
}

function requireKnown(id: number, fragment: string, fleet: Fleet, known: ReadonlySet<number>): number {
  if (known.has(id)) return id;
  const nearest = [...known].sort((a, b) => Math.abs(a - id) - Math.abs(b - id) || a - b).slice(0, 2);
  const closest = nearest.length
    ? `; closest: ${nearest
        .sort((a, b) => a - b)
        .map((n) => `${n} (${fleet.hosts.find((h) => h.id === n)!.name})`)
        .join(', ')}`
    : '';
  throw new UsageError(`--hosts ${fragment}: host ${id} is not in ${fleet.file}${closest}`);
}

function hintKnown(fleet: Fleet): string {
  return fleet.hosts.length ? ` (known: ${foldHosts(fleet.hosts.map((h) => h.id))})` : ' (it has no hosts)';
}

function suggest(word: string, candidates: readonly string[], show: (c: string) => string): string {
  const best = closestWord(word, candidates);
  return best === undefined ? '' : `; did you mean ${show(best)}?`;
}

/** `[16,17,18,19,20,34]` → `16-20,34`. Input need not be sorted or unique. */
export function foldHosts(ids: Iterable<number>): string {
  const sorted = [...new Set(ids)].sort((a, b) => a - b);
  const parts: string[] = [];
  for (let i = 0; i < sorted.length;) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === sorted[j]! + 1) j++;
    parts.push(j === i ? `${sorted[i]}` : `${sorted[i]}-${sorted[j]}`);
    i = j + 1;
  }
  return parts.join(',');
}
