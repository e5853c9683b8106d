/**
 * offboard's run (src/commands/offboard.ts): choose, plan the inventory edit before any host is
 * contacted (a layout it cannot edit is refused, exit 2), roll back, then remove what rolled back.
 */
import type { Command } from 'commander';
import { readFile } from 'node:fs/promises';
import { UsageError } from '../errors.js';
import { planInventoryRemoval, type InventoryRemoval } from '../inventory/remove.js';
import { foldHosts, parseHostSelection } from '../inventory/select.js';
import { loadInventory } from '../inventory/load.js';
import type { Fleet, Host } from '../inventory/model.js';
import { rollbackHost } from '../runner/host-workflows.js';
import { announceRun, runHosts } from '../runner/fanout.js';
import { inventoryFile, writeFileAtomic } from '../runner/files.js';
import { withoutKnownHosts } from '../runner/known-hosts.js';
import { knownHostsOf } from '../runner/ssh-transport.js';
import { HOST_OVERRIDES } from '../steps/registry.js';
import { runDocument } from '../ui/json.js';
import { FAILING_STATUSES, type HostResult, type RunDisplay, type RunEnd, type RunVerdict } from '../vocabulary.js';
import { parseGlobals, readPlaybook, writeJson, type GlobalOptions, type Io } from './context.js';
import { chooseDisplay, fanoutOptions, prepareRun, startRunLog, withRunLog } from './fleet-run.js';

export interface OffboardRequest {
  readonly hosts?: string | undefined;
  readonly pair?: string | undefined;
  readonly rollback: boolean;
  readonly dryRun: boolean;
  readonly askSudoPass: boolean;
}

/** The hosts `--hosts` or `--pair` names (exactly one of them). */
function chosenHosts(request: OffboardRequest, fleet: Fleet, file: string): number[] {
  if ((request.hosts === undefined) === (request.pair === undefined))
    throw new UsageError('offboard takes --hosts S or --pair OWNER (one of them), e.g. offboard --pair alice');
  if (request.hosts !== undefined) return parseHostSelection(request.hosts, fleet);
  const pair = fleet.pairs.find((p) => p.owner === request.pair);
  if (!pair)
    throw new UsageError(
      `${file} has no pair of ${request.pair} (owners: ${fleet.pairs.map((p) => p.owner).join(', ') || 'none'})`,
    );
  return [pair.cpu, pair.mem];
}

function removalOrRefuse(plan: InventoryRemoval): Extract<InventoryRemoval, { ok: true }> {
  if (!plan.ok) throw new UsageError(`offboard cannot edit the inventory: ${plan.problems.join('; ')}`);
  return plan;
}

/** Rolls `hosts` back, shown as rollback shows it; with --json the run's document is kept for offboard's own. */
async function rollBack(io: Io, cmd: Command, request: OffboardRequest, hosts: readonly number[]): Promise<RunEnd> {
  const playbook = await readPlaybook(undefined, io);
  const run = await prepareRun(io, cmd, { selection: foldHosts(hosts), askSudoPass: request.askSudoPass });
  const header = { command: 'rollback', inventory: run.globals.inventory } as const;
  const log = startRunLog(io, run.globals, 'offboard', run.secrets);
  const shown: RunDisplay = run.globals.json
    ? { events: {}, finish: async () => undefined }
    : await chooseDisplay(io, run.globals, header, log);
  const display = withRunLog(io, run.globals, shown, log);
  return announceRun(
    run.hosts,
    { header, concurrency: run.globals.concurrency, interrupt: run.interrupt },
    display,
    async (events) => ({
      results: await runHosts(
        run.hosts,
        fanoutOptions(run, events),
        rollbackHost({ fleet: run.fleet, playbook, transport: run.transport }),
      ),
    }),
  );
}

/** Takes `hosts`' keys out of the known_hosts file the runs use; a file that is not there has none. */
async function forgetKeys(
  io: Io,
  globals: GlobalOptions,
  fleet: Fleet,
  hosts: readonly Host[],
  dryRun: boolean,
): Promise<{ file: string; removed: number }> {
  const { file, names } = knownHostsOf({ fleet, knownHostsFile: globals.knownHosts, env: io.env }, hosts);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { file, removed: 0 };
    throw error;
  }
  const next = withoutKnownHosts(text, [...names.values()]);
  if (next.removed > 0 && !dryRun) await writeFileAtomic(file, next.text);
  return { file, removed: next.removed };
}

