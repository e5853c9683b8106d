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
 * handlers of its events, and the report says what happened and what to do next. Discovery's
 * connect-and-probe is onboard-discover.ts; writing the inventory, onboard-inventory.ts.
 */
import { UsageError } from '../errors.js';
import type { HostFacts } from '../facts/host-facts.js';
import { clipHostText } from '../host-text.js';
import { planInventoryAddition } from '../inventory/edit.js';
import type { InventoryAddition } from '../inventory/entry.js';
import { loadInventory } from '../inventory/load.js';
import { hostById, type Fleet, type Host } from '../inventory/model.js';
import { ENV_LIBRARIES, fabricStates, foldEnv, hostEnv, isRefusal, type HostEnv } from '../plan/job-env.js';
import { missingPrerequisite, providesNics } from '../plan/host-plan.js';
import { discoverHost, factsUnderFoundNames, ONBOARD_ROLES, type HostDiscovery } from '../plan/onboard.js';
import {
  discoveredAddition,
  nameWaitsForDiscovery,
  provisionalAddition,
  roleId,
  roleManagerFlag,
  type OnboardRequest,
} from '../plan/onboard-request.js';
import {
  refusedBeforeContact,
  ReportBuilder,
  type InventoryChange,
  type OnboardOutcome,
  type OnboardReport,
} from '../plan/onboard-summary.js';
import type { Playbook } from '../playbook/playbook.js';
import { buildCheatSheet, type CheatSheet } from '../plan/cheat-sheet.js';
import { HOST_OVERRIDES } from '../steps/registry.js';
import {
  hostRef,
  type HostRef,
  type HostResult,
  type MatrixCell,
  type RunDisplay,
  type RunEnd,
  type RunEvents,
} from '../vocabulary.js';
import { announceRun, runHosts } from './fanout.js';
import type { InventoryFile } from './files.js';
import { deployHost, type Probed } from './host-workflows.js';
import { discover, type Discovered } from './onboard-discover.js';
import { writeAddition, type Planned } from './onboard-inventory.js';
import { sharedSessions } from './shared-sessions.js';
import type { Transport } from './transport.js';
import { runVerify } from './verify.js';

