/**
 * What "rolled back" means on a host: none of ibfleet's files, none of its properties on the NICs'
 * connection profiles (the user's own rules there stay), no rule or route of the fabric
 * tables, per-interface sysctls at the kernel's defaults, and the main-table subnet routes back as
 * the kernel adds them (one per NIC that has its address, NIC 1 first). Pure.
 */
import type { Fleet, Host } from '../inventory/model.js';
import { SYSCTL_KEYS } from '../render/routing-script.js';
import { TRACKED_PATHS } from '../render/probe-script.js';
import { HOOK_PATHS, NETPLAN_FILE_PATH, OWNED_PATH, REPAIR_PATHS, ROUTING_SCRIPT_PATH, SYSCTL_PATH } from '../render/paths.js';
import type { ChangeKind } from '../vocabulary.js';
import { change, type Assessment, type Finding } from './assess.js';
import type { HostFacts } from './facts.js';
import { profileLeftovers } from './native-assess.js';
import { formerOrigin, formerRouting, formerRules, type FormerRouting } from './owned.js';

function trackedKind(path: string): ChangeKind {
  if (path === ROUTING_SCRIPT_PATH) return 'script';
  if (path === SYSCTL_PATH) return 'sysctl-file';
  if (path === NETPLAN_FILE_PATH) return 'netplan-file';
  if (path === OWNED_PATH) return 'record';
  if (REPAIR_PATHS.includes(path)) return 'timer';
  return Object.values(HOOK_PATHS).includes(path) ? 'hook' : 'file';
}

/**
 * `former`: what an earlier deploy owned and the inventory no longer gives the host, by default as
 * the host's record lists it; the check after the rollback passes the one found before (the record
 * is gone by then).
 */
export function assessRollback(host: Host, fleet: Fleet, facts: HostFacts, former: FormerRouting = formerRouting(host, facts.owned)): Assessment {
  const findings: Finding[] = [];
  for (const path of TRACKED_PATHS) {
    const present = facts.files.get(path);
    findings.push({ id: `file ${path}`, ok: !present, detail: present ? `${path} is still installed` : `${path} absent`, fix: present ? change(trackedKind(path), 'remove', path, `remove ${path}`) : undefined });
  }
  const subnet = fleet.fabric.subnetText;
  const main = (facts.routes.get('main') ?? []).filter((r) => r.dst === subnet);
  const defaults = facts.sysctl.get('default') ?? {};
  for (const nic of host.nics) {
    const rules = facts.rules.filter((r) => r.from === nic.address || r.table === String(nic.table));
    findings.push({ id: `rule ${nic.iface}`, ok: rules.length === 0, detail: rules.length ? `${nic.iface}: ${rules.length} rule(s) for ${nic.address} / table ${nic.table} remain` : `${nic.iface}: no rules`, fix: rules.length ? change('rule', 'remove', nic.iface, `${nic.iface}: delete rules from ${nic.address} / lookup ${nic.table}`) : undefined });
    const table = facts.routes.get(String(nic.table)) ?? [];
    findings.push({ id: `table ${nic.iface}`, ok: table.length === 0, detail: table.length ? `${nic.iface}: table ${nic.table} still holds routes` : `${nic.iface}: table ${nic.table} empty`, fix: table.length ? change('table-route', 'remove', nic.iface, `${nic.iface}: flush table ${nic.table}`) : undefined });
    const hasAddress = facts.addresses.some((a) => a.iface === nic.iface && a.address === nic.address);
    if (hasAddress) {
      const back = main.some((r) => r.dev === nic.iface && r.src === nic.address);
      findings.push({ id: `main ${nic.iface}`, ok: back, detail: back ? `${nic.iface}: main-table route present` : `${nic.iface}: main-table route to ${subnet} missing`, fix: back ? undefined : change('main-route', 'add', nic.iface, `${nic.iface}: restore main-table route ${subnet} dev ${nic.iface}`) });
    }
    const values = facts.sysctl.get(nic.iface) ?? {};
    const off = SYSCTL_KEYS.filter((k) => defaults[k] !== undefined && values[k] !== undefined && values[k] !== defaults[k]);
    findings.push({ id: `sysctl ${nic.iface}`, ok: off.length === 0, detail: off.length ? `${nic.iface}: ${off.map((k) => `${k}=${values[k]}`).join(', ')} differ from the kernel defaults` : `${nic.iface}: sysctls at defaults`, fix: off.length ? change('sysctl', 'reset', nic.iface, `${nic.iface}: reset ${off.join(', ')} to conf/default`) : undefined });
  }
  for (const nic of host.nics) {
    const uuid = facts.nm?.active.get(nic.iface);
    const profile = uuid === undefined ? undefined : facts.nm?.profiles.get(uuid);
    const left = profile ? profileLeftovers(profile, nic, former) : '';
    if (left) findings.push({ id: `nm ${nic.iface}`, ok: false, detail: `${nic.iface}: connection profile ${profile!.name} still carries ${left}`, fix: change('nm-profile', 'reset', nic.iface, `${nic.iface}: nmcli: take ${left} off profile ${profile!.name}; reapply`) });
  }
  findings.push(...formerLeftovers(host, facts, former));
  const order = main.map((r) => r.dev);
  const expected = host.nics.map((n) => n.iface).filter((i) => order.includes(i));
  const inOrder = order.filter((d) => d !== undefined && expected.includes(d)).join(',') === expected.join(',');
  findings.push({ id: 'main order', ok: inOrder, detail: inOrder ? 'main-table routes in NIC order' : `main-table routes to ${subnet} are in order ${order.join(', ')}, the kernel's is ${expected.join(', ')}`, fix: inOrder ? undefined : change('main-route', 'reorder', 'main', 'reorder main-table routes') });
  return { blockers: [], findings };
}

/** An earlier deploy's tables and rules (the record's entries the inventory no longer has): rollback removes them too. */
function formerLeftovers(host: Host, facts: HostFacts, former: FormerRouting): Finding[] {
  const origin = formerOrigin(former);
  const findings: Finding[] = former.tables.map((table) => {
    const held = (facts.routes.get(String(table)) ?? []).length > 0;
    return { id: `old table ${table}`, ok: !held, detail: held ? `table ${table} of an earlier deploy (${origin}) still holds routes` : `table ${table} of an earlier deploy empty`, fix: held ? change('old-table', 'remove', `table ${table}`, `flush old table ${table} (${origin})`) : undefined };
  });
  // A rule from one of today's addresses or into today's tables is the NIC's own finding's.
  const related = (from: string, table: string | undefined) => host.nics.some((n) => from === n.address || table === String(n.table));
  for (const rule of formerRules(facts.rules, former).filter((r) => !related(r.from, r.table))) {
    findings.push({ id: `old rule ${rule.priority}: ${rule.text}`, ok: false, detail: `rule ${rule.priority}: ${rule.text} of an earlier deploy (${origin}) remains`, fix: change('old-rule', 'remove', `rule ${rule.priority}`, `delete old rule ${rule.priority}: ${rule.text}`) });
  }
  return findings;
}
