/**
 * onboard's discovery (src/runner/onboard.ts, step 1): connect to both machines and run the
 * read-only probe on each, under the host lock, keeping the probe's shell open — the deploy then
 * decides from this probe and runs its change in that same shell, so discovery and deploy cost one
 * connection and one channel per machine. Nothing on the hosts changes here.
 */
import { HostError } from '../errors.js';
import type { Fleet, Host } from '../inventory/model.js';
import { lockedMessage, readProbe } from '../plan/change-output.js';
import { probeWants } from '../plan/host-plan.js';
import type { Playbook } from '../playbook/playbook.js';
import { LOCKED_EXIT } from '../render/host-lock.js';
import { PROBE_END, renderProbeScript } from '../render/probe-script.js';
import type { HostResult } from '../vocabulary.js';
import { newRunId } from './after-change.js';
import { runHosts, type FanoutOptions } from './fanout.js';
import { lockProgress, lockWithin, type Probed } from './host-workflows.js';
import {
  requireWhole,
  scriptFailed,
  type Continuation,
  type ExecResult,
  type Session,
  type Transport,
} from './transport.js';

/** What discovery found on a machine, and the shell its probe ran in (holding the host lock for runId), still waiting for what comes next. */
export type Discovered = Probed;

/**
 * Connects to both machines and runs the read-only probe on each, keeping the probe's shell open:
 * once both machines are seen and the inventory planned, the deploy decides from this probe and
 * runs its change in that shell — one probe and one channel for discovery and deploy.
 */
export async function discover(
  hosts: readonly Host[],
  fleet: Fleet,
  transport: Transport,
  playbook: Playbook,
  fanout: FanoutOptions,
): Promise<{ discovery: HostResult[]; found: Map<number, Discovered> }> {
  const found = new Map<number, Discovered>();
  const discovery = await runHosts(hosts, fanout, async (task) => {
    task.stage('connect');
    const session = await transport.connect(task.host, task.signal);
    task.stage('probe');
    // The shell that discovers is the one the change runs in: it takes the host lock first, so
    // onboard queues behind another run on the machine and decides from what that run left.
    const runId = newRunId();
    const script = renderProbeScript(task.host, fleet, {
      everyInterface: true,
      wants: probeWants(playbook, task.host),
      lock: lockWithin(task, 'deploy', runId),
    });
    found.set(task.host.id, { ...(await probeKeepingShell(session, script, task.signal, lockProgress(task))), runId });
    return { status: 'ok', reasons: [...session.notes], connections: 1, channels: session.channels };
  });
  return { discovery, found };
}

async function probeKeepingShell(
  session: Session,
  script: string,
  signal: AbortSignal,
  onLine: (line: string) => void,
): Promise<Omit<Discovered, 'runId'>> {
  let decide!: (change: Continuation | undefined) => void;
  const decision = new Promise<Continuation | undefined>((resolve) => (decide = resolve));
  let heard!: (output: string) => void;
  const probed = new Promise<string>((resolve) => (heard = resolve));
  let ended = false;
  const conversation = session.converse(
    script,
    PROBE_END,
    (output) => {
      heard(output);
      return decision;
    },
    { signal, onLine },
  );
  const settle = () => void (ended = true);
  conversation.then(settle, settle);
  const output = await Promise.race([
    probed,
    conversation.then((c) => {
      if (c.cut && !c.cut.afterTurn) requireWhole('probe', 'the discovery probe', c, 'nothing was changed');
      if (c.first === undefined && c.code === LOCKED_EXIT)
        throw new HostError('wait', lockedMessage(c.stderr), { exitCode: LOCKED_EXIT });
      if (c.first === undefined) throw scriptFailed('probe', 'discovery probe', c);
      return c.first;
    }),
  ]);
  const shell = (change: Continuation | undefined): Promise<ExecResult | undefined> => {
    // Gone meanwhile (interrupted, connection lost): the caller runs the change in a channel of its own.
    if (ended) return Promise.resolve(undefined);
    decide(change);
    return conversation;
  };
  return { facts: readProbe(output), shell };
}
