# NetworkManager before 1.42 without systemd: the route watcher (installed only there) follows reapplies.
{{WATCH_START}}
