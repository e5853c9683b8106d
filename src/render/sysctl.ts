/** The persisted fabric sysctls, one block per fabric interface. */
import type { Fleet, Host } from '../inventory/model.js';
import type { FabricSysctlParams, Playbook } from '../playbook/playbook.js';
import { renderHeader } from './header.js';
import { SYSCTL_PATH } from './paths.js';
import { SYSCTL_KEYS } from './routing-script.js';

const WHY: Readonly<Record<(typeof SYSCTL_KEYS)[number], string>> = {
  arp_ignore: 'answer ARP only for the address owned by the NIC asked, or RDMA CM maps a peer to the wrong port',
  arp_announce: 'use the sending NIC\'s own address as ARP source',
  rp_filter: 'loose reverse-path check: a reply may arrive on either NIC',
  accept_local: 'accept packets from this host\'s other NIC (port-to-port tests on one host)',
};

/**
 * The neighbour table's garbage-collection thresholds for a fleet. Every fabric NIC keeps an ARP
 * entry for each peer NIC it talks to — hosts × NICs × NICs per host over the whole fabric (~1 000
 * with 254 dual-NIC hosts, right at the kernel's default gc_thresh3 of 1024, past which every send
 * fails with "No buffer space available" and the kernel logs "neighbor table overflow"). gc_thresh3
 * gets twice that, rounded up to a power of two; gc_thresh2 and gc_thresh1 keep the kernel's 4:8 and
 * 1:8 ratios. Never below the kernel's defaults (128/512/1024). Derived from the inventory, so every
 * host of a fleet gets the same values and generation stays pure.
 */
export function neighThresholds(fleet: Pick<Fleet, 'hosts' | 'fabric'>): { gc_thresh1: number; gc_thresh2: number; gc_thresh3: number } {
  const entries = fleet.hosts.length * fleet.fabric.nics * fleet.fabric.nics;
  let third = 1024;
  while (third < 2 * entries) third *= 2;
  return { gc_thresh1: third / 8, gc_thresh2: third / 2, gc_thresh3: third };
}

/**
 * sysctl.d accepts `/` as separator, which keeps interface names with dots (ib0.8001, a P_Key
 * child) intact; plain names use the familiar dotted form.
 */
export function sysctlKey(iface: string, key: string): string {
  return iface.includes('.') ? `net/ipv4/conf/${iface}/${key}` : `net.ipv4.conf.${iface}.${key}`;
}

export function renderSysctlConf(host: Host, playbook: Playbook, params: FabricSysctlParams): string {
  const why = SYSCTL_KEYS.map((k) => `#   ${k}=${params[k]}: ${WHY[k]}`);
  const blocks = host.nics.map((nic) =>
    [`# NIC ${nic.index}: ${nic.iface} (${nic.address})`, ...SYSCTL_KEYS.map((k) => `${sysctlKey(nic.iface, k)} = ${params[k]}`)].join('\n'),
  );
  return [
    renderHeader(host, playbook, SYSCTL_PATH),
    '#',
    '# Kernel settings for several NICs in one subnet (librdmacm, libfabric verbs multi-NIC guide, Red Hat):',
    ...why,
    '# Per-interface keys exist only while the interface does; the hook applies them again on every up.',
    '',
    blocks.join('\n\n'),
    '',
  ].join('\n');
}
