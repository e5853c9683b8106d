/**
 * `lab restart H`: the host's network manager restarted as an admin would (`systemctl restart
 * NetworkManager` / `systemd-networkd`; ifupdown: ifdown + ifup of each fabric NIC) — its daemon
 * ended by PID and started again over the /run it left, D-Bus and dispatchers kept. NetworkManager
 * then re-applies its connections and dispatches `up`; networkd drops the rules it did not make.
 */
import { existsSync, readFileSync } from 'node:fs';
import { UsageError } from '../errors.js';
import { labExec } from './exec.js';
import { MANAGER_DAEMON, renderManagerRestartScript } from './manager-boot.js';
import { hostPaths } from './names.js';
import { awaitDispatched, markDispatch } from './dispatched.js';
import { hostProcesses, isRunning, signal, waitUntil } from './processes.js';
import { requireLab } from './state.js';
import type { RunResult } from './system.js';

export interface LabRestart {
  readonly id: number;
  readonly manager: string;
  readonly result: RunResult;
  /** Whether the dispatcher had run the hooks of the restart when it returned (dispatched.ts). */
  readonly settled: boolean;
  readonly ok: boolean;
}

/**
 * `onUp` is called when the manager is up again (NetworkManager's startup complete, networkd's NICs
 * routable), before the wait for its dispatcher: what a test measures a bound from.
 */
export async function labRestartManager(name: string, id: number, onUp?: () => void): Promise<LabRestart> {
  const plan = await requireLab(name);
  const host = plan.hosts.find((h) => h.id === id);
  if (!host)
    throw new UsageError(`lab ${name} has no host ${id} (its hosts: ${plan.hosts.map((h) => h.id).join(', ')})`);
  if (!plan.networkDaemons) throw new UsageError(`lab ${name} runs no network managers; lab restart needs them`);
  const mark = await markDispatch(plan, host);
  if (host.manager !== 'ifupdown') {
    const pidFile = `${hostPaths(plan.name, id).boot}/${MANAGER_DAEMON[host.manager]}.pid`;
    const pid = existsSync(pidFile) ? Number(readFileSync(pidFile, 'utf8').trim()) : NaN;
    // Only a PID that is one of the host's processes: a stale file never names another process.
    if ((await hostProcesses(plan.name, id)).some((p) => p.pid === pid)) {
      signal([pid], 'SIGTERM');
      if (!(await waitUntil(() => !isRunning(pid), 5000))) signal([pid], 'SIGKILL');
      await waitUntil(() => !isRunning(pid), 5000);
    }
  }
  const result = await labExec(plan.name, id, ['sh', '-c', renderManagerRestartScript(plan, host)], {
    timeoutMs: 90_000,
  });
  onUp?.();
  const settled = result.code === 0 && (await awaitDispatched(plan, host, mark, { kind: 'restart' }));
  return { id, manager: host.manager, result, settled, ok: result.code === 0 && settled };
}
