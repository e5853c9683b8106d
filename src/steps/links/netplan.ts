/**
 * The links step on netplan hosts: ibfleet's own file under /etc/netplan, one `ethernets` entry
 * per fabric NIC it configures — `addresses` (unless another netplan file already gives the NIC
 * its address: then only what is asked besides), `mtu`, `infiniband-mode` for IPoIB NICs (netplan
 * 0.105+ writes networkd's `[IPoIB] Mode=`) — rendered by systemd-networkd. It is checked with
 * `netplan generate` before it goes live, then networkd reloads and reconfigures only the fabric
 * NICs, and the addresses are awaited. netplan has no P_Key child interfaces (a partition is
 * refused on netplan hosts: hardware.ts). The file is a template, host/files/links-netplan*.yaml; pure.
 */
import type { Host } from '../../inventory/model.js';
import { renderHeader } from '../../script/header.js';
import { hostFile, hostLines } from '../../script/host-templates.js';
import type { RenderedFile } from '../../script/rendered-file.js';
import { yamlKey } from '../../script/netplan.js';
import { LINKS_NETPLAN_PATH, type ManagedNic } from './decide.js';

/** host/files/links-netplan-nic.yaml: a NIC's entry, with the settings asked for. */
function entry(m: ManagedNic): string[] {
  return hostLines('links-netplan-nic.yaml', {
    ID: yamlKey(m.nic.iface),
    INDEX: String(m.nic.index),
    ADDRESS_ELSEWHERE: m.addressElsewhere ? ` (its address ${m.nic.address} comes from another netplan file)` : '',
    SETTINGS: [
      ...(m.addressElsewhere ? [] : [`      addresses: [${m.nic.address}/${m.nic.prefixLength}]`]),
      ...(m.want.mtu !== undefined ? [`      mtu: ${m.want.mtu}`] : []),
      ...(m.ipoib && m.want.mode !== undefined ? [`      infiniband-mode: ${m.want.mode}`] : []),
    ],
  });
}

/** host/files/links-netplan.yaml: every NIC links configures, as netplan `ethernets`. */
export function renderLinksNetplan(host: Host, playbook: string, managed: readonly ManagedNic[]): string {
  return hostFile('links-netplan.yaml', {
    HEADER: renderHeader(host, playbook, LINKS_NETPLAN_PATH).split('\n'),
    DEVICES: hostLines('netplan-devices.yaml', { TYPE: 'ethernets', DEVICES: managed.flatMap(entry) }),
  });
}

export function linksNetplanFile(host: Host, playbook: string, managed: readonly ManagedNic[]): RenderedFile {
  // Mode 0600: netplan warns about configuration others can read.
  return {
    path: LINKS_NETPLAN_PATH,
    mode: 0o600,
    content: renderLinksNetplan(host, playbook, managed),
    role: 'links',
    kind: 'links-file',
    label: `links file ${LINKS_NETPLAN_PATH}`,
  };
}