export async function runOffboard(io: Io, cmd: Command, request: OffboardRequest): Promise<RunVerdict> {
  const globals = parseGlobals(cmd.optsWithGlobals(), io);
  const inventory = inventoryFile(globals.inventory, io.cwd);
  const fleet = loadInventory(await inventory.read(), inventory.path, inventory.baseDir, HOST_OVERRIDES);
  const chosen = chosenHosts(request, fleet, inventory.path);
  // Planned now, before any host is touched: an inventory offboard cannot edit stops it here.
  const planned = removalOrRefuse(
    planInventoryRemoval(
      await inventory.read(),
      inventory.path,
      inventory.baseDir,
      { hosts: chosen, owners: [] },
      HOST_OVERRIDES,
    ),
  );
  const say = (line: string) => void (globals.json ? undefined : io.stdout.write(`${line}\n`));
  if (request.dryRun) {
    await reportDryRun(io, globals, fleet, request, chosen, planned, inventory.path, say);
    return 'ok';
  }
  const end = request.rollback ? await rollBack(io, cmd, request, chosen) : undefined;
  if (end?.interrupted) return 'interrupted';
  const kept = (end?.results ?? []).filter((r) => FAILING_STATUSES.has(r.status) || r.status === 'not-run');
  const keptIds = new Set(kept.map((r) => r.host.id));
  const leaving = chosen.filter((id) => !keptIds.has(id));
  // Read again: the rollback took time, and the file is written from what it is now.
  const removal = leaving.length
    ? removalOrRefuse(
        planInventoryRemoval(
          await inventory.read(),
          inventory.path,
          inventory.baseDir,
          { hosts: leaving, owners: [] },
          HOST_OVERRIDES,
        ),
      )
    : undefined;
  if (removal) await inventory.write(removal.text);
  const keys = await forgetKeys(
    io,
    globals,
    fleet,
    fleet.hosts.filter((h) => removal?.removedHosts.includes(h.id)),
    false,
  );
  reportOffboard(io, globals, { file: inventory.path, end, kept, removal, keys }, say);
  return kept.length === 0 ? 'ok' : 'failed';
}

/** --dry-run: what would be rolled back and removed, the inventory's lines and the known_hosts entries. */
async function reportDryRun(
  io: Io,
  globals: GlobalOptions,
  fleet: Fleet,
  request: OffboardRequest,
  chosen: readonly number[],
  planned: Extract<InventoryRemoval, { ok: true }>,
  file: string,
  say: (line: string) => void,
): Promise<void> {
  const keys = await forgetKeys(
    io,
    globals,
    fleet,
    fleet.hosts.filter((h) => chosen.includes(h.id)),
    true,
  );
  say(`would ${request.rollback ? `roll back ${foldHosts(chosen)}, then ` : ''}remove from ${file}:`);
  for (const line of planned.removedLines) say(`  - ${line}`);
  say(`and ${keys.removed} known_hosts entr${keys.removed === 1 ? 'y' : 'ies'} from ${keys.file}`);
  if (globals.json)
    writeJson(io, {
      command: 'offboard',
      ok: true,
      dryRun: true,
      inventory: file,
      rollback: request.rollback ? chosen : [],
      removed: removedDoc(planned),
      knownHosts: keys,
    });
}

/** What an offboard did, for reportOffboard. */
interface OffboardDone {
  readonly file: string;
  /** The rollback's run; none with --no-rollback. */
  readonly end: RunEnd | undefined;
  /** Hosts whose rollback failed or did not run: they stay in the inventory. */
  readonly kept: readonly HostResult[];
  readonly removal: Extract<InventoryRemoval, { ok: true }> | undefined;
  readonly keys: { readonly file: string; readonly removed: number };
}

function reportOffboard(io: Io, globals: GlobalOptions, done: OffboardDone, say: (line: string) => void): void {
  const { file, end, kept, removal, keys } = done;
  const keptText = kept.map((r) => ({
    id: r.host.id,
    reason: `its rollback ${r.status === 'not-run' ? 'did not run' : `failed: ${r.error?.message ?? r.status}`}`,
  }));
  if (globals.json) {
    writeJson(io, {
      command: 'offboard',
      ok: kept.length === 0,
      inventory: file,
      rollback: end ? runDocument({ command: 'rollback', inventory: file }, end) : null,
      removed: removal ? removedDoc(removal) : { hosts: [], pairs: [], lines: [] },
      kept: keptText,
      knownHosts: keys,
    });
  } else {
    if (removal)
      say(
        `removed from ${file}: host${removal.removedHosts.length === 1 ? '' : 's'} ${foldHosts(removal.removedHosts)}${removal.removedPairs.map((p) => `; ${p.owner}'s pair (cpu ${p.cpu}, mem ${p.mem})`).join('')}`,
      );
    say(`${keys.file}: ${keys.removed} known_hosts entr${keys.removed === 1 ? 'y' : 'ies'} removed`);
    for (const k of keptText)
      say(
        `kept ${k.id} in the inventory: ${k.reason}; fix it and offboard again, or offboard --hosts ${k.id} --no-rollback`,
      );
  }
}

function removedDoc(removal: Extract<InventoryRemoval, { ok: true }>) {
  return {
    hosts: removal.removedHosts,
    pairs: removal.removedPairs.map((p) => ({ owner: p.owner, cpu: p.cpu, mem: p.mem })),
    lines: removal.removedLines,
  };
}
