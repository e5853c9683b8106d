/**
 * What a fabric NIC's routing is, in the kernel's words: the subnet route in the NIC's own table
 * with the NIC's address as source, one rule sending that address to the table, and — with
 * `mainRoutes: remove` — no fabric route through the NIC in the main table. The other steps that
 * realise or check this routing (persistence in a manager's configuration) compare with these. Pure.
 */
import type { Fleet, Nic } from '../../inventory/model.js';
import { normalizeLine, type RouteFact, type RuleFact } from '../../facts/ip-facts.js';

/** The NIC aspects policy-routing checks (Subject.aspect): a step that makes them reads its failures by these. */
export const ROUTING_ASPECTS = { table: 'table', rule: 'rule', main: 'main' } as const;

export function expectedTableRoute(fleet: Fleet, nic: Nic): string {
  return `${fleet.fabric.subnetText} dev ${nic.iface} proto kernel scope link src ${nic.address}`;
}

export function expectedRule(nic: Nic): string {
  return `${nic.priority}: from ${nic.address} lookup ${nic.table}`;
}

/**
 * A NIC's table route as a manager makes it: the subnet through the NIC with its address as source,
 * in scope link — whatever protocol (NetworkManager: kernel, networkd: static) and metric it carries.
 */
export function isManagedTableRoute(route: RouteFact, fleet: Fleet, nic: Nic): boolean {
  return (
    route.dst === fleet.fabric.subnetText &&
    route.dev === nic.iface &&
    route.src === nic.address &&
    route.scope === 'link'
  );
}

/** A NIC's rule as a manager makes it: `from ADDR lookup T` at its priority, `proto static` allowed. */
export function isManagedRule(rule: RuleFact, nic: Nic): boolean {
  return (
    rule.priority === nic.priority &&
    normalizeLine(rule.text).replace(/ proto \S+$/, '') === `from ${nic.address} lookup ${nic.table}`
  );
}

/** Rules that send a NIC's address somewhere or look up its table. */
export function rulesOf(rules: readonly RuleFact[], nic: Nic): RuleFact[] {
  return rules.filter((r) => r.from === nic.address || r.table === String(nic.table));
}

/** `linkdown` comes and goes with the carrier; it is no part of a route's identity. */
export function routeText(text: string): string {
  return text.replace(/ linkdown\b/, '');
}

/** Main-table routes to the fabric subnet through one of `ifaces`, in the kernel's order. */
export function mainFabricRoutes(
  routes: ReadonlyMap<string, readonly RouteFact[]>,
  fleet: Fleet,
  ifaces: ReadonlySet<string>,
): RouteFact[] {
  return (routes.get('main') ?? []).filter(
    (r) => r.dst === fleet.fabric.subnetText && r.dev !== undefined && ifaces.has(r.dev),
  );
}
