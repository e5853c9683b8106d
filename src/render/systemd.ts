/**
 * Whether systemd runs a host, as the change scripts and the probe ask it: by what runs — PID 1 is
 * systemd, or `systemctl is-system-running` reports the state of a running system — and not by
 * /run/systemd/system, which says only that files for systemd are there: `netplan generate` writes
 * units under it on hosts systemd does not run (a container, a chroot-like host), where every
 * `systemctl` call then fails. Pure string builders.
 */

/** What `systemctl is-system-running` prints while systemd runs; `offline` (or nothing: no bus) is a host it does not run. */
export const SYSTEMD_RUNNING_STATES = ['initializing', 'starting', 'running', 'degraded', 'maintenance', 'stopping'] as const;

/**
 * `systemd_runs`: 0 where systemd runs. systemctl is only asked when PID 1 is not systemd: each
 * process costs the host a fork and an exec.
 */
export const SYSTEMD_RUNS_FUNCTION = `# systemd_runs: whether systemd runs this host: PID 1 is systemd, or systemctl reports a running
# system. /run/systemd/system alone says nothing: netplan generate writes units there without systemd.
systemd_runs() {
	sd_pid1=
	read -r sd_pid1 </proc/1/comm 2>/dev/null
	[ "$sd_pid1" = systemd ] && return 0
	command -v systemctl >/dev/null 2>&1 || return 1
	case $(systemctl is-system-running 2>/dev/null) in
	${SYSTEMD_RUNNING_STATES.join(' | ')}) return 0 ;;
	esac
	return 1
}`;

/** Said in the plan and in status where the hook persists and no systemd runs: not drift, the host simply has no timers. */
export const NO_SYSTEMD_NOTE = 'no systemd: the periodic repair is not active; the hooks still apply the routing';
