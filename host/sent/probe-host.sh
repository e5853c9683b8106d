# shellcheck shell=sh
# A part of the read-only probe (src/render/probe-script.ts) sent by every probe but the one closing
# a change (src/facts/fact.ts ProbeOptions.closing): what no change alters, which the controller
# then takes from the probe before the change. s and rd_whole: probe.sh's.

# probe_host VERSION: the probe's version, who runs it, the machine's own name (onboard writes it
# to the inventory unless told another), its OS release and the tools it has: what no change
# alters, so the probe closing a change leaves it out (src/facts/fact.ts ProbeOptions.closing).
probe_host() {
	s probe "$1"
	s uid; while read -r k _ e _; do [ "$k" = Uid: ] && { echo "$e"; break; }; done </proc/self/status
	rd_whole hostname /proc/sys/kernel/hostname
	rd_whole os /etc/os-release
	s tools; for t in flock sha256sum stat networkd-dispatcher NetworkManager nmcli ifup netplan networkctl ping rping; do command -v "$t" >/dev/null 2>&1 && echo "$t"; done
}
