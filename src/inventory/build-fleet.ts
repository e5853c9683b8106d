/**
 * The fleet model from a document the schema accepted: host numbers read from their keys, each
 * host's NICs derived (interface, address, table, rule priority by the convention in derive.ts),
 * step overrides merged over defaults, and relative paths anchored at the inventory. Every check
 * that needs the built hosts runs here too (fleet-checks.ts); nothing is returned unless all pass.
 * Pure.
 */
import { isAbsolute, resolve } from 'node:path';
import { isScalar } from 'yaml';
import { clipInput, type InventoryProblem } from '../errors.js';
import { MAX_HOST, MIN_HOST, deriveNicAddress, deriveRulePriority, deriveTable, nicAddressInSubnet } from './derive.js';
import {
  checkAcrossHosts,
  checkDecimalFields,
  checkFabric,
  checkOverrideSpelling,
  checkPairs,
  checkTables,
  notDecimalHint,
} from './fleet-checks.js';
import type { Fleet, Host, HostOverride, Nic } from './model.js';
import type { HostInput, InventoryInput } from './schema.js';
import { DECIMAL, type YamlPath, type YamlSource } from './yaml-source.js';

/** A host's entry as written: its number, its key in the file (for messages) and its fields. */
export interface HostEntry {
  readonly id: number;
  readonly key: string;
  readonly raw: HostInput;
}

/**
 * The fleet, or every problem found. `refusedHosts`: host numbers whose entries the schema already
 * refused (reported there), still known to the checks that name hosts.
 */
export function buildFleet(
  input: InventoryInput,
  source: YamlSource,
  baseDir: string,
  refusedHosts: ReadonlySet<number>,
  overrides: readonly HostOverride[],
): { fleet?: Fleet; problems: InventoryProblem[] } {
  const problems: InventoryProblem[] = [];
  const fabric = checkFabric(input, source, problems);
  checkDecimalFields(input, source, problems);
  checkOverrideSpelling(input, source, overrides, problems);

  const hostEntries = numberedHosts(input, source, problems);

  const hosts: Host[] = [];
  for (const entry of hostEntries) {
    const host = buildHost(entry, input, fabric, source, problems);
    if (host) hosts.push(withOverrides(host, entry.raw, input.defaults, overrides));
  }
  hosts.sort((a, b) => a.id - b.id);
  checkTables(input, new Map(hostEntries.map((e) => [e.id, nicCountOf(e.raw, input).count])), source, problems);
  checkAcrossHosts(hosts, hostEntries, source, problems);
  // A pair names hosts by number: a host whose entry has problems of its own is still there (its
  // problems are reported at the entry, once), so the pair is checked against every host given —
  // by the numbers written as numbers: a null key (`~:`) reaches here as "" and is no host 0.
  const declared = new Set([
    ...Object.keys(input.hosts)
      .filter((k) => DECIMAL.test(k))
      .map(Number),
    ...refusedHosts,
  ]);
  const pairs = checkPairs(input.pairs, declared, source, problems);

  if (problems.length > 0 || !fabric) return { problems };
  const base = resolve(baseDir);
  const rel = (p: string | undefined) => (p === undefined ? undefined : expandRelative(p, base));
  const fleet: Fleet = {
    file: source.file,
    fabric,
    hosts: hosts.map((h) => ({ ...h, identityFile: rel(h.identityFile) })),
    pairs,
    ssh: {
      knownHosts: rel(input.ssh.knownHosts),
      identityFile: rel(input.ssh.identityFile),
      config: rel(input.ssh.config),
    },
  };
  return { fleet, problems };
}

/**
 * The host entries by number, each number checked as the key is written: plain decimal, within
 * MIN_HOST..MAX_HOST, given once. An entry whose key fails is reported there and left out.
 */
function numberedHosts(input: InventoryInput, source: YamlSource, problems: InventoryProblem[]): HostEntry[] {
  const hostEntries: HostEntry[] = [];
  const seenIds = new Map<number, string>();
  for (const [key, raw] of Object.entries(input.hosts)) {
    const written = writtenScalar(source, ['hosts', key], { key: true }) ?? key;
    const id = DECIMAL.test(written) ? Number(key) : Number.NaN;
    if (source.notDecimal(['hosts', key], { key: true })) {
      problems.push(
        source.problem(
          ['hosts', key],
          `host number ${clipInput(written)} is not written in decimal (YAML reads it as ${key})`,
          notDecimalHint(Number(key)),
          { key: true },
        ),
      );
      continue;
    }
    if (!Number.isInteger(id) || id < MIN_HOST || id > MAX_HOST) {
      const message =
        scalarValue(source, ['hosts', key], { key: true }) === null
          ? `host key ${written || '(empty)'} is null, not a host number ${MIN_HOST}..${MAX_HOST}`
          : `host number ${JSON.stringify(clipInput(written))} is outside ${MIN_HOST}..${MAX_HOST}`;
      problems.push(
        source.problem(['hosts', key], message, "it is the third octet of the host's fabric addresses", { key: true }),
      );
      continue;
    }
    const earlier = seenIds.get(id);
    if (earlier !== undefined) {
      problems.push(
        source.problem(
          ['hosts', key],
          `host number ${JSON.stringify(key)} is repeated: it is host ${id}, already given as ${earlier}`,
          'each host number appears once',
          { key: true },
        ),
      );
      continue;
    }
    seenIds.set(id, key);
    hostEntries.push({ id, key, raw: raw ?? {} });
  }
  return hostEntries;
}

/** The scalar at `path` (its key with `{ key: true }`) as written in the file, quotes removed. */
function writtenScalar(source: YamlSource, path: YamlPath, options: { key?: boolean } = {}): string | undefined {
  const node = options.key ? source.pairAt(path)?.key : source.nodeAt(path);
  if (!isScalar(node)) return undefined;
  return typeof node.source === 'string' ? node.source : String(node.value);
}

