/**
 * onboard: "a new student got two machines" in one run. Connect to both (one SSH connection per
 * host for the whole run), discover with the read-only probe, decide (pure, src/plan/onboard.ts),
 * deploy the playbook to both, write them and the pair to the inventory, verify the pair's
 * matrix, and hand back the cheat sheet.
 *
 * The inventory rule: the file is written only after BOTH deploys succeeded, and then before
 * verify — hosts that carry ibfleet's routing belong in the inventory (status and rollback need
 * them there), whether or not the fabric then passes. Every refusal, an unreachable host or a
 * failed deploy leaves the file byte for byte as it was. The runner never prints: displays are
 * handlers of its events, and the report says what happened and what to do next.
 */
import { UsageError } from '../errors.js';
import { planInventoryAddition, type HostEntry, type InventoryAddition } from '../inventory/edit.js';
import { loadInventory } from '../inventory/load.js';
import { hostById, type Fleet, type Host, type Manager } from '../inventory/model.js';
import { parseProbe, type HostFacts } from '../plan/facts.js';
import { discoverHost, onboardEntry, onboardName, type HostDiscovery, type OnboardRole } from '../plan/onboard.js';
import type { Playbook } from '../playbook/playbook.js';
import { buildCheatSheet, type CheatSheet } from '../render/cheat-sheet.js';
import { renderProbeScript } from '../render/probe-script.js';
import { hostRef, type HostRef, type HostResult, type MatrixCell, type RunEnd, type RunEvents } from '../vocabulary.js';
import { announceRun, runHosts } from './fanout.js';
import type { InventoryFile } from './files.js';
import { deployHost } from './host-workflows.js';
import { scriptFailed, type Session, type Transport } from './transport.js';
import { runVerify } from './verify.js';

export interface OnboardRequest {
  readonly owner: string;
  readonly cpu: number;
  readonly mem: number;
  readonly cpuAddress?: string | undefined;
  readonly memAddress?: string | undefined;
  /** SSH user for both machines; non-root users work through sudo. */
  readonly user?: string | undefined;
  readonly cpuManager?: Manager | undefined;
  readonly memManager?: Manager | undefined;
}

export interface PhaseDisplay {
  readonly events: RunEvents;
  finish(end: RunEnd): Promise<void>;
}

export interface OnboardEvents {
  /** The request passed every check that needs no host: these are the machines to contact. */
  onStart?(hosts: readonly HostRef[]): void;
  /** Discovery's host events (connect, probe). */
  readonly discovery?: RunEvents;
  onDiscovered?(discovery: HostDiscovery, host: HostRef): void;
  /** Deploy and verify are each a run of their own with a fresh display (one TUI shows one run). */
  phase?(name: 'deploy' | 'verify'): Promise<PhaseDisplay>;
  onInventory?(change: InventoryChange): void;
}

export interface OnboardOptions {
  readonly request: OnboardRequest;
  readonly inventory: InventoryFile;
  readonly playbook: Playbook;
  /** Builds the SSH transport for the inventory with the two machines in it. */
  readonly transport: (fleet: Fleet) => Transport | Promise<Transport>;
  readonly concurrency: number;
  readonly timeoutMs: number;
  readonly interrupt: AbortSignal;
  readonly events?: OnboardEvents;
  readonly rpingPort?: number;
  readonly now?: () => number;
}

export type OnboardOutcome = 'ok' | 'refused' | 'discovery-failed' | 'deploy-failed' | 'inventory-failed' | 'verify-failed' | 'interrupted';

export interface InventoryChange {
  readonly file: string;
  /** written: the hosts and/or the pair were added; unchanged: they were there already. */
  readonly change: 'written' | 'unchanged' | 'not-written';
  readonly addedHosts: readonly number[];
  readonly addedPair: boolean;
  readonly addedLines: readonly string[];
}

