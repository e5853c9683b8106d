# shellcheck shell=sh
# A part of the read-only probe (src/render/probe-script.ts) sent only by the probes deploy and
# status decide from, not by the probe again after a change. s and rd: probe.sh's.

# probe_manager_config: the evidence of which network manager configures the fabric NICs: every
# netplan file whole, and the lines of the other managers' configuration that name an interface
# (one grep over all of them).
probe_manager_config() {
	s netplan; for f in /lib/netplan/*.yaml /etc/netplan/*.yaml /run/netplan/*.yaml; do [ -f "$f" ] && printf '#file %s\n' "$f" && rd "$f"; done
	set --
	for f in /etc/NetworkManager/system-connections/* /run/NetworkManager/system-connections/* /etc/sysconfig/network-scripts/ifcfg-* /etc/network/interfaces /etc/network/interfaces.d/*; do [ -f "$f" ] && set -- "$@" "$f"; done
	s config; if [ "$#" -gt 0 ]; then grep -s -H -E '^[[:space:]]*interface-name[[:space:]]*=|^DEVICE=|^[[:space:]]*(auto|allow-[a-z-]+|iface)[[:space:]]' -- "$@"; fi
}
