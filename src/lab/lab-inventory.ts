/**
 * The files `lab up` hands to the rest of ibfleet: an inventory of the lab hosts and a known_hosts
 * with their keys. Pure. The inventory leaves `manager: auto` on purpose — a deploy against the lab
 * must detect each host's manager the way it would on a real machine.
 */
import { Document, isMap, isSeq } from 'yaml';
import { VERSION } from '../version.js';
import { emulationLabel } from './emulation.js';
import { runsSystemd, type LabPlan } from './plan.js';

export const LAB_INVENTORY_SSH = { knownHosts: 'known_hosts', identityFile: 'id_ed25519' } as const;

export function renderLabInventory(plan: LabPlan): string {
  const hosts = new Map<number, Record<string, unknown>>();
  for (const h of plan.hosts) {
    const ownCount = h.nics.length !== plan.fabric.nics ? { nics: h.nics.length } : {};
    hosts.set(h.id, {
      name: h.name,
      address: h.address,
      ...(h.role !== undefined ? { role: h.role } : {}),
      ...ownCount,
      interfaces: h.nics.map((n) => n.iface),
    });
  }
  const doc = new Document({
    fabric: { subnet: plan.fabric.subnet, nics: plan.fabric.nics, tableBase: plan.fabric.tableBase },
    defaults: { user: 'root', manager: 'auto' },
    ssh: { ...LAB_INVENTORY_SSH },
    hosts,
    ...(plan.pairs.length ? { pairs: plan.pairs.map((p) => ({ owner: p.owner, cpu: p.cpu, mem: p.mem })) } : {}),
  });
  doc.commentBefore = [
    ` Inventory of ibfleet lab "${plan.name}" (ibfleet ${VERSION}), written by \`ibfleet lab up\`; \`ibfleet lab down\` removes it.`,
    ' Management addresses are on the lab network; paths below are relative to this file.',
    " manager stays auto: deploy detects each host's network manager as it would on a real machine.",
  ].join('\n');
  const hostsNode = doc.get('hosts');
  if (isMap(hostsNode)) {
    for (const pair of hostsNode.items) {
      if (isMap(pair.value)) {
        pair.value.flow = true;
        const host = plan.hosts.find((h) => String(h.id) === String((pair.key as { value?: unknown }).value));
        if (host)
          pair.value.comment = ` ${emulationLabel(host.manager, runsSystemd(host) && plan.networkDaemons, host.fresh, host.suite)}`;
      }
    }
  }
  const pairsNode = doc.get('pairs');
  if (isSeq(pairsNode)) for (const item of pairsNode.items) if (isMap(item)) item.flow = true;
  return doc.toString({ lineWidth: 0, flowCollectionPadding: false });
}

/** Plain `address key-type base64` lines, one per host, in host order. */
export function renderKnownHosts(entries: readonly { address: string; publicKey: string }[]): string {
  return entries
    .map(({ address, publicKey }) => {
      const [type, key] = publicKey.trim().split(/\s+/);
      return `${address} ${type} ${key}\n`;
    })
    .join('');
}
