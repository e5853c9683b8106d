/**
 * Where the playbook asks a partition (`pkey`), the P_Key table of the port behind each fabric NIC
 * must hold it: the subnet manager puts a port in a partition by writing the P_Key there, and an
 * IPoIB child of a P_Key the port lacks never gets carrier (nor does any RDMA traffic in that
 * partition). Deploy cannot change it — only the SM's partition configuration can — so status says
 * it, naming the port and what its table holds. Membership is the low 15 bits: a port that holds
 * the key only as a limited member (0x0002 for 0x8002) reaches the partition's full members. Pure.
 */
import type { FactsContext } from '../step.js';
import { rdmaPortOf } from '../../facts/rdma-facts.js';
import { hardwareIface } from './hardware.js';
import type { LinksParams } from './params.js';

export function partitionProblems(ctx: FactsContext, settings: LinksParams): string[] {
  const { pkey } = settings;
  const rdma = ctx.facts.rdma;
  if (pkey === undefined || !rdma) return [];
  const want = Number(pkey) & 0x7fff;
  const problems: string[] = [];
  for (const nic of ctx.host.nics) {
    const parent = hardwareIface(nic);
    const ref = rdmaPortOf(parent, rdma);
    if (!ref || rdma.ports.get(`${ref.device}/${ref.port}`)?.linkLayer !== 'InfiniBand') continue;
    const table = rdma.pkeys.filter((p) => p.device === ref.device && p.port === ref.port).map((p) => p.pkey);
    if (table.some((p) => (Number(p) & 0x7fff) === want)) continue;
    problems.push(
      `${parent} → ${ref.device}/${ref.port}: P_Key ${pkey} is not in the port's P_Key table (${table.join(' ') || 'empty'}): the subnet manager has not made this port a member of the partition, so ${nic.iface} gets no carrier; add the port's GUID to the partition (opensm: /etc/opensm/partitions.conf, or the switch's SM) and wait a sweep`,
    );
  }
  return problems;
}