export interface OnboardReport {
  readonly outcome: OnboardOutcome;
  readonly request: OnboardRequest;
  /** The pair's hosts as the run ended up describing them (discovered interfaces once known). */
  readonly hosts: readonly Host[];
  readonly discovered: readonly HostDiscovery[];
  readonly discovery: readonly HostResult[];
  readonly deploy: readonly HostResult[];
  readonly verify: { readonly results: readonly HostResult[]; readonly cells: readonly MatrixCell[] } | undefined;
  readonly inventory: InventoryChange;
  readonly cheatSheet: CheatSheet | undefined;
  /** Why it stopped: refusal reasons or the failing hosts' one-liners. */
  readonly problems: readonly string[];
  /** One paragraph: what happened and what to do next. */
  readonly summary: string;
  readonly durationMs: number;
}

const ROLES: readonly OnboardRole[] = ['cpu', 'mem'];

function idOf(request: OnboardRequest, role: OnboardRole): number {
  return role === 'cpu' ? request.cpu : request.mem;
}

/**
 * Checks what can be checked without contacting anything; a UsageError (exit 2) otherwise.
 * Returns the provisional entries (interfaces unknown) every later step starts from.
 */
function provisionalEntries(request: OnboardRequest, fleet: Fleet, file: string): HostEntry[] {
  if (request.cpu === request.mem) throw new UsageError(`--cpu and --mem are both host ${request.cpu}; a pair is two different machines`);
  if (request.cpuAddress !== undefined && request.cpuAddress === request.memAddress) {
    throw new UsageError(`--cpu-address and --mem-address are both ${request.cpuAddress}; a pair is two different machines`);
  }
  return ROLES.map((role) => {
    const id = idOf(request, role);
    const address = role === 'cpu' ? request.cpuAddress : request.memAddress;
    const existing = hostById(fleet, id);
    if (!existing && address === undefined) {
      throw new UsageError(`host ${id} is not in ${file}, so onboard needs its SSH address: add --${role}-address ADDRESS (the management address, not a 172.16 fabric one)`);
    }
    return onboardEntry({
      id,
      role,
      owner: request.owner,
      address,
      user: request.user,
      managerFlag: role === 'cpu' ? request.cpuManager : request.memManager,
      discovery: undefined,
    });
  });
}

/**
 * One SSH connection per host for the whole onboard: discovery, deploy and verify each "connect",
 * and get the session opened first. Closing is deferred to closeAll().
 */
export function sharedSessions(base: Transport): Transport & { closeAll(): void } {
  const sessions = new Map<number, Promise<Session>>();
  return {
    connect(host, signal) {
      let opened = sessions.get(host.id);
      const first = opened === undefined;
      if (!opened) {
        opened = base.connect(host, signal);
        sessions.set(host.id, opened);
        opened.catch(() => sessions.delete(host.id));
      }
      return opened.then((session) => ({
        run: (script, options) => session.run(script, options),
        close: () => undefined,
        get channels() {
          return session.channels;
        },
        // Host-key notes ("recorded new key") belong to the run that opened the connection.
        notes: first ? session.notes : [],
      }));
    },
    closeAll() {
      for (const opened of sessions.values()) opened.then((s) => s.close(), () => undefined);
      sessions.clear();
    },
  };
}

