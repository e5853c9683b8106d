/** `ibfleet hosts`: the derived view of the inventory, as text and as data. */
import type { Fleet, Host } from '../../inventory/model.js';
import { foldHosts } from '../../inventory/select.js';
import { formatTable } from './table.js';

export function sshTargetText(host: Host): string {
  return `${host.user ?? 'root'}@${host.target}${host.port !== undefined && host.port !== 22 ? `:${host.port}` : ''}`;
}

export function formatHostsText(fleet: Fleet, hosts: readonly Host[]): string {
  const rows: string[][] = [];
  for (const h of hosts) {
    h.nics.forEach((n, i) => {
      const first = i === 0;
      rows.push([
        first ? String(h.id) : '',
        first ? h.name : '',
        first ? (h.role ?? '-') : '',
        first ? h.manager : '',
        first ? sshTargetText(h) + ((h.sudo ?? (h.user !== undefined && h.user !== 'root')) ? ' (sudo)' : '') : '',
        String(n.index),
        n.iface,
        `${n.address}/${n.prefixLength}`,
        String(n.table),
        String(n.priority),
      ]);
    });
  }
  const table = formatTable(
    ['HOST', 'NAME', 'ROLE', 'MANAGER', 'SSH', 'NIC', 'IFACE', 'ADDRESS', 'TABLE', 'PRIO'],
    rows,
  );
  const ids = new Set(hosts.map((h) => h.id));
  const pairs = fleet.pairs
    .filter((p) => ids.has(p.cpu) || ids.has(p.mem))
    .map((p) => `${p.owner} (cpu ${p.cpu}, mem ${p.mem})`);
  const summary = `${hosts.length} host${hosts.length === 1 ? '' : 's'} (${foldHosts(ids)}) · fabric ${fleet.fabric.subnetText}, ${nicCountsText(fleet, hosts)}${pairs.length ? ` · pairs: ${pairs.join(', ')}` : ''}`;
  return `${table}\n${summary}\n`;
}

/**
 * `2 NICs, tables 941..942`; a fleet that mixes counts says which hosts have how many, most NICs
 * first: `8 NICs on 16-17, 2 on 34 (18 in all), tables 941..948`.
 */
function nicCountsText(fleet: Fleet, hosts: readonly Host[]): string {
  const byCount = new Map<number, number[]>();
  for (const h of hosts) byCount.set(h.nics.length, [...(byCount.get(h.nics.length) ?? []), h.id]);
  const most = Math.max(0, ...byCount.keys());
  const tables = `tables ${fleet.fabric.tableBase + 1}..${fleet.fabric.tableBase + (most || fleet.fabric.nics)}`;
  if (byCount.size <= 1) return `${most || fleet.fabric.nics} NICs, ${tables}`;
  const groups = [...byCount]
    .sort(([a], [b]) => b - a)
    .map(([count, ids], i) => `${count}${i === 0 ? ' NICs' : ''} on ${foldHosts(ids)}`);
  const total = hosts.reduce((sum, h) => sum + h.nics.length, 0);
  return `${groups.join(', ')} (${total} in all), ${tables}`;
}

export function hostsJson(fleet: Fleet, hosts: readonly Host[]) {
  const ids = new Set(hosts.map((h) => h.id));
  return {
    command: 'hosts',
    ok: true,
    inventory: fleet.file,
    fabric: { subnet: fleet.fabric.subnetText, nics: fleet.fabric.nics, tableBase: fleet.fabric.tableBase },
    hosts: hosts.map((h) => ({
      id: h.id,
      name: h.name,
      role: h.role ?? null,
      manager: h.manager,
      ssh: { user: h.user ?? null, target: h.target, port: h.port ?? null, sudo: h.sudo ?? null },
      nics: h.nics.map((n) => ({
        nic: n.index,
        iface: n.iface,
        ip: n.address,
        prefixLength: n.prefixLength,
        table: n.table,
        priority: n.priority,
      })),
    })),
    pairs: fleet.pairs.filter((p) => ids.has(p.cpu) || ids.has(p.mem)),
  };
}
