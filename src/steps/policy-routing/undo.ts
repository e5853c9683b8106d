/**
 * Taking policy-routing back. Rollback: no rule for a NIC's address or table, the NIC tables
 * empty — and those of an earlier deploy with another tableBase or subnet that the host's ownership
 * record lists (former.ts) —, and the main-table subnet routes back as the kernel adds them (one
 * per NIC that keeps its address, NIC 1 first — the kernel uses the first). The restore after a
 * failed verification: the rules, tables and main-table routes exactly as the probe before the
 * change found them. Pure; what the probe read comes from the host, so every word of it is
 * shell-quoted.
 */
import type { Host } from '../../inventory/model.js';
import { shellCommand, shellQuote } from '../../script/shell.js';
import { change, type Finding, type Restore, type Undo, type FactsContext, type RollbackContext } from '../step.js';
import {
  deleteFormerRules,
  flushFormerTables,
  formerFindings,
  formerRoutingOf,
  formerRules,
  type FormerRouting,
} from './former.js';
import { mainFabricRoutes, routeText, rulesOf } from './routing.js';

function rollbackFindings({ host, fleet, facts, withdrawn }: RollbackContext): Finding[] {
  const findings: Finding[] = [];
  const subnet = fleet.fabric.subnetText;
  const main = (facts.routes.get('main') ?? []).filter((r) => r.dst === subnet);
  for (const nic of host.nics) {
    const rules = rulesOf(facts.rules, nic);
    findings.push({
      id: `rule ${nic.iface}`,
      subject: { kind: 'nic', iface: nic.iface, aspect: 'rule' },
      ok: rules.length === 0,
      detail: rules.length
        ? `${nic.iface}: ${rules.length} rule(s) for ${nic.address} / table ${nic.table} remain`
        : `${nic.iface}: no rules`,
      fix: rules.length
        ? change('rule', 'remove', nic.iface, `${nic.iface}: delete rules from ${nic.address} / lookup ${nic.table}`)
        : undefined,
    });
    const table = facts.routes.get(String(nic.table)) ?? [];
    findings.push({
      id: `table ${nic.iface}`,
      subject: { kind: 'nic', iface: nic.iface, aspect: 'table' },
      ok: table.length === 0,
      detail: table.length
        ? `${nic.iface}: table ${nic.table} still holds routes`
        : `${nic.iface}: table ${nic.table} empty`,
      fix: table.length
        ? change('table-route', 'remove', nic.iface, `${nic.iface}: flush table ${nic.table}`)
        : undefined,
    });
    if (
      !withdrawn.includes(nic.iface) &&
      facts.addresses.some((a) => a.iface === nic.iface && a.address === nic.address)
    ) {
      const back = main.some((r) => r.dev === nic.iface && r.src === nic.address);
      findings.push({
        id: `main ${nic.iface}`,
        subject: { kind: 'nic', iface: nic.iface, aspect: 'main' },
        ok: back,
        detail: back ? `${nic.iface}: main-table route present` : `${nic.iface}: main-table route to ${subnet} missing`,
        fix: back
          ? undefined
          : change('main-route', 'add', nic.iface, `${nic.iface}: restore main-table route ${subnet} dev ${nic.iface}`),
      });
    }
  }
  const order = main.map((r) => r.dev);
  const expected = host.nics.map((n) => n.iface).filter((i) => order.includes(i) && !withdrawn.includes(i));
  const inOrder = order.filter((d) => d !== undefined && expected.includes(d)).join(',') === expected.join(',');
  findings.push({
    id: 'main order',
    subject: { kind: 'host', aspect: 'main order' },
    ok: inOrder,
    detail: inOrder
      ? 'main-table routes in NIC order'
      : `main-table routes to ${subnet} are in order ${order.join(', ')}, the kernel's is ${expected.join(', ')}`,
    fix: inOrder ? undefined : change('main-route', 'reorder', 'main', 'reorder main-table routes'),
  });
  return [...findings, ...formerFindings(host, facts, formerRoutingOf(host, facts), true)];
}

/** Every rule for a NIC's address or table deleted (the routing program's del_rules: there may be several). */
function deleteRules(host: Host): string[] {
  return host.nics.flatMap((nic) => [
    shellCommand(['del_rules', 'from', nic.address]),
    shellCommand(['del_rules', 'lookup', nic.table]),
  ]);
}

/** host/functions/policy-routing.sh: del_main_routes, main_route_back. */
function deleteMainRoutes(host: Host, subnet: string): string[] {
  return host.nics.map((nic) => shellCommand(['del_main_routes', subnet, nic.iface]));
}

/** Neighbour entries learnt under the changed routing may point at the other NIC. */
function flushNeighbours(host: Host): string[] {
  return host.nics.map((n) => `ip neigh flush dev ${shellQuote(n.iface)} 2>/dev/null`);
}