export async function runOnboard(options: OnboardOptions): Promise<OnboardReport> {
  const now = options.now ?? Date.now;
  const started = now();
  const { request, inventory, playbook } = options;
  const events = options.events ?? {};
  const file = inventory.path;

  const original = await inventory.read();
  const fleet0 = loadInventory(original, file, inventory.baseDir);
  const pair = { owner: request.owner, cpu: request.cpu, mem: request.mem };
  const provisional = planInventoryAddition(original, file, inventory.baseDir, { hosts: provisionalEntries(request, fleet0, file), pair });
  if (!provisional.ok) {
    throw new UsageError(`onboard refused:\n${bullets(provisional.conflicts)}\nNothing was contacted and ${file} was not changed.`);
  }
  const provisionalHosts = ROLES.map((role) => hostById(provisional.fleet, idOf(request, role))!);

  let report: Omit<OnboardReport, 'durationMs' | 'summary'> = {
    outcome: 'refused',
    request,
    hosts: provisionalHosts,
    discovered: [],
    discovery: [],
    deploy: [],
    verify: undefined,
    inventory: { file, change: 'not-written', addedHosts: [], addedPair: false, addedLines: [] },
    cheatSheet: undefined,
    problems: [],
  };
  const finish = (patch: Partial<typeof report>): OnboardReport => {
    report = { ...report, ...patch };
    return { ...report, summary: summarize(report, file), durationMs: now() - started };
  };

  const transport = sharedSessions(await options.transport(provisional.fleet));
  events.onStart?.(provisionalHosts.map(hostRef));
  try {
    // 1. Discover: connect and run the read-only probe; nothing on the hosts changes.
    const facts = new Map<number, HostFacts>();
    const discovery = await runHosts(
      provisionalHosts,
      { concurrency: options.concurrency, timeoutMs: options.timeoutMs, interrupt: options.interrupt, events: events.discovery ?? {}, now },
      async (task) => {
        task.stage('connect');
        const session = await transport.connect(task.host, task.signal);
        task.stage('probe');
        const result = await session.run(renderProbeScript(task.host, provisional.fleet), { signal: task.signal });
        const found = parseProbe(result.stdout);
        if (!found.complete) throw scriptFailed('probe', 'discovery probe', result);
        facts.set(task.host.id, found);
        return { status: 'ok', reasons: [...session.notes], connections: 1, channels: session.channels };
      },
    );
    report = { ...report, discovery };
    const notFound = discovery.filter((r) => r.status !== 'ok');
    if (notFound.length > 0) {
      return finish({ outcome: options.interrupt.aborted ? 'interrupted' : 'discovery-failed', problems: notFound.map((r) => `${r.host.id} (${r.host.target}): ${r.error?.message ?? r.status}`) });
    }

    // 2. Decide, from what the machines showed.
    const discovered = provisionalHosts.map((host, i) => {
      const role = ROLES[i]!;
      const d = discoverHost({ fabric: provisional.fleet.fabric, host, role, facts: facts.get(host.id)!, managerFlag: role === 'cpu' ? request.cpuManager : request.memManager, persist: playbook.persist });
      events.onDiscovered?.(d, hostRef(host));
      return d;
    });
    report = { ...report, discovered };
    const refusals = discovered.flatMap((d) => d.problems.map((p) => `${d.role} ${d.id}: ${p}`));
    if (refusals.length > 0) return finish({ outcome: 'refused', problems: refusals });

    const addition: InventoryAddition = {
      hosts: discovered.map((d) =>
        onboardEntry({
          id: d.id,
          role: d.role,
          owner: request.owner,
          address: d.role === 'cpu' ? request.cpuAddress : request.memAddress,
          user: request.user,
          managerFlag: d.role === 'cpu' ? request.cpuManager : request.memManager,
          discovery: d,
        }),
      ),
      pair,
    };
    const planned = planInventoryAddition(original, file, inventory.baseDir, addition);
    if (!planned.ok) return finish({ outcome: 'refused', problems: planned.conflicts });
    const hosts = ROLES.map((role) => hostById(planned.fleet, idOf(request, role))!);
    report = { ...report, hosts };
    if (options.interrupt.aborted) return finish({ outcome: 'interrupted', problems: ['interrupted before deploying'] });

    // 3. Deploy the playbook to both, over the same connections.
    const deploy = await inPhase(events, 'deploy', hosts, options, (phaseEvents) =>
      runHosts(hosts, { concurrency: options.concurrency, timeoutMs: options.timeoutMs, interrupt: options.interrupt, events: phaseEvents, now }, deployHost({ fleet: planned.fleet, playbook, transport }, { dryRun: false })).then((results) => ({ results })),
    );
    report = { ...report, deploy: deploy.results };
    const failed = deploy.results.filter((r) => r.status !== 'changed' && r.status !== 'unchanged');
    if (failed.length > 0) {
      return finish({ outcome: options.interrupt.aborted ? 'interrupted' : 'deploy-failed', problems: failed.map((r) => `${r.host.id}: ${r.error ? `${r.error.stage}: ${r.error.message}` : r.status}`) });
    }

    // 4. Both are deployed: they belong in the inventory now, whatever verify finds.
    const change = await writeAddition(inventory, original, planned, addition);
    events.onInventory?.(change.inventory);
    report = { ...report, inventory: change.inventory };
    if (change.problem) return finish({ outcome: 'inventory-failed', problems: [change.problem] });

    const details = new Map(discovered.map((d) => [d.id, { os: d.os, manager: deploy.results.find((r) => r.host.id === d.id)?.manager ?? d.manager }]));
    const sheet = (cells?: readonly MatrixCell[]) =>
      buildCheatSheet({ owner: request.owner, cpu: hosts[0]!, mem: hosts[1]!, details, ...(cells ? { cells } : {}), ...(options.rpingPort ? { port: options.rpingPort } : {}) });
    if (options.interrupt.aborted) return finish({ outcome: 'interrupted', problems: ['interrupted after deploy, before verify'], cheatSheet: sheet() });

    // 5. Verify the pair: ping everywhere; rping cells for every NIC pair, skipped with the
    // reason where a machine has no RDMA device (never counted as passed).
    const verify = await inPhase(events, 'verify', hosts, options, (phaseEvents) =>
      runVerify({
        hosts,
        mode: 'full',
        rping: 'on',
        transport,
        concurrency: options.concurrency,
        timeoutMs: options.timeoutMs,
        interrupt: options.interrupt,
        events: phaseEvents,
        ...(options.rpingPort ? { basePort: options.rpingPort } : {}),
        now,
      }),
    );
    const failedCells = verify.cells.filter((c) => c.ok === false);
    const outcome: OnboardOutcome = options.interrupt.aborted ? 'interrupted' : failedCells.length > 0 || verify.results.some((r) => r.status !== 'ok') ? 'verify-failed' : 'ok';
    return finish({
      outcome,
      verify,
      cheatSheet: sheet(verify.cells),
      problems: failedCells.map((c) => `${c.method} ${c.from.name}/${c.from.iface} → ${c.to.name}/${c.to.iface}: ${c.detail}`),
    });
  } finally {
    transport.closeAll();
  }
}

