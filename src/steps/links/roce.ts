/**
 * `roceMode`: the RDMA CM's default RoCE mode of each fabric NIC's RoCE port —
 * `default_roce_mode` under /sys/kernel/config/rdma_cm/<device>/ports/<port>/, the file
 * rdma-core's `cma_roce_mode` writes (configfs forgets it at every boot). The routing program sets
 * it for each NIC as it comes up (host/ibfleet-routes: set_roce_mode, from routes.conf's `roce-mode`), so the hook re-applies it at every boot; the port is the one
 * whose GID table names the NIC's netdev (gid_attrs/ndevs), as for any RoCE device. Pure.
 */
import { factOf, type HostFacts } from '../../facts/host-facts.js';
import { rdmaPortOf } from '../../facts/rdma-facts.js';
import type { Nic } from '../../inventory/model.js';
import { change, nicFinding, type Finding } from '../step.js';
import { LINKS_FACT } from './facts.js';
import { hardwareIface } from './hardware.js';
import type { RoceMode } from './params.js';

/** The words configfs takes and prints for each mode. */
export const ROCE_MODE_TEXT: Readonly<Record<RoceMode, string>> = { v1: 'IB/RoCE v1', v2: 'RoCE v2' };

export function roceFinding(facts: HostFacts, nic: Nic, mode: RoceMode): Finding[] {
  const ref = facts.rdma ? rdmaPortOf(hardwareIface(nic), facts.rdma) : undefined;
  if (!ref) return [];
  const have = factOf(facts, LINKS_FACT).roce.get(`${ref.device}/${ref.port}`) ?? '';
  const ok = have === ROCE_MODE_TEXT[mode];
  const port = `${ref.device}/${ref.port}`;
  return [
    nicFinding(
      nic,
      'roce mode',
      `roce ${nic.iface}`,
      ok,
      ok
        ? `${nic.iface}: ${port} default RoCE mode ${have}`
        : `${nic.iface}: ${port} default RoCE mode is ${have || 'unset'}, want ${ROCE_MODE_TEXT[mode]}`,
      change('roce-mode', 'set', nic.iface, `${nic.iface}: ${port} default_roce_mode ${ROCE_MODE_TEXT[mode]}`),
    ),
  ];
}
