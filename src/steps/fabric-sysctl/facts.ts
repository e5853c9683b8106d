/**
 * What fabric-sysctl reads on a host: the per-interface kernel settings it sets (of `all`,
 * `default` — what a new interface starts with, and what rollback puts back — and each fabric NIC,
 * or every interface when onboard does not know the NICs' names yet). A host's NICs' are queued for
 * the probe's one awk (rd_mark, rd_value: host/sent/probe.sh): no fork per file, no byte-wise
 * `read`. Pure.
 */
import type { Fact } from '../../facts/fact.js';
import { shellQuote } from '../../script/shell.js';

/** Sysctl keys in the order they are applied and persisted. */
export const SYSCTL_KEYS = ['arp_ignore', 'arp_announce', 'rp_filter', 'accept_local'] as const;
export type SysctlKey = (typeof SYSCTL_KEYS)[number];

/** Interface (or `all`, `default`) → key → value ('' when unreadable). */
export type SysctlValues = ReadonlyMap<string, Readonly<Record<string, string>>>;

function parseValues(lines: readonly string[]): Record<string, string> {
  const values: Record<string, string> = {};
  for (const l of lines) {
    const m = /^([a-z_]+)=(.*)$/.exec(l.trim());
    if (m) values[m[1]!] = m[2]!;
  }
  return values;
}

export const SYSCTL_FACT: Fact<SysctlValues> = {
  name: 'sysctl',
  probe: (host, options) =>
    options.everyInterface
      ? [
          // Every interface of the machine (onboard's look): read at once, with the shell, not queued — a
          // host of containers has hundreds, and the probe's queue is made for a host's NICs.
          `\tfor d in /proc/sys/net/ipv4/conf/*; do s sysctl "\${d##*/}"; for k in ${SYSCTL_KEYS.join(' ')}; do v=; read -r v 2>/dev/null <"$d/$k"; printf '%s=%s\\n' "$k" "$v"; done; done`,
        ]
      : ['all', 'default', ...host.nics.map((n) => n.iface)].map(
          (iface) =>
            `\trd_mark sysctl ${shellQuote(iface)}; for k in ${SYSCTL_KEYS.join(' ')}; do rd_value "$k=" ${shellQuote(`/proc/sys/net/ipv4/conf/${iface}/`)}"$k"; done`,
        ),
  parse: (sections) => new Map([...sections].map(([key, lines]) => [key.slice('sysctl '.length), parseValues(lines)])),
};