/** Deploy and verify are each a run of their own, shown by a fresh display when there is one. */
async function inPhase(
  events: OnboardEvents,
  name: 'deploy' | 'verify',
  hosts: readonly Host[],
  options: OnboardOptions,
  work: (events: RunEvents) => Promise<{ readonly results: readonly HostResult[]; readonly cells?: readonly MatrixCell[] }>,
): Promise<RunEnd> {
  const display = (await events.phase?.(name)) ?? { events: {}, finish: async () => undefined };
  const header = { command: name, inventory: options.inventory.path, ...(name === 'deploy' ? { playbook: options.playbook.name } : {}) };
  const end = await announceRun(hosts, { header, concurrency: options.concurrency, interrupt: options.interrupt, events: display.events, ...(options.now ? { now: options.now } : {}) }, () => work(display.events));
  await display.finish(end);
  return end;
}

/**
 * Writes the planned text. The file is read again first: if someone changed it meanwhile, the
 * same addition is planned on what is there now (their change is kept), and a conflict is reported
 * rather than written over.
 */
async function writeAddition(
  inventory: InventoryFile,
  original: string,
  planned: Extract<ReturnType<typeof planInventoryAddition>, { ok: true }>,
  addition: InventoryAddition,
): Promise<{ inventory: InventoryChange; problem?: string }> {
  const unchanged = (added: typeof planned): InventoryChange => ({ file: inventory.path, change: 'unchanged', addedHosts: added.addedHosts, addedPair: added.addedPair, addedLines: [] });
  let edit = planned;
  try {
    const current = await inventory.read();
    if (current !== original) {
      const again = planInventoryAddition(current, inventory.path, inventory.baseDir, addition);
      if (!again.ok) {
        return {
          inventory: { file: inventory.path, change: 'not-written', addedHosts: [], addedPair: false, addedLines: planned.addedLines },
          problem: `${inventory.path} changed while onboarding and now conflicts: ${again.conflicts.join('; ')}`,
        };
      }
      edit = again;
      if (again.text === current) return { inventory: unchanged(again) };
    } else if (planned.text === original) {
      return { inventory: unchanged(planned) };
    }
    await inventory.write(edit.text);
  } catch (error) {
    return {
      inventory: { file: inventory.path, change: 'not-written', addedHosts: [], addedPair: false, addedLines: planned.addedLines },
      problem: `cannot write ${inventory.path}: ${(error as Error).message}`,
    };
  }
  return { inventory: { file: inventory.path, change: 'written', addedHosts: edit.addedHosts, addedPair: edit.addedPair, addedLines: edit.addedLines } };
}

