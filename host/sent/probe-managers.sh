# shellcheck shell=sh
# A part of the read-only probe (src/render/probe-script.ts) sent only by the probes deploy and
# status decide from, not by the probe again after a change. s, rd_mark and rd_later: probe.sh's.

# probe_manager_config: the evidence of which network manager configures the fabric NICs: every
# netplan file whole (each behind `#file PATH`, read with the probe's other files at its end; a name
# with a newline, which no line could hold, is left out), and the lines of the other managers'
# configuration that name an interface (one grep over all of them).
probe_manager_config() {
	rd_mark netplan
	for f in /lib/netplan/*.yaml /etc/netplan/*.yaml /run/netplan/*.yaml; do
		# shellcheck disable=SC2154 # rd_nl: probe.sh's
		case $f in *"$rd_nl"*) continue ;; esac
		[ -f "$f" ] && rd_later G '#file' "$f"
	done
	set --
	for f in /etc/NetworkManager/system-connections/* /run/NetworkManager/system-connections/* /etc/sysconfig/network-scripts/ifcfg-* /etc/network/interfaces /etc/network/interfaces.d/*; do [ -f "$f" ] && set -- "$@" "$f"; done
	s config; if [ "$#" -gt 0 ]; then grep -s -H -E '^[[:space:]]*interface-name[[:space:]]*=|^DEVICE=|^[[:space:]]*(auto|allow-[a-z-]+|iface)[[:space:]]' -- "$@"; fi
}
