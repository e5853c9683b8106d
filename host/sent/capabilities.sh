# shellcheck shell=sh
# What verify asks a host before it plans the cells (src/render/verify-scripts.ts, before the
# probe): its RDMA devices, rping, ping, and the prober it has — python3 that can open a raw ICMP
# socket (not merely a python3 on the PATH), then fping. python3 runs isolated and without its site
# module (-I -S), as verify-scripts.ts PYTHON3 runs the prober: half of its start-up is site's.
export LC_ALL=C PATH=/usr/sbin:/usr/bin:/sbin:/bin
printf "rdma-devices="; for d in /sys/class/infiniband/*; do [ -e "$d" ] && printf '%s ' "${d##*/}"; done; echo
printf "rping="; command -v rping || echo
printf "ping="; command -v ping || echo
printf "python3="; python3 -I -S -c 'import socket; socket.socket(2, 3, 1).close(); print("yes")' 2>/dev/null || echo
printf "fping="; command -v fping || echo
