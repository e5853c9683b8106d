/**
 * `roceMode`: the RDMA CM's default RoCE mode of each fabric NIC's RoCE port —
 * `default_roce_mode` under /sys/kernel/config/rdma_cm/<device>/ports/<port>/, the file
 * rdma-core's `cma_roce_mode` writes (configfs forgets it at every boot). The routing script sets
 * it for each NIC as it comes up, so the hook re-applies it at every boot; the port is the one
 * whose GID table names the NIC's netdev (gid_attrs/ndevs), as for any RoCE device. Pure.
 */
import { factOf, type HostFacts } from '../../facts/host-facts.js';
import { rdmaPortOf } from '../../facts/rdma-facts.js';
import type { Nic } from '../../inventory/model.js';
import { change, nicFinding, type Finding, type ScriptPart } from '../step.js';
import { LINKS_FACT } from './facts.js';
import { hardwareIface } from './hardware.js';
import type { RoceMode } from './params.js';

/** The words configfs takes and prints for each mode. */
export const ROCE_MODE_TEXT: Readonly<Record<RoceMode, string>> = { v1: 'IB/RoCE v1', v2: 'RoCE v2' };

const SET_ROCE_MODE_FUNCTION = `# set_roce_mode IFACE MODE: the RDMA CM's default RoCE mode of the RoCE port behind IFACE
# (configfs, forgotten at every boot: set each time the NIC comes up). Under --check, said, not set.
set_roce_mode() {
	for f in /sys/class/infiniband/*/ports/*/gid_attrs/ndevs/0; do
		v=
		read -r v 2>/dev/null <"$f" || continue
		[ "$v" = "$1" ] || continue
		p=\${f%/gid_attrs/ndevs/0}
		d=\${p%/ports/*}
		c=/sys/kernel/config/rdma_cm/\${d##*/}
		[ -d "$c" ] || mkdir "$c" 2>/dev/null || { say "$1: cannot create $c (is rdma_cm loaded and configfs mounted?)"; return 1; }
		current=
		read -r current 2>/dev/null <"$c/ports/\${p##*/}/default_roce_mode"
		[ "$current" = "$2" ] && return 0
		if [ "$CHECK" -eq 1 ]; then
			drift "$1: default RoCE mode is \${current:-unreadable}, want $2"
			return 0
		fi
		if ! printf '%s\\n' "$2" >"$c/ports/\${p##*/}/default_roce_mode"; then
			say "$1: cannot set default_roce_mode $2"
			return 1
		fi
		say "$1: default RoCE mode $current -> $2"
		nic_changed=1
		return 0
	done
	say "$1: no RoCE port names $1 (gid_attrs/ndevs)"
	return 1
}

`;

export function roceScriptPart(mode: RoceMode): ScriptPart {
  return {
    functions: [SET_ROCE_MODE_FUNCTION],
    nicSettings: [`\tset_roce_mode "$iface" '${ROCE_MODE_TEXT[mode]}' || return 1`],
  };
}

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
