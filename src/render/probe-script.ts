/**
 * The read-only probe: one POSIX sh script that prints, in marked sections, everything deploy,
 * status and rollback decide from — OS release, interfaces and addresses, rules, the fabric
 * tables, `ip route get` per NIC, sysctls, ibfleet's files, the evidence of which network
 * manager configures the fabric NICs, and where NetworkManager runs, its version and the active
 * connection profile of each fabric NIC with its routing properties — and the facts the steps declare
 * (src/steps/registry.ts). The probe closing a change reads only what a change can alter
 * (ProbeOptions.closing). Parsing lives in src/facts/.
 */
import type { ProbeOptions } from '../facts/fact.js';
import { renderNmProbe } from '../facts/nm-facts.js';
import { HEADER_LINES, PROBE_VERSION } from '../facts/probe-format.js';
import { renderRdmaProbe } from '../facts/rdma-probe.js';
import { deriveNicAddress } from '../inventory/derive.js';
import type { Fleet, Host } from '../inventory/model.js';
import { hostScript } from '../script/host-functions.js';
import { sentShell } from '../script/sent-shell.js';
import { shellQuote } from '../script/shell.js';
import { OWNED_PATHS, STEP_FACTS } from '../steps/registry.js';
import { obstacleProbe, type WriteTargets } from '../facts/obstacles.js';
import { renderTakeLock, type LockKind } from './host-lock.js';

export { PROBE_END } from '../facts/probe-format.js';
export type { ProbeOptions } from '../facts/fact.js';

/** A fabric address that is not this host's, for `ip route get` (no packet is sent). */
export function probePeerAddress(fleet: Fleet, host: Host, nicIndex: number): string {
  return deriveNicAddress(fleet.fabric.subnet, host.id === 1 ? 2 : 1, nicIndex);
}

/**
 * Where ibfleet may write, whatever the playbook: its files, and the directories they and their
 * staged copies (a hook's, one directory up) live in — the probe says what stands in the way there.
 */
const parent = (p: string) => p.replace(/\/[^/]+$/, '');
export const WRITE_TARGETS: WriteTargets = {
  files: OWNED_PATHS,
  dirs: [...new Set(OWNED_PATHS.flatMap((p) => [parent(p), parent(parent(p))]))].sort(),
};

/**
 * Every process the probe starts costs the host a fork and an exec (about a millisecond each on a
 * small machine, and a fleet command pays it per host), and the shell's `read` takes a byte per
 * system call, so the probe queues the files, sysctls and sysfs values it reads and one awk prints
 * them all at its end (host/sent/probe.sh rd_flush), asks iproute2 everything in one `ip -batch`,
 * checksums the files in one `sha256sum`, and greps every manager's configuration in one `grep`.
 * Its output is collected and written at once: one SSH packet instead of one per line.
 */
export function renderProbeBody(host: Host, fleet: Fleet, options: ProbeOptions = { managerEvidence: true }): string {
  const gets = host.nics.map((n) => ({
    iface: n.iface,
    peer: probePeerAddress(fleet, host, n.index),
    from: n.address,
  }));
  // What no change alters, the probe closing one leaves out (ProbeOptions.closing).
  const opening = options.closing !== true;
  const calls = [
    ...(opening ? [`${sentShell('probe-host')}\tprobe_host ${PROBE_VERSION}`] : []),
    `\tprobe_ip ${shellQuote(gets.map((g) => `route get ${g.peer} from ${g.from}`).join('\n'))} ${gets.map((g) => `${shellQuote(g.iface)} ${g.peer} ${g.from}`).join(' ')}`,
    ...STEP_FACTS.flatMap((fact) => fact.probe(host, options)),
    ...(options.fabric === false
      ? []
      : renderRdmaProbe(host, options.everyInterface ? undefined : host.nics.map((n) => n.iface))),
    ...(opening ? obstacleProbe(WRITE_TARGETS) : []),
    `\tprobe_files ${options.fileContents ? 'content' : opening ? 'head' : 'sums'} ${HEADER_LINES} ${OWNED_PATHS.map(shellQuote).join(' ')}`,
    ...(options.managerEvidence ? [`${sentShell('probe-managers')}\tprobe_manager_config`] : []),
    ...renderNmProbe(host),
    '\tprobe_runtime',
  ];
  return `${sentShell('probe')}probe_output=$(\n${calls.join('\n')}\n)\nprintf '%s\\n' "$probe_output"`;
}

/**
 * The probe as a standalone script (run whole or not at all). With `lock` it first takes the host
 * lock, waiting that long for another run to finish, and the shell keeps it for the change that
 * follows in the same conversation (deploy, rollback); status and dry runs take no lock.
 */
export function renderProbeScript(
  host: Host,
  fleet: Fleet,
  options: Partial<ProbeOptions> & { lock?: { kind: LockKind; waitSeconds: number; runId: string } } = {},
): string {
  const { lock, ...probe } = options;
  const takeLock = lock === undefined ? [] : [renderTakeLock(lock.kind, lock.waitSeconds, lock.runId)];
  return hostScript(
    '__ibfleet_probe_main',
    [
      'set -u',
      'export LC_ALL=C PATH=/usr/sbin:/usr/bin:/sbin:/bin',
      ...takeLock,
      renderProbeBody(host, fleet, { managerEvidence: true, ...probe }),
    ].join('\n'),
  );
}
