/**
 * One of the lab's stand-ins (docs/lab-internals.md: the stand-ins): the kernel's RoCE GID
 * management, for a RoCE lab host (`lab up --link-layer ethernet`). The kernel adds a v1 and a v2
 * GID for each IP address as the address comes on the interface and empties their slots as it
 * goes, leaving every other entry where it is; the lab's GID table is files in the host's emulated
 * sysfs (rdma-emulation.ts), written once at boot. This bash program, a daemon of the host started
 * before its manager, keeps them following: it watches the host's addresses (`ip monitor address`)
 * and, for the NIC an event names, empties the IPv4-mapped entries whose address is gone and gives a
 * new address's v1 and v2 entries the first free slots. So a fresh host's table gains its GIDs when
 * deploy gives the NIC its address, and a second address (or one removed by hand) shows in the
 * table as on a real host. The link-local pair and entries `lab gid` put there stay until the next
 * boot, which starts the table anew as the kernel does: the link-local pair, then the addresses as
 * they come (so `lab reboot` forgets a reordered table). It forks nothing while idle. Pure: the text
 * of the program.
 */
import { shellQuote } from '../script/shell.js';
import { HOST_BOOT_DIR } from './manager-boot.js';
import type { LabHost } from './plan.js';
import { GID_SLOTS, ZERO_GID, portDir } from './rdma-emulation.js';

/** Seconds after its start the follower reads every NIC's addresses once: by then `ip monitor` listens. */
const FIRST_SYNC_S = 0.5;

const BODY = `
# mapped A.B.C.D: the IPv4-mapped GID of an address, in $g, as the kernel writes it.
mapped() {
	local a b c d
	IFS=. read -r a b c d <<<"$1"
	printf -v g '0000:0000:0000:0000:0000:ffff:%04x:%04x' $((a * 256 + b)) $((c * 256 + d))
}

# put DIR SLOT GID TYPE NDEV: one entry, each file rewritten in place (an overlay shows a lower
# layer's file anew only when the same file is rewritten).
put() {
	printf '%s\\n' "$3" >"$1/gids/$2"
	printf '%s\\n' "$4" >"$1/gid_attrs/types/$2"
	printf '%s\\n' "$5" >"$1/gid_attrs/ndevs/$2"
}

# follow IFACE: its port's IPv4 GIDs made to match the interface's addresses now.
follow() {
	local iface=$1 dir=\${port[$1]} line i slot
	local -a want=() table=()
	while read -r line; do
		line=\${line#*inet }
		mapped "\${line%%/*}"
		want+=("$g")
	done < <(ip -o -4 address show dev "$iface")
	for ((i = 0; i < slots; i++)); do
		read -r "table[i]" <"$dir/gids/$i" || table[i]=$zero
	done
	# An address gone: its entries emptied, as the kernel deletes them.
	for ((i = 0; i < slots; i++)); do
		[[ \${table[i]} == 0000:0000:0000:0000:0000:ffff:* ]] || continue
		[[ " \${want[*]} " == *" \${table[i]} "* ]] && continue
		put "$dir" "$i" "$zero" '' ''
		table[i]=$zero
	done
	# An address new: v1 then v2, each in the first free slot (the kernel's table keeps the others' places).
	for g in "\${want[@]}"; do
		[[ " \${table[*]} " == *" $g "* ]] && continue
		for type in 'IB/RoCE v1' 'RoCE v2'; do
			for ((slot = 0; slot < slots; slot++)); do [[ \${table[slot]} == "$zero" ]] && break; done
			((slot < slots)) || break
			put "$dir" "$slot" "$g" "$type" "$iface"
			table[slot]=$g
		done
	done
}

# boot IFACE: the table as the kernel makes it at boot, before any address: the link-local pair alone
# (what an earlier boot, \`lab gid\` or a flap left is gone with the old kernel).
boot() {
	local dir=\${port[$1]} i g
	for ((i = 0; i < slots; i++)); do
		read -r g <"$dir/gids/$i" || continue
		[[ $g == fe80:0000:0000:0000:* || $g == "$zero" ]] || put "$dir" "$i" "$zero" '' ''
	done
}

for iface in "\${!port[@]}"; do boot "$iface"; done

# Every address event names its interface ("4: ib0    inet …", "Deleted 4: ib0 …"); "sync" is the first read.
{
	ip -o monitor address &
	sleep ${FIRST_SYNC_S}
	echo sync
	wait
} | while read -r line; do
	if [[ $line == sync ]]; then
		for iface in "\${!port[@]}"; do follow "$iface"; done
		continue
	fi
	line=\${line#Deleted }
	line=\${line#*: }
	iface=\${line%%[[:space:]]*}
	[[ -n \${port[$iface]+set} ]] && follow "$iface"
done
`;

/** The program for a RoCE host: its NICs' port directories as the host sees them, then the body. */
export function renderGidFollower(host: LabHost): string {
  const ports = host.nics.map((n) => `\t[${n.iface}]=${shellQuote(`${HOST_BOOT_DIR}/sys/${portDir(host, n.iface)!}`)}`);
  return `#!/bin/bash
# ibfleet lab: the kernel's RoCE GID management for this host (see src/lab/gid-follower.ts).
set -u
zero=${ZERO_GID}
slots=${GID_SLOTS}
declare -A port=(
${ports.join('\n')}
)
${BODY}`;
}
