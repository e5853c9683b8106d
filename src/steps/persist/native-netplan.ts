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
 * address still leaves through that NIC. The file is a template, host/files/netplan-routing*.yaml; pure.
 */
import type { Fleet, Host } from '../../inventory/model.js';
import { renderHeader } from '../../script/header.js';
import { hostFile, hostLines } from '../../script/host-templates.js';
import type { NetplanDevice } from '../step.js';
import { NETPLAN_FILE_PATH } from './paths.js';
import { renderNetplanCheck, yamlKey } from '../../script/netplan.js';

/**
 * host/files/netplan-routing.yaml, a netplan-routing-nic.yaml entry per NIC under its device type.
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
    const entry = hostLines('netplan-routing-nic.yaml', {
      ID: yamlKey(device.id),
      INDEX: String(nic.index),
      IFACE: nic.iface,
      ADDRESS: nic.address,
      SUBNET: fleet.fabric.subnetText,
      TABLE: String(nic.table),
      PRIORITY: String(nic.priority),
    });
    byType.set(device.type, [...(byType.get(device.type) ?? []), ...entry]);
  }
  return hostFile('netplan-routing.yaml', {
    HEADER: renderHeader(host, playbook, NETPLAN_FILE_PATH).split('\n'),
    PRIORITIES: host.nics.map((n) => n.priority).join(', '),
    DEVICES: [...byType].flatMap(([type, entries]) =>
      hostLines('netplan-devices.yaml', { TYPE: type, DEVICES: entries }),
    ),
  });
}

export { renderNetplanApply } from '../../script/netplan.js';

/** Before the staged file replaces the live one: netplan generate with it in place (script/netplan.ts). */
export function renderNetplanValidation(staged: string): string[] {
  return renderNetplanCheck(staged, NETPLAN_FILE_PATH);
}
