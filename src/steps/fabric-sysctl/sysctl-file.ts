/** The persisted fabric sysctls, one block per fabric interface. */
import type { Fleet, Host } from '../../inventory/model.js';
import { renderHeader } from '../../script/header.js';
import { SYSCTL_KEYS, type SysctlKey } from './facts.js';

/** The fabric sysctls persisted for every boot (systemd applies sysctl.d, per interface as it appears). */
export const SYSCTL_PATH = '/etc/sysctl.d/60-ibfleet-fabric.conf';

export type SysctlParams = Readonly<Record<SysctlKey, number>>;

const WHY: Readonly<Record<SysctlKey, string>> = {
  arp_ignore: 'answer ARP only for the address owned by the NIC asked, or RDMA CM maps a peer to the wrong port',
  arp_announce: "use the sending NIC's own address as ARP source",
  rp_filter: 'loose reverse-path check: a reply may arrive on either NIC',
  accept_local: "accept packets from this host's other NIC (port-to-port tests on one host)",
};

/**
 * sysctl.d accepts `/` as separator, which keeps interface names with dots (ib0.8001, a P_Key
 * child) intact; plain names use the familiar dotted form.
 */
export function sysctlKey(iface: string, key: string): string {
  return iface.includes('.') ? `net/ipv4/conf/${iface}/${key}` : `net.ipv4.conf.${iface}.${key}`;
}

/**
 * Per-interface keys exist only while the interface does; systemd applies them when it appears (udev's
 * 99-systemd.rules runs systemd-sysctl for each new network interface). With a hook, the hook also
 * applies them on every up; with native persistence this file is all there is.
 */
const WHEN_APPLIED: Readonly<Record<'hook' | 'native', string>> = {
  hook: '# Per-interface keys exist only while the interface does; the hook applies them again on every up.',
  native:
    "# Per-interface keys exist only while the interface does: systemd applies them as it appears (udev's\n# 99-systemd.rules runs systemd-sysctl for every new network interface).",
};

export function renderSysctlConf(
  host: Host,
  _fleet: Fleet,
  playbook: string,
  params: SysctlParams,
  persistence: 'hook' | 'native' = 'hook',
): string {
  const why = SYSCTL_KEYS.map((k) => `#   ${k}=${params[k]}: ${WHY[k]}`);
  const blocks = host.nics.map((nic) =>
    [
      `# NIC ${nic.index}: ${nic.iface} (${nic.address})`,
      ...SYSCTL_KEYS.map((k) => `${sysctlKey(nic.iface, k)} = ${params[k]}`),
    ].join('\n'),
  );
  return [
    renderHeader(host, playbook, SYSCTL_PATH),
    '#',
    '# Kernel settings for several NICs in one subnet (librdmacm, libfabric verbs multi-NIC guide, Red Hat):',
    ...why,
    WHEN_APPLIED[persistence],
    '',
    blocks.join('\n\n'),
    '',
  ].join('\n');
}
