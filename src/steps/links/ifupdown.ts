/**
 * The links step on ifupdown hosts: ibfleet's own stanza file in /etc/network/interfaces.d (used
 * only where /etc/network/interfaces sources that directory, as Debian's default does — otherwise
 * the host is refused with the line to add), one `auto` + `iface … inet static` stanza per fabric
 * NIC it configures, brought up with `ifup`. ifupdown has no IPoIB settings of its own: the mode is
 * set from the stanza the way the IPoIB documentation does it (`pre-up` writing the interface's
 * `mode`), and a partition's child is created by the stanza from its parent's `create_child` and
 * removed through `delete_child` when it goes down. Pure string builders.
 */
import type { Host } from '../../inventory/model.js';
import { renderHeader } from '../../script/header.js';
import type { RenderedFile } from '../../script/rendered-file.js';
import { LINKS_STANZA_PATH, partitionOf, type ManagedNic } from './decide.js';

function stanza(m: ManagedNic): string[] {
  const iface = m.nic.iface;
  const partition = partitionOf(m);
  return [
    `# NIC ${m.nic.index}`,
    `auto ${iface}`,
    `iface ${iface} inet static`,
    `\taddress ${m.nic.address}/${m.nic.prefixLength}`,
    ...(m.want.mtu !== undefined ? [`\tmtu ${m.want.mtu}`] : []),
    ...(partition
      ? [
          `\tpre-up ip link set ${partition.parent} up`,
          `\tpre-up [ -d /sys/class/net/${iface} ] || echo ${partition.pkey} > /sys/class/net/${partition.parent}/create_child`,
          `\tpost-down [ ! -d /sys/class/net/${iface} ] || echo ${partition.pkey} > /sys/class/net/${partition.parent}/delete_child`,
        ]
      : []),
    ...(m.want.mode !== undefined ? [`\tpre-up echo ${m.want.mode} > /sys/class/net/${iface}/mode`] : []),
    '',
  ];
}

export function renderLinksStanzas(host: Host, playbook: string, managed: readonly ManagedNic[]): string {
  return [
    renderHeader(host, playbook, LINKS_STANZA_PATH),
    '#',
    "# The fabric NICs ibfleet configures: each one's convention address, and the MTU and IPoIB mode",
    '# the playbook asks for. `ibfleet rollback` takes them down and removes this file.',
    '',
    ...managed.flatMap(stanza),
  ].join('\n');
}

export function linksStanzaFile(host: Host, playbook: string, managed: readonly ManagedNic[]): RenderedFile {
  return {
    path: LINKS_STANZA_PATH,
    mode: 0o644,
    content: renderLinksStanzas(host, playbook, managed),
    role: 'links',
    kind: 'links-file',
    label: `links file ${LINKS_STANZA_PATH}`,
  };
}
