/**
 * The links step on netplan hosts: ibfleet's own file under /etc/netplan, one `ethernets` entry
 * per fabric NIC it configures — `addresses` (unless another netplan file already gives the NIC
 * its address: then only what is asked besides), `mtu`, `infiniband-mode` for IPoIB NICs (netplan
 * 0.105+ writes networkd's `[IPoIB] Mode=`) — rendered by systemd-networkd. It is checked with
 * `netplan generate` before it goes live, then networkd reloads and reconfigures only the fabric
 * NICs, and the addresses are awaited. netplan has no P_Key child interfaces (a partition is
 * refused on netplan hosts: hardware.ts). Pure string builders.
 */
import type { Host } from '../../inventory/model.js';
import { renderHeader } from '../../script/header.js';
import type { RenderedFile } from '../../script/rendered-file.js';
import { LINKS_NETPLAN_PATH, type ManagedNic } from './decide.js';

/** YAML 1.1 words a plain key would be read as (a boolean, null): such ids are quoted. */
const YAML_WORDS = new Set(['y', 'n', 'yes', 'no', 'true', 'false', 'on', 'off', 'null', '~']);

function yamlKey(id: string): string {
  return /^[A-Za-z][A-Za-z0-9_-]*$/.test(id) && !YAML_WORDS.has(id.toLowerCase()) ? id : JSON.stringify(id);
}

function entry(m: ManagedNic): string[] {
  return [
    `    ${yamlKey(m.nic.iface)}:`,
    `      # NIC ${m.nic.index}${m.addressElsewhere ? ` (its address ${m.nic.address} comes from another netplan file)` : ''}`,
    '      renderer: networkd',
    ...(m.addressElsewhere ? [] : [`      addresses: [${m.nic.address}/${m.nic.prefixLength}]`]),
    ...(m.want.mtu !== undefined ? [`      mtu: ${m.want.mtu}`] : []),
    ...(m.ipoib && m.want.mode !== undefined ? [`      infiniband-mode: ${m.want.mode}`] : []),
  ];
}

export function renderLinksNetplan(host: Host, playbook: string, managed: readonly ManagedNic[]): string {
  return [
    renderHeader(host, playbook, LINKS_NETPLAN_PATH),
    '#',
    "# The fabric NICs ibfleet configures: each one's convention address, and the MTU and IPoIB mode",
    '# the playbook asks for, rendered by systemd-networkd. `ibfleet rollback` removes this file.',
    'network:',
    '  version: 2',
    '  ethernets:',
    ...managed.flatMap(entry),
    '',
  ].join('\n');
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
