/**
 * The inventory's checks that look past one field: the fabric's subnet, whole numbers as written
 * (plain decimal, or hex where a step writes hex), the routing tables and rule priorities the
 * fleet's NIC count places, addresses and names across hosts, and pairs. Each reports every
 * problem it finds at its place in the file and returns nothing else; build-fleet.ts runs them.
 * Pure.
 */
import { clipInput, type InventoryProblem } from '../errors.js';
import { MAIN_RULE_PRIORITY, MAX_HOST, MIN_HOST, RESERVED_TABLES, deriveRulePriority, deriveTable } from './derive.js';
import { formatCidr, parseCidr, parseIpv4, type Cidr } from './ipv4.js';
import type { Fleet, Host, HostOverride, Pair } from './model.js';
import type { InventoryInput } from './schema.js';
import { foldHosts } from './select.js';
import type { YamlPath, YamlSource } from './yaml-source.js';

export function checkFabric(
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

/**
 * The whole numbers of the inventory besides host numbers and pairs (checked with them), under
 * the same rule: plain decimal digits, so `tableBase: 0x10` or `1e3` is a problem at its line,
 * not table 16 or 1000 (yaml-source.ts, notDecimal).
 */
export function checkDecimalFields(input: InventoryInput, source: YamlSource, problems: InventoryProblem[]): void {
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
export function checkOverrideSpelling(
  input: InventoryInput,
  source: YamlSource,
  overrides: readonly HostOverride[],
  problems: InventoryProblem[],
): void {
  const places: YamlPath[] = [['defaults'], ...Object.keys(input.hosts).map((key): YamlPath => ['hosts', key])];
  for (const o of overrides) {
    for (const place of places) {
      // Most hosts set no step's map: where the map is absent, so is each of its fields — one
      // look-up, not one per field (3 ms of every run's start-up at 100 hosts).
      if (source.nodeAt([...place, o.key]) === undefined) continue;
      for (const field of o.keys) {
        const path: YamlPath = [...place, o.key, field];
        const noun = o.hex?.[field];
        const problem = noun !== undefined ? source.notHexProblem(path, noun) : source.notDecimalProblem(path);
        if (problem) problems.push(problem);
      }
    }
  }
}

/**
 * The tables and rule priorities every NIC of the fleet gets (tableBase + n, for n up to the most
 * NICs any host has), checked once at `fabric.tableBase`, the one number that places them all:
 * none may be a table the kernel reserves, and every rule must come before main's. A NIC only some
 * hosts have is named with those hosts: the fabric's own count is not the one to change then. (Two
 * NICs of a host never share a table: n differs.)
 */
export function checkTables(
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

export function checkAcrossHosts(
  hosts: readonly Host[],
  entries: readonly { id: number; key: string }[],
  source: YamlSource,
  problems: InventoryProblem[],
): void {
  // By number, the first entry of each (a search per host would be quadratic in the hosts).
  const keys = new Map<number, string>();
  for (const e of entries) if (!keys.has(e.id)) keys.set(e.id, e.key);
  const keyOf = (id: number) => keys.get(id)!;
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

export function checkPairs(
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

/** What to write instead of a host number YAML reads from another spelling (yaml-source.ts, notDecimal). */
export function notDecimalHint(value: number): string {
  const meant =
    Number.isInteger(value) && value >= MIN_HOST && value <= MAX_HOST
      ? `; write ${value} if that is the host you mean`
      : '';
  return `host numbers are plain decimal digits ${MIN_HOST}..${MAX_HOST}${meant}`;
}
