/**
 * Native persistence on netplan hosts: ibfleet's own netplan file, which netplan merges with the
 * file that configures the NICs (files are read in lexical order across /lib, /etc and /run; a
 * later file adds to an earlier one — mappings merge, sequences such as routes are appended). Per
 * fabric NIC it adds the subnet route in the NIC's table with the NIC's address as source, and the
 * source rule; systemd-networkd then owns both and puts them back whenever it configures the NIC —
 * a boot, a carrier flap, `networkctl reconfigure` — where a hook has to repair after the fact.
 *
 * What netplan cannot express: keeping the kernel's subnet route out of the main table (it comes
 * with the address). It stays; the source rules come before main, so traffic from each NIC's
 * address still leaves through that NIC. Pure string builders.
 */
import type { Fleet, Host } from '../../inventory/model.js';
import { renderHeader } from '../../script/header.js';
import type { NetplanDevice } from '../step.js';
import { NETPLAN_FILE_PATH } from './paths.js';
import { renderNetplanCheck } from '../../script/netplan.js';

/** YAML 1.1 words a plain key would be read as (a boolean, null): such ids are quoted. */
const YAML_WORDS = new Set(['y', 'n', 'yes', 'no', 'true', 'false', 'on', 'off', 'null', '~']);

function yamlKey(id: string): string {
  return /^[A-Za-z][A-Za-z0-9_-]*$/.test(id) && !YAML_WORDS.has(id.toLowerCase()) ? id : JSON.stringify(id);
}

/**
 * `devices` name each NIC's netplan device (from the host's configuration); a NIC it does not name
 * is written as `ethernets` with its interface name as id, what `ibfleet render` shows without a host.
 */
export function renderNetplanFile(
  host: Host,
  fleet: Fleet,
  playbook: string,
  devices: readonly NetplanDevice[] = [],
): string {
  const byType = new Map<string, string[]>();
  for (const nic of host.nics) {
    const device = devices.find((d) => d.iface === nic.iface) ?? { iface: nic.iface, type: 'ethernets', id: nic.iface };
    const entry = [
      `    ${yamlKey(device.id)}:`,
      `      # NIC ${nic.index}: ${nic.iface} (${nic.address})`,
      '      routes:',
      `        - to: ${fleet.fabric.subnetText}`,
      '          scope: link',
      `          table: ${nic.table}`,
      `          from: ${nic.address}`,
      '      routing-policy:',
      `        - from: ${nic.address}`,
      `          table: ${nic.table}`,
      `          priority: ${nic.priority}`,
    ];
    byType.set(device.type, [...(byType.get(device.type) ?? []), ...entry]);
  }
  const rules = host.nics.map((n) => n.priority).join(', ');
  return [
    renderHeader(host, playbook, NETPLAN_FILE_PATH),
    '#',
    "# Per-NIC policy routing, in netplan's own configuration: each fabric NIC's subnet route lives in",
    "# its own table with the NIC's address as source, and one rule sends that address's traffic to it.",
    '# netplan merges this file with the one that configures the NICs (later files add to earlier ones).',
    `# The kernel's subnet route in the main table stays: netplan cannot remove it. The rules (priority`,
    `# ${rules}) come before main (32766), so traffic from each NIC's address leaves through that NIC.`,
    'network:',
    '  version: 2',
    ...[...byType].flatMap(([type, lines]) => [`  ${type}:`, ...lines]),
    '',
  ].join('\n');
}

export { renderNetplanApply } from '../../script/netplan.js';

/** Before the staged file replaces the live one: netplan generate with it in place (script/netplan.ts). */
export function renderNetplanValidation(staged: string): string[] {
  return renderNetplanCheck(staged, NETPLAN_FILE_PATH);
}
