/**
 * The probe's fabric section: what `ibdev2netdev`, `ibstat` and `ibv_devinfo` would say about each
 * fabric NIC, read from sysfs with the shell alone (a minimal host has none of those tools, and a
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
 * entries in use. Only `read`, a builtin: a ConnectX port's 256 GIDs and 128 P_Keys cost no fork.
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

/** An empty entry of a GID table, as sysfs prints it. */
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
    '\ts rdma',
    // Every device, for the message when none is behind a NIC; then RoCE/software ports' netdevs.
    '\tds=; for f in /sys/class/infiniband/*; do [ -d "$f" ] && ds="$ds ${f##*/}"; done; echo "devices$ds"',
    '\twant=',
    '\tfor f in /sys/class/infiniband/*/ports/*/gid_attrs/ndevs/0; do',
    '\t\tv=; read -r v 2>/dev/null <"$f" || continue; [ -n "$v" ] || continue',
    '\t\tp=${f%/gid_attrs/ndevs/0}; d=${p%/ports/*}; echo "ndev ${d##*/} ${p##*/} $v"',
    `\t\tfor i in ${names}; do [ "$v" = "$i" ] && want="$want \${d##*/}"; done`,
    '\tdone',
    `\tfor i in ${names}; do`,
    '\t\tn=/sys/class/net/$i; m=; dp=; di=; d=',
    '\t\tread -r m 2>/dev/null <"$n/mode"; read -r dp 2>/dev/null <"$n/dev_port"; read -r di 2>/dev/null <"$n/dev_id"',
    '\t\tfor f in "$n"/device/infiniband/*; do [ -d "$f" ] && d="$d ${f##*/}"; done',
    '\t\tprintf \'nic %s|%s|%s|%s|%s\\n\' "$i" "$m" "$dp" "$di" "${d# }"; want="$want$d"',
    '\tdone',
    '\tseen=',
    '\tfor d in $want; do',
    '\t\tcase " $seen " in *" $d "*) continue ;; esac; seen="$seen $d"',
    '\t\tfor p in "/sys/class/infiniband/$d"/ports/*; do',
    '\t\t\t[ -d "$p" ] || continue; st=; ph=; ra=; ll=; li=; sm=',
    '\t\t\tread -r st 2>/dev/null <"$p/state"; read -r ph 2>/dev/null <"$p/phys_state"; read -r ra 2>/dev/null <"$p/rate"',
    '\t\t\tread -r ll 2>/dev/null <"$p/link_layer"; read -r li 2>/dev/null <"$p/lid"; read -r sm 2>/dev/null <"$p/sm_lid"',
    '\t\t\tprintf \'port %s %s %s|%s|%s|%s|%s|%s\\n\' "$d" "${p##*/}" "$st" "$ph" "$ra" "$ll" "$li" "$sm"',
    '\t\t\tif [ "$ll" = Ethernet ]; then',
    '\t\t\t\tfor g in "$p"/gids/*; do',
    '\t\t\t\t\tv=; read -r v 2>/dev/null <"$g" || continue',
    `\t\t\t\t\tcase $v in ''|${ZERO_GID}) continue ;; esac`,
    '\t\t\t\t\tt=; read -r t 2>/dev/null <"$p/gid_attrs/types/${g##*/}"; echo "gid $d ${p##*/} ${g##*/} $v $t"',
    '\t\t\t\tdone',
    '\t\t\telse',
    '\t\t\t\tv=; read -r v 2>/dev/null <"$p/gids/0" && echo "gid $d ${p##*/} 0 $v"',
    '\t\t\t\tfor k in "$p"/pkeys/*; do',
    '\t\t\t\t\tv=; read -r v 2>/dev/null <"$k" || continue',
    '\t\t\t\t\tcase $v in \'\'|0x0000) ;; *) echo "pkey $d ${p##*/} ${k##*/} $v" ;; esac',
    '\t\t\t\tdone',
    '\t\t\tfi',
    '\t\tdone',
    '\tdone',
  ];
}
