/**
 * The lab's `ibv_devinfo`: lab hosts have no HCA for libibverbs to query, so this POSIX sh program
 * prints what rdma-core's ibv_devinfo prints for the host's emulated devices — read from the same
 * /sys/class/infiniband the product reads (rdma-emulation.ts), and each port's active MTU from the
 * lab's file beside the port (the one thing only the HCA knows). `-d DEVICE` and `-i PORT` narrow it
 * as they do ibv_devinfo's. Installed next to the rping stand-in, on the PATH of RDMA hosts only.
 * Pure.
 */
import { ACTIVE_MTU_FILE } from './rdma-emulation.js';

/** `ibv_devinfo`'s enum number for an MTU (IBV_MTU_256 = 1 … IBV_MTU_4096 = 5). */
const MTU_ENUM =
  'case $1 in 256) echo 1 ;; 512) echo 2 ;; 1024) echo 3 ;; 2048) echo 4 ;; 4096) echo 5 ;; *) echo 0 ;; esac';

export function renderIbvDevinfoStandIn(): string {
  return `#!/bin/sh
# ibv_devinfo stand-in of the ibfleet rehearsal lab (not rdma-core's; see docs/lab-internals.md).
set -u
want_dev=''
want_port=''
while [ "$#" -gt 0 ]; do
	case $1 in
	-d) want_dev=$2; shift ;;
	-i) want_port=$2; shift ;;
	-v | -l) ;;
	*) echo "ibv_devinfo: unknown option $1" >&2; exit 1 ;;
	esac
	shift
done
mtu_enum() { ${MTU_ENUM}; }
val() { v=; read -r v 2>/dev/null <"$1"; printf '%s' "$v"; }
found=0
for d in /sys/class/infiniband/*; do
	[ -d "$d" ] || continue
	dev=\${d##*/}
	[ -z "$want_dev" ] || [ "$dev" = "$want_dev" ] || continue
	found=1
	ports=0
	for p in "$d"/ports/*; do [ -d "$p" ] && ports=$((ports + 1)); done
	printf 'hca_id:\\t%s\\n\\ttransport:\\t\\t\\tInfiniBand (0)\\n\\tfw_ver:\\t\\t\\t\\t%s\\n\\tnode_guid:\\t\\t\\t%s\\n\\tboard_id:\\t\\t\\t%s\\n\\tphys_port_cnt:\\t\\t\\t%s\\n' \\
		"$dev" "$(val "$d/fw_ver")" "$(val "$d/node_guid")" "$(val "$d/board_id")" "$ports"
	for p in "$d"/ports/*; do
		[ -d "$p" ] || continue
		port=\${p##*/}
		[ -z "$want_port" ] || [ "$port" = "$want_port" ] || continue
		state=$(val "$p/state")
		mtu=$(val "$p/${ACTIVE_MTU_FILE}")
		printf '\\t\\tport:\\t%s\\n\\t\\t\\tstate:\\t\\t\\tPORT_%s (%s)\\n\\t\\t\\tmax_mtu:\\t\\t4096 (5)\\n\\t\\t\\tactive_mtu:\\t\\t%s (%s)\\n\\t\\t\\tsm_lid:\\t\\t\\t%s\\n\\t\\t\\tport_lid:\\t\\t%s\\n\\t\\t\\tlink_layer:\\t\\t%s\\n' \\
			"$port" "\${state#*: }" "\${state%%:*}" "$mtu" "$(mtu_enum "$mtu")" "$(($(val "$p/sm_lid")))" "$(($(val "$p/lid")))" "$(val "$p/link_layer")"
	done
done
if [ "$found" -eq 0 ]; then
	[ -n "$want_dev" ] && { echo "ibv_devinfo: device '$want_dev' not found" >&2; exit 255; }
	echo 'No IB devices found'
fi
`;
}