function rollbackLines({ host, fleet, facts }: FactsContext): { kernel: string[] } {
  const former = formerRoutingOf(host, facts);
  return {
    kernel: [
      "# Rules and the NIC tables removed, an earlier deploy's too (its record's).",
      ...deleteRules(host),
      ...host.nics.flatMap((n) => [
        `ip -4 route flush table ${shellQuote(n.table)} 2>/dev/null`,
        `echo ${shellQuote(`ibfleet: ${n.iface}: rules and table ${n.table} removed`)}`,
      ]),
      ...deleteFormerRules(former, true),
      ...flushFormerTables(former.tables),
      '# Main-table routes in NIC order, as the kernel adds them when the addresses come up.',
      ...deleteMainRoutes(host, fleet.fabric.subnetText),
      ...host.nics.map((n) => shellCommand(['main_route_back', fleet.fabric.subnetText, n.iface, n.address])),
      ...flushNeighbours(host),
    ],
  };
}

export const policyRoutingUndo: Undo = { findings: rollbackFindings, lines: rollbackLines };

/** Words `ip` prints about a route or rule but does not take back as input. */
const PRINT_ONLY = new Set([
  'linkdown',
  'dead',
  'offload',
  'trap',
  'offload_failed',
  'rt_offload',
  'rt_trap',
  'rt_offload_failed',
  'pervasive',
  'notify',
  '[detached]',
  'unresolved',
]);

/** A route or rule as the host printed it, as words `ip` takes back, each quoted. */
function words(text: string): string {
  return text
    .split(/\s+/)
    .filter((w) => w !== '' && !PRINT_ONLY.has(w))
    .map(shellQuote)
    .join(' ');
}

/** The source rules a deploy can change: the NICs' own, and an earlier deploy's. */
function touchableRules(
  host: Host,
  facts: FactsContext['facts'],
  former: FormerRouting,
): FactsContext['facts']['rules'] {
  const earlier = new Set(formerRules(facts.rules, former));
  return facts.rules.filter((r) => earlier.has(r) || host.nics.some((n) => rulesOf([r], n).length > 0));
}

/** The tables a deploy can change: the NICs', then an earlier deploy's it empties. */
function touchableTables(host: Host, former: FormerRouting): number[] {
  return [...host.nics.map((n) => n.table), ...former.tables];
}

/**
 * What the change could touch. The earlier deploy's tables and rules are those the record of the
 * probe before the change lists: the change rewrites the record, and the same tables are compared
 * before and after.
 */
function snapshot({ host, fleet, facts }: FactsContext, before: FactsContext['facts'] = facts): [string, string][] {
  const former = formerRoutingOf(host, before);
  const ifaces = new Set(host.nics.map((n) => n.iface));
  return [
    [
      'source rules',
      touchableRules(host, facts, former)
        .map((r) => `${r.priority}: ${r.text}`)
        .join('; ') || '(none)',
    ],
    ...touchableTables(host, former).map((table): [string, string] => [
      `table ${table}`,
      (facts.routes.get(String(table)) ?? []).map((r) => routeText(r.text)).join('; ') || '(empty)',
    ]),
    [
      `main-table routes to ${fleet.fabric.subnetText}`,
      mainFabricRoutes(facts.routes, fleet, ifaces)
        .map((r) => routeText(r.text))
        .join('; ') || '(none)',
    ],
  ];
}

function restoreLines({ host, fleet, facts }: FactsContext): { kernel: string[] } {
  const before = facts;
  const former = formerRoutingOf(host, before);
  const rules = touchableRules(host, before, former);
  const main = mainFabricRoutes(before.routes, fleet, new Set(host.nics.map((n) => n.iface)));
  return {
    kernel: [
      '',
      "# Source rules of the fabric NICs (and an earlier deploy's): all removed, then the ones found before put back.",
      ...deleteRules(host),
      ...deleteFormerRules(former),
      ...rules.map((rule) => `ip -4 rule add ${words(rule.text)} priority ${rule.priority} || status=1`),
      '',
      '# The NIC tables (and those of an earlier deploy the change emptied), as they were.',
      ...touchableTables(host, former).flatMap((table) => [
        `ip -4 route flush table ${table} 2>/dev/null`,
        ...(before.routes.get(String(table)) ?? []).map(
          (r) => `ip -4 route append ${words(routeText(r.text))} table ${table} || status=1`,
        ),
      ]),
      '',
      '# Main-table routes to the fabric subnet, in their order before (the kernel uses the first).',
      ...deleteMainRoutes(host, fleet.fabric.subnetText),
      ...main.map((r) => `ip -4 route append ${words(routeText(r.text))} || status=1`),
      '# Neighbour entries learnt under the changed routing.',
      ...flushNeighbours(host),
    ],
  };
}

export const policyRoutingRestore: Restore = { snapshot, lines: restoreLines };
