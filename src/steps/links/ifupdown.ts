/**
 * The links step on ifupdown hosts: ibfleet's own stanza file in /etc/network/interfaces.d (used
 * only where /etc/network/interfaces sources that directory, as Debian's default does — otherwise
 * the host is refused with the line to add), one `auto` + `iface … inet static` stanza per fabric
 * NIC it configures, brought up with `ifup`. ifupdown has no IPoIB settings of its own: the mode is
 * set from the stanza the way the IPoIB documentation does it (`pre-up` writing the interface's
 * `mode`), and a partition's child is created by the stanza from its parent's `create_child` and
 * removed through `delete_child` when it goes down. The file is a template, host/files/links-ifupdown*;
 * pure.
 */
import type { Host } from '../../inventory/model.js';
import { renderHeader } from '../../script/header.js';
import { hostFile, hostLines } from '../../script/host-templates.js';
import type { RenderedFile } from '../../script/rendered-file.js';
import { LINKS_STANZA_PATH, partitionOf, type ManagedNic } from './decide.js';

/** host/files/links-ifupdown-nic: a NIC's stanza; a partition's child made and removed from its parent (links-ifupdown-pkey), the IPoIB mode set before it comes up (links-ifupdown-mode). */
function stanza(m: ManagedNic): string[] {
  const iface = m.nic.iface;
  const partition = partitionOf(m);
  return hostLines('links-ifupdown-nic', {
    INDEX: String(m.nic.index),
    IFACE: iface,
    CIDR: `${m.nic.address}/${m.nic.prefixLength}`,
    MTU: m.want.mtu !== undefined ? [`\tmtu ${m.want.mtu}`] : [],
    PARTITION: partition
      ? hostLines('links-ifupdown-pkey', { IFACE: iface, PARENT: partition.parent, PKEY: partition.pkey })
      : [],
    MODE: m.want.mode !== undefined ? hostLines('links-ifupdown-mode', { IFACE: iface, MODE: m.want.mode }) : [],
  });
}

/** host/files/links-ifupdown: every NIC links configures, a stanza each, a blank line between. */
export function renderLinksStanzas(host: Host, playbook: string, managed: readonly ManagedNic[]): string {
  return hostFile('links-ifupdown', {
    HEADER: renderHeader(host, playbook, LINKS_STANZA_PATH).split('\n'),
    STANZAS: managed.flatMap((m, i) => [...(i > 0 ? [''] : []), ...stanza(m)]),
  });
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
