/**
 * The dry-run plan at any fleet size: hosts whose changes are the same but for their own addresses
 * and interface names are told once, ClusterShell-style (`34,40-57 (19 hosts, netplan): …`),
 * each group as a summary by kind and one line per change. Addresses that differ between a group's
 * hosts read `172.16.H.1` (H: the host number), interface names `NIC 1`. Pure.
 */
import { foldHosts } from '../../inventory/select.js';
import type { Change, ChangeAction, HostRef, HostResult } from '../../vocabulary.js';
import { byKind, summarizeChanges } from './changes.js';
import { pluralize } from './format.js';
import { sanitizeLine } from './sanitize.js';

export interface PlanGroup {
  readonly ids: readonly number[];
  readonly hostSet: string;
  readonly manager: string | undefined;
  readonly summary: string;
  /** One line per change (a NIC's sysctls on one line), as the group's hosts share them. */
  readonly lines: readonly string[];
  /** What the plan says besides its changes (why a host gets the hook, what native persistence cannot do there). */
  readonly notes: readonly string[];
}

const MARK: Readonly<Record<ChangeAction, string>> = {
  add: '+',
  install: '+',
  start: '+',
  remove: '−',
  replace: '~',
  set: '~',
  reset: '~',
  reorder: '~',
};

const placeholder = (what: 'addr' | 'iface', index: number) => `\u0000${what}${index}\u0000`;

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** A change's text with this host's own NIC addresses and interface names made placeholders. */
function generic(text: string, host: HostRef): string {
  let out = text;
  for (const nic of host.nics ?? []) {
    out = out.replace(
      new RegExp(`(?<![\\d.])${escapeRegExp(nic.address)}(?![\\d])`, 'g'),
      placeholder('addr', nic.index),
    );
    out = out.replace(
      new RegExp(`(?<![\\w.-])${escapeRegExp(nic.iface)}(?![\\w.-])`, 'g'),
      placeholder('iface', nic.index),
    );
  }
  return out;
}

/** The address with the host's number as H: `172.16.34.1` of host 34 → `172.16.H.1`. */
function hostlessAddress(address: string, id: number): string {
  const parts = address.split('.');
  return parts.length === 4 && parts[2] === String(id)
    ? [parts[0], parts[1], 'H', parts[3]].join('.')
    : `<NIC address>`;
}

/** Placeholders filled with the value the group's hosts share, or a stand-in that says it varies. */
function fill(text: string, hosts: readonly HostRef[]): string {
  return text.replace(/\u0000(addr|iface)(\d+)\u0000/g, (_, what: string, n: string) => {
    const index = Number(n);
    const values = hosts.map((h) => h.nics?.find((nic) => nic.index === index));
    const real = values.map((v) => (what === 'addr' ? v?.address : v?.iface));
    if (real.every((v) => v !== undefined && v === real[0])) return real[0]!;
    if (what === 'iface') return `NIC ${index}`;
    const shapes = values.map((v, i) => (v ? hostlessAddress(v.address, hosts[i]!.id) : '<NIC address>'));
    return shapes.every((s) => s === shapes[0]) ? shapes[0]! : `<NIC ${index} address>`;
  });
}

/**
 * One line per change, except where several say one thing: a NIC's sysctls (one change per key)
 * share a line (`ib0: arp_ignore 1→2, rp_filter 1→2`), and so do the files of one kind installed
 * together (the repair timer's units).
 */
function changeLines(changes: readonly Change[], host: HostRef): string[] {
  const lines: { key: string; mark: string; texts: string[] }[] = [];
  for (const c of byKind(changes)) {
    const text = generic(sanitizeLine(c.text), host);
    const subject = generic(c.subject, host);
    const last = lines.at(-1);
    if (c.kind === 'sysctl' && last?.key === `${c.kind} ${c.action} ${subject}`) {
      last.texts.push(compactArrow(text.startsWith(`${subject}: `) ? text.slice(subject.length + 2) : text));
    } else if (c.kind === 'timer' && c.action === 'install' && last?.key === 'timer install') {
      last.texts.push(text.replace(/^install /, ''));
    } else {
      const key = c.kind === 'timer' && c.action === 'install' ? 'timer install' : `${c.kind} ${c.action} ${subject}`;
      lines.push({ key, mark: MARK[c.action] ?? '~', texts: [c.kind === 'sysctl' ? compactArrow(text) : text] });
    }
  }
  return lines.map((l) => `${l.mark} ${l.texts.join(', ')}`);
}

