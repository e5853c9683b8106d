/**
 * Inventory text → validated Fleet. Pure: the caller reads the file; every problem found is
 * reported at once, each with file:line:col, and nothing is returned unless all is well.
 */
import { dirname, isAbsolute, resolve } from 'node:path';
import { isMap, isScalar } from 'yaml';
import type { z } from 'zod';
import { clipInput, ConfigError, type InventoryProblem } from '../errors.js';
import {
  MAIN_RULE_PRIORITY,
  MAX_HOST,
  MIN_HOST,
  RESERVED_TABLES,
  deriveNicAddress,
  deriveRulePriority,
  deriveTable,
  nicAddressInSubnet,
} from './derive.js';
import { formatCidr, parseCidr, parseIpv4, type Cidr } from './ipv4.js';
import { foldHosts } from './select.js';
import type { Fleet, Host, HostOverride, Nic, Pair } from './model.js';
import {
  fabricSchema,
  inventorySchema,
  inventorySchemas,
  pairSchema,
  sshSchema,
  type HostInput,
  type InventoryInput,
  type InventorySchemas,
} from './schema.js';
import { DECIMAL, YamlSource, type YamlPath } from './yaml-source.js';
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

/**
 * The fleet, or every problem found. `refusedHosts`: host numbers whose entries the schema already
 * refused (reported there), still known to the checks that name hosts.
 */
