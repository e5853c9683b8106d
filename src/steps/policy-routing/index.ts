/**
 * The `policy-routing` step, the one every playbook builds on: per fabric NIC the subnet route in
 * its own table (tableBase + n) with the NIC's address as source, one rule `from ADDR lookup T` at a
 * fixed priority, and the kernel's duplicate main-table routes removed (`mainRoutes: remove`, the
 * seeds' choice) or kept. Without it the kernel answers every peer through NIC 1 and anything bound
 * to NIC 2 fails (rping: RDMA_CM_EVENT_REJECTED).
 *
 * The routing script makes this state exactly; where a manager makes it (native persistence), the
 * shapes it gives are accepted (a `proto static` rule, a metric on the route). Pure.
 */
import * as z from 'zod';
import type { Nic } from '../../inventory/model.js';
import { factOf } from '../../facts/host-facts.js';
import { normalizeLine } from '../../facts/ip-facts.js';
import { shellQuote } from '../../script/shell.js';
import type { RenderedFile } from '../../script/rendered-file.js';
import { change, nicFinding, isAbout, type Finding, type HostContext, type StepModule } from '../step.js';
import { formerFindings, formerRoutingOf, removeFormer } from './former.js';
import { OWNED_FACT, OWNED_PATH, ownedRecordFile } from './owned-record.js';
import {
  expectedRule,
  expectedTableRoute,
  isManagedRule,
  isManagedTableRoute,
  ROUTING_ASPECTS,
  rulesOf,
} from './routing.js';
import { policyRoutingRestore, policyRoutingUndo } from './undo.js';

const params = z.strictObject({
  mainRoutes: z
    .enum(['remove', 'keep'], { error: "mainRoutes is remove (the seeds' choice) or keep" })
    .default('remove'),
});

export type PolicyRoutingParams = z.infer<typeof params>;

/** Who makes the routing on the host, in the words the plan uses. */
const MANAGER_NAME = { networkmanager: 'NetworkManager', netplan: 'systemd-networkd' } as const;

/**
 * The routing script flushes a NIC's table before it adds the route: routes someone else put
 * there go, and the plan must say so rather than read as a plain addition.
 */
function flushNote(foreign: readonly string[]): string {
  if (foreign.length === 0) return '';
  const shown = foreign.slice(0, 3).join('; ');
  const more = foreign.length > 3 ? `; and ${foreign.length - 3} more` : '';
  return ` (flushes the table first, removing ${foreign.length === 1 ? 'the route' : `${foreign.length} routes`} found there: ${shown}${more})`;
}

function tableFinding(ctx: HostContext, nic: Nic): Finding {
  const { fleet, facts, persistence } = ctx;
  const want = expectedTableRoute(fleet, nic);
  const routes = facts.routes.get(String(nic.table)) ?? [];
  const table = routes.map((r) => r.text.replace(/ linkdown\b/, ''));
  // A manager makes the route its own way (protocol, metric); the routing script makes exactly `want`.
  const ok =
    table.length === 1 &&
    (persistence.kind === 'script' ? table[0] === want : isManagedTableRoute(routes[0]!, fleet, nic));
  const by =
    persistence.kind === 'script'
      ? flushNote(table.filter((r) => r !== want))
      : `, by ${MANAGER_NAME[persistence.kind]}`;
  return nicFinding(
    nic,
    ROUTING_ASPECTS.table,
    `table ${nic.iface}`,
    ok,
    ok
      ? `${nic.iface}: table ${nic.table} routes ${fleet.fabric.subnetText} via ${nic.iface}`
      : table.length === 0
        ? `${nic.iface}: table ${nic.table} is empty (missing table route)`
        : `${nic.iface}: table ${nic.table} holds ${table.join('; ')}`,
    change(
      'table-route',
      'add',
      nic.iface,
      `${nic.iface}: table ${nic.table} ← ${fleet.fabric.subnetText} src ${nic.address}${by}`,
    ),
  );
}

function ruleFinding(ctx: HostContext, nic: Nic): Finding {
  const related = rulesOf(ctx.facts.rules, nic);
  const ruleText = (r: (typeof related)[number]) => `${r.priority}: ${r.text}`;
  const want = expectedRule(nic);
  const ok =
    related.length === 1 &&
    (ctx.persistence.kind === 'script'
      ? normalizeLine(ruleText(related[0]!)) === want
      : isManagedRule(related[0]!, nic));
  const detail = ok
    ? `${nic.iface}: rule ${want}`
    : related.length === 0
      ? `${nic.iface}: rule from ${nic.address} is missing`
      : related.length > 1 && related.every((r) => r.from === nic.address && r.table === String(nic.table))
        ? `${nic.iface}: ${related.length} duplicate rules from ${nic.address} (${related.map((r) => r.priority).join(', ')})`
        : `${nic.iface}: rules for ${nic.address} / table ${nic.table} are ${related.map(ruleText).join('; ')}`;
  return nicFinding(
    nic,
    ROUTING_ASPECTS.rule,
    `rule ${nic.iface}`,
    ok,
    detail,
    change(
      'rule',
      related.length ? 'replace' : 'add',
      nic.iface,
      `${nic.iface}: rule ${want}${related.length ? ` (replacing ${related.length})` : ''}`,
    ),
  );
}

function mainFinding(ctx: HostContext, nic: Nic): Finding {
  const subnet = ctx.fleet.fabric.subnetText;
  const inMain = (ctx.facts.routes.get('main') ?? []).filter((r) => r.dst === subnet && r.dev === nic.iface);
  const ok = inMain.length === 0;
  return nicFinding(
    nic,
    ROUTING_ASPECTS.main,
    `main ${nic.iface}`,
    ok,
    ok ? `${nic.iface}: no main-table route to ${subnet}` : `${nic.iface}: main-table route to ${subnet} is back`,
    change('main-route', 'remove', nic.iface, `${nic.iface}: remove main-table route ${subnet} dev ${nic.iface}`),
  );
}