/** `1 → 2` as `1→2`: four sysctls of a NIC fit one line of 80 columns. */
function compactArrow(text: string): string {
  return text.replace(/ → /g, '→');
}

/** Planned hosts grouped by identical plans (manager included: it decides the hook). */
export function foldPlans(results: readonly HostResult[]): PlanGroup[] {
  const groups = new Map<
    string,
    { hosts: HostRef[]; manager: string | undefined; generic: string[]; notes: string[]; summary: string }
  >();
  for (const r of results) {
    const changes = r.changes ?? [];
    if (r.status !== 'planned' || changes.length === 0) continue;
    const lines = changeLines(changes, r.host);
    const texts = new Set(changes.map((c) => c.text));
    const notes = r.reasons.filter((reason) => !texts.has(reason)).map((n) => generic(sanitizeLine(n), r.host));
    const key = [r.manager ?? '', ...notes, ...lines].join('\n');
    const group = groups.get(key);
    if (group) group.hosts.push(r.host);
    else
      groups.set(key, {
        hosts: [r.host],
        manager: r.manager,
        generic: lines,
        notes,
        summary: summarizeChanges(changes),
      });
  }
  return [...groups.values()]
    .map((g) => {
      const hosts = [...g.hosts].sort((a, b) => a.id - b.id);
      return {
        ids: hosts.map((h) => h.id),
        hostSet: foldHosts(hosts.map((h) => h.id)),
        manager: g.manager,
        summary: g.summary,
        lines: g.generic.map((l) => fill(l, hosts)),
        notes: g.notes.map((n) => fill(n, hosts)),
      };
    })
    .sort((a, b) => a.ids[0]! - b.ids[0]!);
}

/** `34,40-57 (19 hosts, netplan)` or `16 cpuserver16 (networkmanager)`. */
function groupTitle(group: PlanGroup, results: readonly HostResult[]): string {
  const about = group.manager ? [group.manager] : [];
  if (group.ids.length === 1) {
    const name = results.find((r) => r.host.id === group.ids[0])?.host.name;
    return `${group.hostSet}${name ? ` ${name}` : ''}${about.length ? ` (${about.join(', ')})` : ''}`;
  }
  return `${group.hostSet} (${[pluralize(group.ids.length, 'host'), ...about].join(', ')})`;
}

/**
 * The plan as text: a line saying how many hosts share how many plans, then each group. Hosts with
 * nothing to change are named on one line; failed hosts are left to the outcome lines.
 */
export function formatPlanLines(
  results: readonly HostResult[],
  options: { readonly scriptsHint?: string } = {},
): string[] {
  const groups = foldPlans(results);
  const unchanged = results.filter((r) => r.status === 'unchanged').map((r) => r.host.id);
  const planned = groups.reduce((n, g) => n + g.ids.length, 0);
  const lines: string[] = [];
  if (planned > 0) {
    const alike = groups.length === 1 ? (planned === 1 ? '' : ', all alike') : `, ${groups.length} different plans`;
    lines.push(
      `plan: ${pluralize(planned, 'host')} to change${alike}${options.scriptsHint ? ` (${options.scriptsHint})` : ''}`,
    );
  }
  for (const group of groups) {
    lines.push(`${groupTitle(group, results)}: ${group.summary}`);
    for (const note of group.notes) lines.push(`  note: ${note}`);
    for (const line of group.lines) lines.push(`  ${line}`);
  }
  if (unchanged.length > 0) lines.push(`${foldHosts(unchanged)}: nothing to change`);
  return lines;
}