export interface OnboardEvents {
  /** The request passed every check that needs no host: these are the machines to contact. */
  onStart?(hosts: readonly HostRef[], unnamed: ReadonlySet<number>): void;
  /** Discovery's host events (connect, probe). */
  readonly discovery?: RunEvents;
  /** `host` under the name onboard will write for it (the machine's own, when nothing else names it). */
  onDiscovered?(discovery: HostDiscovery, host: HostRef): void;
  /** Deploy and verify are each a run of their own with a fresh display (one TUI shows one run). */
  phase?(name: 'deploy' | 'verify'): Promise<RunDisplay>;
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

/** What the phases of one onboard run share. */
interface OnboardRun {
  readonly options: OnboardOptions;
  readonly events: OnboardEvents;
  /** The inventory's text when the run started: the additions are planned on it. */
  readonly original: string;
  /** The inventory with the two machines as the request names them, before anything is seen. */
  readonly provisional: Planned;
  readonly transport: Transport;
  readonly report: ReportBuilder;
}

/** Both machines of the pair, cpu first, as `fleet` describes them. */
function pairHosts(request: OnboardRequest, fleet: Fleet): Host[] {
  return ONBOARD_ROLES.map((role) => hostById(fleet, roleId(request, role))!);
}

/** Interrupted (Ctrl-C) whatever else went wrong, or `otherwise`. */
function stopped(options: OnboardOptions, otherwise: OnboardOutcome): OnboardOutcome {
  return options.interrupt.aborted ? 'interrupted' : otherwise;
}

export async function runOnboard(options: OnboardOptions): Promise<OnboardReport> {
  const now = options.now ?? Date.now;
  const started = now();
  const { request, inventory } = options;
  const events = options.events ?? {};
  const file = inventory.path;

  const original = await inventory.read();
  const before = loadInventory(original, file, inventory.baseDir, HOST_OVERRIDES);
  const provisional = planInventoryAddition(
    original,
    file,
    inventory.baseDir,
    provisionalAddition(request, before, file),
    HOST_OVERRIDES,
  );
  if (!provisional.ok) throw new UsageError(refusedBeforeContact(provisional.conflicts, file));
  const report = new ReportBuilder(request, file, pairHosts(request, provisional.fleet), () => now() - started);

  const transport = sharedSessions(await options.transport(provisional.fleet));
  const unnamed = new Set(
    ONBOARD_ROLES.filter((role) => nameWaitsForDiscovery(request, role, before)).map((role) => roleId(request, role)),
  );
  events.onStart?.(report.hosts.map(hostRef), unnamed);
  let held = new Map<number, Discovered>();
  try {
    // 1. Discover: connect and run the read-only probe; nothing on the hosts changes.
    const { discovery, found } = await discover(
      report.hosts,
      provisional.fleet,
      transport,
      options.playbook,
      fanout(options, options.events?.discovery ?? {}),
    );
    held = found;
    report.note({ discovery });
    const notFound = discovery.filter((r) => r.status !== 'ok');
    if (notFound.length > 0)
      return report.finish({
        outcome: stopped(options, 'discovery-failed'),
        problems: notFound.map((r) => `${r.host.id} (${r.host.target}): ${clipHostText(r.error?.message ?? r.status)}`),
      });
    return await deployAndVerify({ options, events, original, provisional, transport, report }, found);
  } finally {
    // A probe's shell nobody continued (a refusal, a failure elsewhere) is told there is nothing more.
    for (const { shell } of held.values()) void shell(undefined).catch(() => undefined);
    transport.closeAll();
  }
}

/** Steps 2 to 5, once both machines were seen: decide, deploy, write the inventory, verify. */
async function deployAndVerify(run: OnboardRun, found: ReadonlyMap<number, Discovered>): Promise<OnboardReport> {
  const { options, report } = run;
  // 2. Decide, from what the machines showed.
  const decided = decide(run, found);
  if (!decided.ok) return report.finish({ outcome: 'refused', problems: decided.problems });
  const { discovered, addition, planned } = decided;
  const hosts = pairHosts(options.request, planned.fleet);
  report.note({ hosts });
  if (options.interrupt.aborted)
    return report.finish({ outcome: 'interrupted', problems: ['interrupted before deploying'] });

  // 3. Deploy the playbook to both, over the same connections, deciding from discovery's probe.
  const deploy = await deployPair(run, found, planned.fleet, hosts);
  report.note({ deploy: deploy.results });
  const failed = deploy.results.filter((r) => r.status !== 'changed' && r.status !== 'unchanged');
  if (failed.length > 0)
    return report.finish({
      outcome: stopped(options, 'deploy-failed'),
      problems: failed.map(
        (r) => `${r.host.id}: ${r.error ? `${r.error.stage}: ${clipHostText(r.error.message)}` : r.status}`,
      ),
    });

  // 4. Both are deployed: they belong in the inventory now, whatever verify finds.
  const change = await writeAddition(options.inventory, run.original, planned, addition);
  run.events.onInventory?.(change.inventory);
  report.note({ inventory: change.inventory });
  if (change.problem) return report.finish({ outcome: 'inventory-failed', problems: [change.problem] });

  const sheet = pairSheet(options, hosts, discovered, deploy);
  if (options.interrupt.aborted)
    return report.finish({
      outcome: 'interrupted',
      problems: ['interrupted after deploy, before verify'],
      cheatSheet: sheet(),
    });
  return verifyPair(run, hosts, planned.fleet, sheet);
}

/** The pair's cheat sheet, with the OS and manager each machine showed (its deploy's where it ran), and the cells verify saw. */
function pairSheet(
  options: OnboardOptions,
  hosts: readonly Host[],
  discovered: readonly HostDiscovery[],
  deploy: RunEnd,
): (cells?: readonly MatrixCell[]) => CheatSheet {
  const details = new Map(
    discovered.map((d) => [
      d.id,
      { os: d.os, manager: deploy.results.find((r) => r.host.id === d.id)?.manager ?? d.manager },
    ]),
  );
  return (cells?: readonly MatrixCell[]) =>
    buildCheatSheet({
      owner: options.request.owner,
      cpu: hosts[0]!,
      mem: hosts[1]!,
      details,
      ...(cells ? { cells } : {}),
      ...(options.rpingPort ? { port: options.rpingPort } : {}),
    });
}

/**
 * Step 5, verify the pair: ping everywhere; rping cells for every NIC pair, skipped with the
 * reason where a machine has no RDMA device (never counted as passed).
 */
async function verifyPair(
  run: OnboardRun,
  hosts: readonly Host[],
  fleet: Fleet,
  sheet: (cells?: readonly MatrixCell[]) => CheatSheet,
): Promise<OnboardReport> {
  const { options, report } = run;
  // What verify read of each machine's ports: the pair's job settings come from it.
  let factsRead: ReadonlyMap<number, HostFacts> = new Map();
  const verify = await inPhase(run.events, 'verify', hosts, options, async (phaseEvents) => {
    const found = await runVerify({
      ...fanout(options, phaseEvents),
      fleet,
      hosts,
      mode: 'full',
      rping: 'on',
      transport: run.transport,
      ...(options.rpingPort ? { basePort: options.rpingPort } : {}),
    });
    factsRead = found.facts;
    return found;
  });
  const failedCells = verify.cells.filter((c) => c.ok === false);
  const env = pairEnv(hosts, fleet, factsRead);
  return report.finish({
    outcome: stopped(
      options,
      failedCells.length > 0 || verify.results.some((r) => r.status !== 'ok') ? 'verify-failed' : 'ok',
    ),
    verify,
    cheatSheet: { ...sheet(verify.cells), ...(env ? { env } : {}) },
    problems: failedCells.map(
      (c) => `${c.method} ${c.from.name}/${c.from.iface} → ${c.to.name}/${c.to.iface}: ${c.detail}`,
    ),
  });
}

/** The pair's job settings (ibfleet env) from the ports verify read; undefined where it read none. */
function pairEnv(hosts: readonly Host[], fleet: Fleet, factsOf: ReadonlyMap<number, HostFacts>) {
  const read = hosts.flatMap((host) => {
    const facts = factsOf.get(host.id);
    return facts ? [{ host, facts }] : [];
  });
  // A fleet of plain Ethernet NICs (fabric.rdma: false) runs no RDMA jobs to set up.
  if (read.length === 0 || !fleet.fabric.rdma) return undefined;
  const each = fabricStates(read, fleet).map((s) => hostEnv(s, fleet, ENV_LIBRARIES));
  return { fleet: foldEnv(each.filter((e): e is HostEnv => !isRefusal(e))), refused: each.filter(isRefusal) };
}

/** What the machines showed, judged (pure, plan/onboard.ts), and the inventory addition it makes; or why not. */
function decide(
  run: OnboardRun,
  found: ReadonlyMap<number, Discovered>,
):
  | { ok: true; discovered: HostDiscovery[]; addition: InventoryAddition; planned: Planned }
  | { ok: false; problems: readonly string[] } {
  const { options, provisional, report } = run;
  const { request, inventory, playbook } = options;
  const hosts = pairHosts(request, provisional.fleet);
  const discovered = hosts.map((host, i) => {
    const role = ONBOARD_ROLES[i]!;
    return discoverHost({
      fabric: provisional.fleet.fabric,
      host,
      role,
      facts: found.get(host.id)!.facts,
      managerFlag: roleManagerFlag(request, role),
      prerequisite: (manager, facts) => missingPrerequisite(playbook, manager, facts),
      providesAddresses: providesNics(playbook),
    });
  });
  const addition = discoveredAddition(
    request,
    discovered,
    loadInventory(run.original, inventory.path, inventory.baseDir, HOST_OVERRIDES),
  );
  // Shown under the names written: what the student reads here is what the inventory will say.
  discovered.forEach((d, i) => run.events.onDiscovered?.(d, { ...hostRef(hosts[i]!), name: addition.hosts[i]!.name }));
  report.note({ discovered });
  const refusals = discovered.flatMap((d) => d.problems.map((p) => `${d.role} ${d.id}: ${p}`));
  if (refusals.length > 0) return { ok: false, problems: refusals };
  const planned = planInventoryAddition(run.original, inventory.path, inventory.baseDir, addition, HOST_OVERRIDES);
  if (!planned.ok) return { ok: false, problems: planned.conflicts };
  return { ok: true, discovered, addition, planned };
}

/** The deploy phase, its change run in the shell each machine's discovery probe left open. */
function deployPair(
  run: OnboardRun,
  found: ReadonlyMap<number, Discovered>,
  fleet: Fleet,
  hosts: readonly Host[],
): Promise<RunEnd> {
  // The probe saw the machines under the names the request gave; the deploy decides under the inventory's.
  const provisionalHosts = pairHosts(run.options.request, run.provisional.fleet);
  const probed = (host: Host): Probed | undefined => {
    const seen = found.get(host.id);
    const probedAs = provisionalHosts.find((h) => h.id === host.id);
    return seen && probedAs
      ? { facts: factsUnderFoundNames(seen.facts, probedAs, host), shell: seen.shell, runId: seen.runId }
      : undefined;
  };
  const { options } = run;
  return inPhase(run.events, 'deploy', hosts, options, (phaseEvents) =>
    runHosts(
      hosts,
      fanout(options, phaseEvents),
      deployHost({ fleet, playbook: options.playbook, transport: run.transport, probed }, { dryRun: false }),
    ).then((results) => ({ results })),
  );
}

function fanout(options: OnboardOptions, events: RunEvents) {
  return {
    concurrency: options.concurrency,
    timeoutMs: options.timeoutMs,
    interrupt: options.interrupt,
    events,
    ...(options.now ? { now: options.now } : {}),
  };
}

/** Deploy and verify are each a run of their own, shown by a fresh display when there is one. */
async function inPhase(
  events: OnboardEvents,
  name: 'deploy' | 'verify',
  hosts: readonly Host[],
  options: OnboardOptions,
  work: (
    events: RunEvents,
  ) => Promise<{ readonly results: readonly HostResult[]; readonly cells?: readonly MatrixCell[] }>,
): Promise<RunEnd> {
  const display = (await events.phase?.(name)) ?? { events: {}, finish: async () => undefined };
  const header = {
    command: name,
    inventory: options.inventory.path,
    ...(name === 'deploy' ? { playbook: options.playbook.name } : {}),
  };
  return announceRun(
    hosts,
    {
      header,
      concurrency: options.concurrency,
      interrupt: options.interrupt,
      ...(options.now ? { now: options.now } : {}),
    },
    display,
    work,
  );
}