function buildFleet(
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

  const hostEntries: { id: number; key: string; raw: HostInput }[] = [];
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
 * The whole numbers of the inventory besides host numbers and pairs (checked with them), under
 * the same rule: plain decimal digits, so `tableBase: 0x10` or `1e3` is a problem at its line,
 * not table 16 or 1000 (yaml-source.ts, notDecimal).
 */
function checkDecimalFields(input: InventoryInput, source: YamlSource, problems: InventoryProblem[]): void {
  const paths: YamlPath[] = [
    ['fabric', 'nics'],
    ['fabric', 'tableBase'],
    ['defaults', 'port'],
    ['defaults', 'nics'],
    ...Object.keys(input.hosts).flatMap((key): YamlPath[] => [
      ['hosts', key, 'port'],
      ['hosts', key, 'nics'],
    ]),
  ];
  for (const path of paths) {
    const problem = source.notDecimalProblem(path);
    if (problem) problems.push(problem);
  }
}

/**
 * The numbers of a step's overrides (`links: { mtu: 2044 }`) under the same rule, in defaults and
 * on every host: plain decimal digits, or `0x…` for the fields the step writes in hex (a P_Key).
 */
function checkOverrideSpelling(
  input: InventoryInput,
  source: YamlSource,
  overrides: readonly HostOverride[],
  problems: InventoryProblem[],
): void {
  const places: YamlPath[] = [['defaults'], ...Object.keys(input.hosts).map((key): YamlPath => ['hosts', key])];
  for (const o of overrides) {
    for (const place of places) {
      for (const field of o.keys) {
        const path: YamlPath = [...place, o.key, field];
        const noun = o.hex?.[field];
        const problem = noun !== undefined ? source.notHexProblem(path, noun) : source.notDecimalProblem(path);
        if (problem) problems.push(problem);
      }
    }
  }
}

/** What to write instead of a host number YAML reads from another spelling (yaml-source.ts, notDecimal). */
function notDecimalHint(value: number): string {
  const meant =
    Number.isInteger(value) && value >= MIN_HOST && value <= MAX_HOST
      ? `; write ${value} if that is the host you mean`
      : '';
  return `host numbers are plain decimal digits ${MIN_HOST}..${MAX_HOST}${meant}`;
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

function checkFabric(
  input: InventoryInput,
  source: YamlSource,
  problems: InventoryProblem[],
): Fleet['fabric'] | undefined {
  const { subnet: subnetText, nics, tableBase, rdma } = input.fabric;
  let subnet: Cidr | undefined;
  const parsed = parseCidr(subnetText);
  if (!parsed) {
    problems.push(
      source.problem(
        ['fabric', 'subnet'],
        `fabric.subnet = ${JSON.stringify(clipInput(subnetText))} is not an IPv4 network`,
        'write it as address/prefix, e.g. 172.16.0.0/16',
      ),
    );
  } else if (parsed.hostBitsSet) {
    problems.push(
      source.problem(
        ['fabric', 'subnet'],
        `fabric.subnet = ${subnetText} has host bits set`,
        `did you mean ${formatCidr(parsed.cidr)}?`,
      ),
    );
  } else if (parsed.cidr.prefixLength > 24) {
    problems.push(
      source.problem(
        ['fabric', 'subnet'],
        `fabric.subnet = ${subnetText} cannot carry the convention <net>.<host>.<nic>`,
        'use a prefix of /24 or shorter; the seeds use 172.16.0.0/16',
      ),
    );
  } else {
    subnet = parsed.cidr;
  }
  return subnet ? { subnet, subnetText, nics, tableBase, rdma } : undefined;
}

/** How many NICs a host has: its own `nics`, else `defaults.nics`, else the fabric's. */
function nicCountOf(raw: HostInput, input: InventoryInput): { count: number; from: 'host' | 'defaults' | 'fabric' } {
  if (raw.nics !== undefined) return { count: raw.nics, from: 'host' };
  if (input.defaults.nics !== undefined) return { count: input.defaults.nics, from: 'defaults' };
  return { count: input.fabric.nics, from: 'fabric' };
}

/**
 * The tables and rule priorities every NIC of the fleet gets (tableBase + n, for n up to the most
 * NICs any host has), checked once at `fabric.tableBase`, the one number that places them all:
 * none may be a table the kernel reserves, and every rule must come before main's. A NIC only some
 * hosts have is named with those hosts: the fabric's own count is not the one to change then. (Two
 * NICs of a host never share a table: n differs.)
 */
function checkTables(
  input: InventoryInput,
  counts: ReadonlyMap<number, number>,
  source: YamlSource,
  problems: InventoryProblem[],
): void {
  const { tableBase, nics: fabricNics } = input.fabric;
  const most = Math.max(fabricNics, ...counts.values());
  const hostsWith = (nic: number): string => {
    const ids = [...counts].filter(([, c]) => c >= nic).map(([id]) => id);
    if (nic <= fabricNics && ids.length === counts.size) return '';
    return ` (host${ids.length === 1 ? '' : 's'} ${foldHosts(ids)} ${ids.length === 1 ? 'has' : 'have'} ${nic} NICs or more)`;
  };
  for (let nic = 1; nic <= most; nic++) {
    const table = deriveTable(tableBase, nic);
    if (RESERVED_TABLES.has(table)) {
      problems.push(
        source.problem(
          ['fabric', 'tableBase'],
          `fabric.tableBase = ${tableBase} puts NIC ${nic} in reserved table ${table}${hostsWith(nic)}`,
          'tables 0, 253 (default), 254 (main) and 255 (local) belong to the kernel; the seeds use 940',
        ),
      );
    }
  }
  // A NIC's rule only works ahead of `32766: from all lookup main`: behind it, main answers first
  // and — with the main-table routes removed — sends the NIC's traffic out of the default route.
  const last = deriveRulePriority(tableBase, most);
  if (last >= MAIN_RULE_PRIORITY) {
    const from = Math.max(1, MAIN_RULE_PRIORITY - tableBase);
    const which = from === most ? `NIC ${most}'s rule` : `the rules of NICs ${from}..${most}`;
    problems.push(
      source.problem(
        ['fabric', 'tableBase'],
        `fabric.tableBase = ${tableBase} puts ${which} at priority ${deriveRulePriority(tableBase, from)}${from === most ? '' : `..${last}`}, at or after the main table's rule (${MAIN_RULE_PRIORITY}): main would answer first${hostsWith(most)}`,
        `rule priorities are tableBase + NIC and must lie strictly between the local rule (0) and main (${MAIN_RULE_PRIORITY}): tableBase at most ${MAIN_RULE_PRIORITY - 1 - most} with ${most} NIC${most === 1 ? '' : 's'}; the seeds use 940`,
      ),
    );
  }
}

/**
 * The interface names of a host's NICs: its own list, else defaults', else ib0, ib1, …. A list
 * whose length is not the host's NIC count is a problem, reported where the fix belongs: at the
 * more specific of the two settings (the host's over defaults' over the fabric's; the list when
 * both are the host's).
 */
function interfacesOf(
  entry: { id: number; key: string; raw: HostInput },
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
  entry: { id: number; key: string; raw: HostInput },
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

function checkAcrossHosts(
  hosts: readonly Host[],
  entries: readonly { id: number; key: string }[],
  source: YamlSource,
  problems: InventoryProblem[],
): void {
  const keyOf = (id: number) => entries.find((e) => e.id === id)!.key;
  const fabricAddresses = new Map<string, string>();
  for (const h of hosts)
    for (const n of h.nics) fabricAddresses.set(n.address, `host ${h.id} NIC ${n.index} (${n.iface})`);
  const names = new Map<string, number>();
  const addresses = new Map<string, number>();
  for (const h of hosts) {
    const key = keyOf(h.id);
    if (h.address !== undefined) {
      const owner = fabricAddresses.get(h.address);
      if (owner !== undefined && parseIpv4(h.address) !== undefined) {
        problems.push(
          source.problem(
            ['hosts', key, 'address'],
            `host ${h.id}: management address ${h.address} is the fabric address of ${owner}`,
            'address is the SSH address on the management network, not an IPoIB address',
          ),
        );
      }
      const other = addresses.get(h.address);
      if (other !== undefined)
        problems.push(
          source.problem(
            ['hosts', key, 'address'],
            `host ${h.id}: address ${clipInput(h.address)} is also host ${other}'s`,
            'each host has its own management address',
          ),
        );
      addresses.set(h.address, h.id);
    }
    const otherName = names.get(h.name);
    if (otherName !== undefined)
      problems.push(
        source.problem(
          ['hosts', key, 'name'],
          `host ${h.id}: name ${h.name} is also host ${otherName}'s`,
          'host names are unique',
        ),
      );
    names.set(h.name, h.id);
  }
}

function checkPairs(
  pairs: InventoryInput['pairs'],
  known: ReadonlySet<number>,
  source: YamlSource,
  problems: InventoryProblem[],
): Pair[] {
  const out: Pair[] = [];
  pairs.forEach((pair, i) => {
    let ok = true;
    for (const field of ['cpu', 'mem'] as const) {
      const odd = source.notDecimal(['pairs', i, field]);
      if (odd) {
        problems.push(
          source.problem(
            ['pairs', i, field],
            `pair of ${pair.owner}: ${field} host ${clipInput(odd.written)} is not written in decimal (YAML reads it as ${pair[field]})`,
            notDecimalHint(pair[field]),
          ),
        );
        ok = false;
      } else if (!known.has(pair[field])) {
        problems.push(
          source.problem(
            ['pairs', i, field],
            `pair of ${pair.owner}: ${field} host ${pair[field]} is not in hosts`,
            `known hosts: ${[...known].sort((a, b) => a - b).join(', ') || 'none'}`,
          ),
        );
        ok = false;
      }
    }
    if (ok && pair.cpu === pair.mem) {
      problems.push(
        source.problem(
          ['pairs', i, 'mem'],
          `pair of ${pair.owner}: cpu and mem are both host ${pair.cpu}`,
          'a pair is two different machines',
        ),
      );
      ok = false;
    }
    if (ok) out.push({ owner: pair.owner, cpu: pair.cpu, mem: pair.mem });
  });
  return out;
}