function bullets(lines: readonly string[]): string {
  return lines.map((l) => `  - ${l}`).join('\n');
}

/** What happened, and the next step, in words a student can act on. */
export function summarize(report: Omit<OnboardReport, 'durationMs' | 'summary'>, file: string): string {
  const { request } = report;
  const names = `${onboardName('cpu', request.cpu)} (${request.cpu}) and ${onboardName('mem', request.mem)} (${request.mem})`;
  const problems = report.problems.join('; ');
  const again = 'then run the same onboard command again';
  switch (report.outcome) {
    case 'ok':
      return `${request.owner}'s pair ${names} is deployed and verified; ${file} ${report.inventory.change === 'written' ? 'now lists both hosts and the pair' : 'already listed both hosts and the pair'}.`;
    case 'refused':
      return `onboard refused:\n${bullets(report.problems)}\nNothing was deployed and ${file} was not changed; fix the above, ${again}.`;
    case 'discovery-failed':
      return `discovery failed on ${problems}. Nothing was deployed and ${file} was not changed; check the address and SSH access (a machine whose host key is new needs --accept-new; a sudo user with a password needs -K), ${again}.`;
    case 'deploy-failed': {
      const deployed = report.deploy.filter((r) => r.status === 'changed' || r.status === 'unchanged').map((r) => r.host.id);
      return `deploy failed on ${problems}. ${file} was not changed${deployed.length ? ` (host ${deployed.join(', ')} was deployed; running onboard again finds it done)` : ''}; fix the cause, ${again}.`;
    }
    case 'inventory-failed':
      return `both hosts are deployed, but ${problems}. Add these lines to ${file} by hand:\n${report.inventory.addedLines.map((l) => `  ${l}`).join('\n')}`;
    case 'verify-failed':
      return `verify failed: ${report.problems.length} cell${report.problems.length === 1 ? '' : 's'} did not pass (each with the command that reproduces it above). Both hosts are deployed and ${report.inventory.change === 'written' ? 'now in' : 'in'} ${file}; fix the fabric, then check again with: ibfleet -i ${file} verify --pair ${request.owner}`;
    case 'interrupted':
      if (report.inventory.change !== 'not-written' && report.deploy.length > 0) {
        return `interrupted after deploy: both hosts are deployed and in ${file}; check them with: ibfleet -i ${file} verify --pair ${request.owner}`;
      }
      return `interrupted${report.deploy.length ? ' during deploy' : ' before deploying'}: ${file} was not changed; run the same onboard command again.`;
  }
}
