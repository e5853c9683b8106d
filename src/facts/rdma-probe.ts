/**
 * The probe's fabric section: what `ibdev2netdev`, `ibstat` and `ibv_devinfo` would say about each
 * fabric NIC, read from sysfs by the probe itself (a minimal host has none of those tools, and a
 * fork per file would cost every host of a fleet command a millisecond each). Parsing and the
 * mapping from interface to RDMA port live in src/plan/rdma-facts.ts.
 *
 * Per NIC it prints the hints the kernel gives about its RDMA device: the devices of its PCI
 * function (`/sys/class/net/IF/device/infiniband/`), `dev_port` and `dev_id` (which port of a
 * dual-port card the interface sits on: both NICs of a ConnectX-3 share one device), and the IPoIB
 * `mode`. RoCE and software devices name their netdev per port in `gid_attrs/ndevs/0` instead. Then,
 * for the devices the NICs lead to and only those, each port's state, physical state, rate, link
 * layer, LID and SM LID; on an Ethernet (RoCE) port every GID entry in use with its type (RoCE v2
 * is what RDMA CM uses across a routed fabric; which index carries the NIC's address is what NCCL
 * and UCX must be told), on an InfiniBand port GID 0 (its subnet prefix) and the P_Key table's
 * entries in use. What decides what else is read (a port's netdev, its link layer) the shell reads
 * itself; the values are queued for the probe's one awk (rd_later: host/sent/probe.sh), which reads
 * a ConnectX port's 256 GIDs or 128 P_Keys without a fork each, or the shell's `read` with an open,
 * dup2, fcntl and close and a system call per byte each.
 */
import type { Host } from '../inventory/model.js';
import { parseIpv4 } from '../inventory/ipv4.js';
import { shellQuote } from '../script/shell.js';

/**
 * The GID an IPv4 address gets in a RoCE port's table, as sysfs prints it: the IPv4-mapped IPv6
 * address in eight groups (`0000:0000:0000:0000:0000:ffff:ac10:2201` for 172.16.34.1).
 */
export function ipv4MappedGid(address: string): string {
  const value = parseIpv4(address) ?? 0;
  const hex = (n: number) => n.toString(16).padStart(4, '0');
  return `0000:0000:0000:0000:0000:ffff:${hex(value >>> 16)}:${hex(value & 0xffff)}`;
}

/** An empty entry of a GID table, as sysfs prints it (host/sent/probe.sh's reader leaves such entries out). */
export const ZERO_GID = '0000:0000:0000:0000:0000:0000:0000:0000';

/**
 * Lines of the probe's `rdma` section (inside the probe's command substitution, one tab deep).
 * `ifaces`: the NICs to look at; undefined (onboard, before it knows the names): every interface
 * that has an RDMA device.
 */
export function renderRdmaProbe(host: Host, ifaces: readonly string[] | undefined): string[] {
  const names = ifaces
    ? ifaces.map(shellQuote).join(' ')
    : '$(for n in /sys/class/net/*/device/infiniband; do [ -d "$n" ] && { n=${n%/device/infiniband}; printf "%s " "${n##*/}"; }; done)';
  return [
    '\trd_mark rdma',
    // Every device, for the message when none is behind a NIC; then RoCE/software ports' netdevs.
    '\tds=; for f in /sys/class/infiniband/*; do [ -d "$f" ] && ds="$ds ${f##*/}"; done; rd_line "devices$ds"',
    '\twant=',
    '\tfor f in /sys/class/infiniband/*/ports/*/gid_attrs/ndevs/0; do',
    '\t\tv=; read -r v 2>/dev/null <"$f" || continue; [ -n "$v" ] || continue',
    '\t\tp=${f%/gid_attrs/ndevs/0}; d=${p%/ports/*}; rd_line "ndev ${d##*/} ${p##*/} $v"',
    `\t\tfor i in ${names}; do [ "$v" = "$i" ] && want="$want \${d##*/}"; done`,
    '\tdone',
    `\tfor i in ${names}; do`,
    '\t\tn=/sys/class/net/$i; d=',
    '\t\tfor f in "$n"/device/infiniband/*; do [ -d "$f" ] && d="$d ${f##*/}"; done',
    '\t\trd_part "nic $i|" "$n/mode"; rd_part \'|\' "$n/dev_port"; rd_part \'|\' "$n/dev_id"; rd_line "|${d# }"; want="$want$d"',
    '\tdone',
    '\tseen=',
    '\tfor d in $want; do',
    '\t\tcase " $seen " in *" $d "*) continue ;; esac; seen="$seen $d"',
    '\t\tfor p in "/sys/class/infiniband/$d"/ports/*; do',
    // The link layer decides what else is read: the shell reads it now, the rest is queued.
    '\t\t\t[ -d "$p" ] || continue; ll=; read -r ll 2>/dev/null <"$p/link_layer"',
    '\t\t\trd_part "port $d ${p##*/} " "$p/state"; rd_part \'|\' "$p/phys_state"; rd_part \'|\' "$p/rate"',
    '\t\t\trd_part "|$ll|" "$p/lid"; rd_value \'|\' "$p/sm_lid"',
    '\t\t\tif [ "$ll" = Ethernet ]; then rd_table R "gid $d ${p##*/}" "$p"',
    '\t\t\telse rd_later S "gid $d ${p##*/} 0 " "$p/gids/0"; rd_table E "pkey $d ${p##*/}" "$p"',
    '\t\t\tfi',
    '\t\tdone',
    '\tdone',
  ];
}