/** The main table is checked where main routes go: netplan cannot keep the kernel's route out of it; NetworkManager moves it to the NIC's table. */
function checksMain(ctx: HostContext, mainRoutes: PolicyRoutingParams['mainRoutes']): boolean {
  if (ctx.persistence.kind === 'netplan') return false;
  return ctx.persistence.kind === 'networkmanager' || mainRoutes === 'remove';
}

function notes(ctx: HostContext, mainRoutes: PolicyRoutingParams['mainRoutes']): string[] {
  if (ctx.persistence.kind === 'netplan' && mainRoutes === 'remove') {
    return [
      `netplan cannot keep the kernel's subnet route out of the main table, so mainRoutes: remove does not apply here; the source rules (priority ${ctx.host.nics.map((n) => n.priority).join(', ')}) come before main, so each NIC's traffic still leaves through it`,
    ];
  }
  if (ctx.persistence.kind === 'networkmanager' && mainRoutes === 'keep') {
    return [
      "NetworkManager puts each NIC's subnet route into the NIC's table, so main keeps none (mainRoutes: keep does not apply to native persistence)",
    ];
  }
  return [];
}

/** Where NetworkManager makes the routing, a main-table route it left behind is taken away directly (no manager does it). */
function removeStrayMainRoutes(ctx: HostContext, failing: readonly Finding[]): string[] {
  if (ctx.persistence.kind !== 'networkmanager') return [];
  const subnet = ctx.fleet.fabric.subnetText;
  return ctx.host.nics
    .filter((nic) => failing.some((f) => isAbout(f, nic.iface, ROUTING_ASPECTS.main)))
    .map(
      (nic) =>
        `n=0; while [ "$n" -lt 16 ] && ip -4 route del ${shellQuote(subnet)} dev ${shellQuote(nic.iface)} table main 2>/dev/null; do n=$((n + 1)); echo ${shellQuote(`ibfleet: ${nic.iface}: removed main-table route to ${subnet}`)}; done`,
    );
}

/**
 * Why a file carrying the routing differs, where the ownership record tells: it was generated for
 * another tableBase or subnet (the inventory changed since the last deploy), which is no hand edit.
 */
function modifiedWhy(ctx: HostContext, file: RenderedFile): string | undefined {
  const owned = factOf(ctx.facts, OWNED_FACT);
  if (!owned || !file.routing) return undefined;
  const { tableBase, subnetText } = ctx.fleet.fabric;
  const other = [
    owned.tableBase !== undefined && owned.tableBase !== tableBase
      ? `tableBase ${owned.tableBase}, not ${tableBase}`
      : undefined,
    owned.subnet !== undefined && owned.subnet !== subnetText ? `subnet ${owned.subnet}, not ${subnetText}` : undefined,
  ].filter((x) => x !== undefined);
  if (other.length === 0) return undefined;
  const tables = owned.nics.map((n) => n.table).join(', ');
  return `was generated with ${other.join(' and ')} (the last deploy's record ${OWNED_PATH}${tables ? ` lists tables ${tables}` : ''}): the inventory's fabric changed since; deploy regenerates it (not a hand edit)`;
}

export const policyRouting: StepModule<PolicyRoutingParams> = {
  name: 'policy-routing',
  summary:
    "per NIC: its own routing table and one source rule; the main table's duplicate fabric routes removed or kept",
  params,
  kinds: [
    { kind: 'rule', noun: ['rule', 'rules'], shape: 'counted' },
    { kind: 'table-route', noun: ['table route', 'table routes'], shape: 'counted' },
    { kind: 'main-route', noun: ['main route', 'main routes'], shape: 'counted' },
    // What an earlier deploy with another tableBase or subnet left (former.ts).
    { kind: 'old-rule', noun: ['old rule', 'old rules'], shape: 'counted' },
    { kind: 'old-table', noun: ['old table', 'old tables'], shape: 'counted' },
    { kind: 'record', noun: ['ownership record', 'ownership records'], shape: 'file' },
  ],
  paths: [{ path: OWNED_PATH, kind: 'record' }],
  facts: [OWNED_FACT],
  undo: policyRoutingUndo,
  restore: policyRoutingRestore,
  use: ({ mainRoutes }) => ({
    name: 'policy-routing',
    // host/ibfleet-routes: nic_routing, and with remove the main-table route taken away.
    routesData: () => [`main-routes ${mainRoutes}`],
    notes: (ctx) => notes(ctx, mainRoutes),
    files: (ctx) => [ownedRecordFile(ctx.host, ctx.fleet, ctx.playbook)],
    nicFindings: (ctx, nic) => [
      tableFinding(ctx, nic),
      ruleFinding(ctx, nic),
      ...(checksMain(ctx, mainRoutes) ? [mainFinding(ctx, nic)] : []),
    ],
    // The check after a change reads the new record: what the earlier one listed is checked by the change itself (status=1).
    hostFindings: (ctx) => ({ after: formerFindings(ctx.host, ctx.facts, formerRoutingOf(ctx.host, ctx.facts)) }),
    modifiedWhy,
    apply: (ctx, { failing }) => ({
      kernel: removeStrayMainRoutes(ctx, failing),
      after: removeFormer(formerRoutingOf(ctx.host, ctx.facts), failing),
    }),
  }),
};
