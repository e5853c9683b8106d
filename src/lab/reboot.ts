/**
 * `lab reboot H`: puts hosts back to their boot state, then runs their installed hooks the way
 * their network manager would at boot — the test that a deploy survives a reboot.
 */
import pLimit from 'p-limit';
import { UsageError } from '../errors.js';
import type { Manager } from '../inventory/model.js';
import { foldHosts } from '../inventory/select.js';
import { labExec } from './exec.js';
import { bootInvocations, hookDir, ifupHookRuns, parseHookListing, runnableHooks, skipReason, type IfupHookRun } from './hooks.js';
import type { LabHost, LabPlan } from './plan.js';
import { renderListHooksScript, renderResetScript } from './scripts.js';
import { requireLab } from './state.js';
import type { RunResult } from './system.js';

export interface HookRun {
  /** What the manager reported: `routable ib0`, `up ib1`, `hostname`, `ifup -a`. */
  readonly event: string;
  /** The command line as run in the host. */
  readonly command: readonly string[];
  /** Variables the manager sets (PATH aside). */
  readonly env: Readonly<Record<string, string>>;
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
  /** ifupdown: the if-up.d scripts run-parts executed, in order, with the IFACE each saw. */
  readonly scripts?: readonly IfupHookRun[];
}

export interface HostReboot {
  readonly id: number;
  readonly name: string;
  readonly manager: Manager;
  /** Resetting to boot state (exit code and output of the reset script). */
  readonly reset: RunResult;
  readonly runs: readonly HookRun[];
  /** Files in the hook directory the manager would not run, and why. */
  readonly skipped: readonly { readonly name: string; readonly reason: string }[];
  readonly ok: boolean;
}

export async function labReboot(name: string, ids: readonly number[]): Promise<HostReboot[]> {
  const plan = await requireLab(name);
  const known = new Set(plan.hosts.map((h) => h.id));
  const unknown = ids.filter((id) => !known.has(id));
  if (unknown.length) throw new UsageError(`lab ${name} has no host ${foldHosts(unknown)} (its hosts: ${foldHosts(known)})`);
  const limit = pLimit(8);
  return Promise.all(ids.map((id) => limit(() => rebootHost(plan, plan.hosts.find((h) => h.id === id)!))));
}

async function rebootHost(plan: LabPlan, host: LabHost): Promise<HostReboot> {
  const base = { id: host.id, name: host.name, manager: host.manager };
  const reset = await labExec(plan.name, host.id, ['sh', '-c', renderResetScript(plan, host)]);
  if (reset.code !== 0) return { ...base, reset, runs: [], skipped: [], ok: false };

  if (host.manager === 'ifupdown') {
    // A real `ifup -a`, as networking.service runs it at boot; -v makes run-parts name each hook.
    const command = ['ifup', '-a', '-v'];
    const result = await labExec(plan.name, host.id, command);
    const run: HookRun = { event: 'ifup -a', command, env: {}, ...result, scripts: ifupHookRuns(result.stdout + result.stderr) };
    return { ...base, reset, runs: [run], skipped: [], ok: result.code === 0 };
  }

  const dir = hookDir(host.manager);
  const listing = await labExec(plan.name, host.id, ['sh', '-c', renderListHooksScript(dir)]);
  const entries = parseHookListing(listing.stdout);
  const manager = host.manager;
  const skipped = entries.flatMap((e) => {
    const reason = skipReason(manager, e);
    return reason === undefined || e.type === 'd' ? [] : [{ name: e.name, reason }];
  });
  const runs: HookRun[] = [];
  for (const call of bootInvocations(plan, host, runnableHooks(manager, entries))) {
    const command = [call.script, ...call.args];
    const result = await labExec(plan.name, host.id, command, { env: call.env });
    const { PATH: _path, ...env } = call.env;
    runs.push({ event: call.event, command, env, ...result });
  }
  return { ...base, reset, runs, skipped, ok: listing.code === 0 && runs.every((r) => r.code === 0) };
}
