/**
 * `lab reboot H`: a real boot of the host's networking — its manager and D-Bus are stopped (by PID),
 * its /run forgets the last boot, the kernel state goes back to a fresh boot's, and the manager is
 * started again: it brings the NICs up and its dispatcher runs the installed hooks itself. The test
 * that a deploy survives a reboot.
 */
import pLimit from 'p-limit';
import { UsageError } from '../errors.js';
import type { Manager } from '../inventory/model.js';
import { foldHosts } from '../inventory/select.js';
import { labExec } from './exec.js';
import { hookDir, ifupHookRuns, parseHookListing, runnableHooks, skipReason, type IfupHookRun } from './hooks.js';
import { renderNetworkBootScript, renderResetScript } from './manager-boot.js';
import type { LabHost, LabPlan } from './plan.js';
import { stopHostDaemons, waitForHooksQuiet } from './processes.js';
import { renderListHooksScript } from './scripts.js';
import { requireLab } from './state.js';
import type { RunResult } from './system.js';

export interface HostReboot {
  readonly id: number;
  readonly name: string;
  readonly manager: Manager;
  /** Processes of the last boot ended by PID: the manager, its D-Bus, dispatchers, the timer runner. */
  readonly stopped: number;
  /** Back to a fresh boot's kernel state and /run (exit code and output of the reset script). */
  readonly reset: RunResult;
  /** The boot: the manager started and its NICs up (ifupdown: the output of `ifup -a -v`). */
  readonly boot: RunResult;
  /** ifupdown: the if-up.d scripts `ifup -a` ran, in order, with the IFACE each saw. */
  readonly ifupRuns: readonly IfupHookRun[];
  /** NetworkManager and netplan hosts: the hooks their dispatcher runs, in its order. */
  readonly hooks: readonly string[];
  /** Files in the hook directory the dispatcher skips, and why. */
  readonly skipped: readonly { readonly name: string; readonly reason: string }[];
  /** Whether the dispatchers had gone quiet (no hook running) when the reboot returned. */
  readonly settled: boolean;
  readonly ms: number;
  readonly ok: boolean;
}

export async function labReboot(name: string, ids: readonly number[]): Promise<HostReboot[]> {
  const plan = await requireLab(name);
  if (!plan.networkDaemons)
    throw new UsageError(
      `lab ${name} runs no network managers (started without them, as the benchmark does); lab reboot needs them`,
    );
  const known = new Set(plan.hosts.map((h) => h.id));
  const unknown = ids.filter((id) => !known.has(id));
  if (unknown.length)
    throw new UsageError(`lab ${name} has no host ${foldHosts(unknown)} (its hosts: ${foldHosts(known)})`);
  const limit = pLimit(8);
  return Promise.all(
    ids.map((id) =>
      limit(() =>
        rebootHost(
          plan,
          plan.hosts.find((h) => h.id === id)!,
        ),
      ),
    ),
  );
}

export async function rebootHost(plan: LabPlan, host: LabHost): Promise<HostReboot> {
  const started = performance.now();
  const base = { id: host.id, name: host.name, manager: host.manager };
  const stopped = await stopHostDaemons(plan.name, host.id);
  const reset = await labExec(plan.name, host.id, ['sh', '-c', renderResetScript(plan, host)]);
  const notBooted: RunResult = { code: -1, stdout: '', stderr: 'not booted: the reset failed' };
  if (reset.code !== 0)
    return {
      ...base,
      stopped,
      reset,
      boot: notBooted,
      ifupRuns: [],
      hooks: [],
      skipped: [],
      settled: false,
      ms: performance.now() - started,
      ok: false,
    };

  const boot = await labExec(plan.name, host.id, ['sh', '-c', renderNetworkBootScript(plan, host)], {
    timeoutMs: 90_000,
  });
  const settled = await waitForHooksQuiet(plan.name, host.id);
  const listing = host.manager === 'ifupdown' ? undefined : await listHooks(plan, host, host.manager);
  return {
    ...base,
    stopped,
    reset,
    boot,
    ifupRuns: host.manager === 'ifupdown' ? ifupHookRuns(boot.stdout + boot.stderr) : [],
    hooks: listing?.hooks ?? [],
    skipped: listing?.skipped ?? [],
    settled,
    ms: performance.now() - started,
    ok: boot.code === 0 && settled,
  };
}

async function listHooks(plan: LabPlan, host: LabHost, manager: Exclude<Manager, 'ifupdown'>) {
  const listing = await labExec(plan.name, host.id, ['sh', '-c', renderListHooksScript(hookDir(manager))]);
  const entries = parseHookListing(listing.stdout);
  const skipped = entries.flatMap((e) => {
    const reason = skipReason(manager, e);
    return reason === undefined || e.type === 'd' ? [] : [{ name: e.name, reason }];
  });
  return { hooks: runnableHooks(manager, entries), skipped };
}