function scalarValue(source: YamlSource, path: YamlPath, options: { key?: boolean } = {}): unknown {
  const node = options.key ? source.pairAt(path)?.key : source.nodeAt(path);
  return isScalar(node) ? node.value : undefined;
}

/** Paths in an inventory are relative to the inventory file; `~` is left for the SSH layer. */
function expandRelative(path: string, base: string): string {
  return path.startsWith('~') || isAbsolute(path) ? path : resolve(base, path);
}

/** How many NICs a host has: its own `nics`, else `defaults.nics`, else the fabric's. */
function nicCountOf(raw: HostInput, input: InventoryInput): { count: number; from: 'host' | 'defaults' | 'fabric' } {
  if (raw.nics !== undefined) return { count: raw.nics, from: 'host' };
  if (input.defaults.nics !== undefined) return { count: input.defaults.nics, from: 'defaults' };
  return { count: input.fabric.nics, from: 'fabric' };
}

/**
 * The interface names of a host's NICs: its own list, else defaults', else ib0, ib1, …. A list
 * whose length is not the host's NIC count is a problem, reported where the fix belongs: at the
 * more specific of the two settings (the host's over defaults' over the fabric's; the list when
 * both are the host's).
 */
function interfacesOf(
  entry: HostEntry,
  input: InventoryInput,
  source: YamlSource,
  problems: InventoryProblem[],
): { interfaces: string[]; count: number } {
  const { id, key, raw } = entry;
  const d = input.defaults;
  const { count, from } = nicCountOf(raw, input);
  const listed = raw.interfaces !== undefined ? 'host' : d.interfaces !== undefined ? 'defaults' : undefined;
  const interfaces = raw.interfaces ?? d.interfaces ?? Array.from({ length: count }, (_, i) => `ib${i}`);
  if (interfaces.length !== count) {
    const countText = from === 'host' ? `its nics is ${count}` : `${from}.nics is ${count}`;
    if (from === 'host' && listed === 'defaults') {
      problems.push(
        source.problem(
          ['hosts', key, 'nics'],
          `host ${id} has nics: ${count} but inherits ${interfaces.length} interface(s) from defaults.interfaces`,
          `give host ${id} its own interfaces: one per NIC, NIC 1 first`,
        ),
      );
    } else {
      const where: YamlPath = listed === 'host' ? ['hosts', key, 'interfaces'] : ['defaults', 'interfaces'];
      problems.push(
        source.problem(
          where,
          `host ${id} lists ${interfaces.length} interface(s) but ${countText}`,
          'list one interface per NIC, NIC 1 first',
        ),
      );
    }
  }
  const dup = interfaces.find((name, i) => interfaces.indexOf(name) !== i);
  if (dup !== undefined) {
    problems.push(
      source.problem(
        listed === 'host' ? ['hosts', key, 'interfaces'] : ['defaults', 'interfaces'],
        `host ${id} lists interface ${dup} twice`,
        'each NIC has its own interface',
      ),
    );
  }
  return { interfaces, count };
}

function buildHost(
  entry: HostEntry,
  input: InventoryInput,
  fabric: Fleet['fabric'] | undefined,
  source: YamlSource,
  problems: InventoryProblem[],
): Host | undefined {
  const { id, key, raw } = entry;
  const d = input.defaults;
  const before = problems.length;

  if (raw.name === undefined && raw.address === undefined) {
    problems.push(
      source.problem(
        ['hosts', key],
        `host ${id} has neither name nor address`,
        'give its management address (address:) or a name SSH can resolve (name:)',
        { key: true },
      ),
    );
  }
  const { interfaces, count: nicCount } = interfacesOf(entry, input, source, problems);
  if (fabric) {
    for (let nic = 1; nic <= nicCount; nic++) {
      if (!nicAddressInSubnet(fabric.subnet, id, nic)) {
        problems.push(
          source.problem(
            ['hosts', key],
            `host ${id}: NIC ${nic} would be ${deriveNicAddress(fabric.subnet, id, nic)}, outside fabric subnet ${fabric.subnetText}`,
            'widen fabric.subnet or renumber the host',
            { key: true },
          ),
        );
        break;
      }
    }
  }
  if (problems.length > before || !fabric) return undefined;

  const nics: Nic[] = interfaces.map((iface, i) => ({
    index: i + 1,
    iface,
    address: deriveNicAddress(fabric.subnet, id, i + 1),
    prefixLength: fabric.subnet.prefixLength,
    table: deriveTable(fabric.tableBase, i + 1),
    priority: deriveRulePriority(fabric.tableBase, i + 1),
  }));
  return {
    id,
    name: raw.name ?? `host${id}`,
    target: raw.address ?? raw.name!,
    address: raw.address,
    role: raw.role ?? d.role,
    user: raw.user ?? d.user,
    port: raw.port ?? d.port,
    sudo: raw.sudo ?? d.sudo,
    manager: raw.manager ?? d.manager ?? 'auto',
    identityFile: raw.identityFile ?? d.identityFile,
    nics,
  };
}

/** The host's step overrides: each key's fields from defaults, then the host's own over them. */
function withOverrides(
  host: Host,
  raw: HostInput,
  defaults: InventoryInput['defaults'],
  overrides: readonly HostOverride[],
): Host {
  const given = overrides.flatMap((o) => {
    const [base, own] = [defaults[o.key], raw[o.key]] as (Readonly<Record<string, unknown>> | undefined)[];
    return base === undefined && own === undefined ? [] : [[o.key, { ...base, ...own }] as const];
  });
  return given.length ? { ...host, overrides: Object.fromEntries(given) } : host;
}
