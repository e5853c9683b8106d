/**
 * What deploy, status, rollback and verify share: pick the hosts, pick the display (TUI on a
 * terminal, plain lines otherwise, one JSON document with --json), wire Ctrl-C, build the SSH
 * transport, and come to the run's verdict. ssh2 and Ink load only here, on demand.
 */
import type { Command } from 'commander';
import { UsageError } from '../errors.js';
import type { Fleet, Host } from '../inventory/model.js';
import { parseHostSelection } from '../inventory/select.js';
import { runVerdict, type CommandName, type HostResult, type MatrixCell, type RunDisplay, type RunEvents, type RunVerdict } from '../vocabulary.js';
import { announceRun, runHosts, type FanoutOptions, type HostOutcome, type HostTask } from '../runner/fanout.js';
import type { Transport } from '../runner/transport.js';
import { runDocument } from '../ui/json.js';
import { plainHandler } from '../ui/plain.js';
import { parseGlobals, readFleet, writeJson, type GlobalOptions, type Io } from './context.js';
import { askSecret } from './prompt.js';
import { hostsRequired } from './run-options.js';

/** What a run's header says besides the command and the inventory. */
export interface RunExtra {
  readonly playbook?: string;
  readonly dryRun?: boolean;
  readonly showScripts?: boolean;
}

export interface FleetRunSetup {
  readonly globals: GlobalOptions;
  readonly fleet: Fleet;
  readonly hosts: readonly Host[];
  readonly interrupt: AbortSignal;
  readonly transport: Transport;
}

export async function prepareRun(io: Io, cmd: Command, selection: string | undefined, required: boolean): Promise<FleetRunSetup> {
  const raw = cmd.optsWithGlobals() as Record<string, unknown>;
  const globals = parseGlobals(raw, io);
  const fleet = await readFleet(globals, io);
  if (selection === undefined && required) {
    throw new UsageError(hostsRequired(cmd.name()));
  }
  const ids = new Set(parseHostSelection(selection ?? 'all', fleet));
  const hosts = fleet.hosts.filter((h) => ids.has(h.id));
  const interrupt = io.interruptSignal();
  const transport = await buildTransport(io, globals, fleet, raw.askSudoPass === true, interrupt);
  return { globals, fleet, hosts, interrupt, transport };
}

/** The ssh2 transport for `fleet` with the global options; with -K the sudo password is asked once, up front. */
export async function buildTransport(io: Io, globals: GlobalOptions, fleet: Fleet, askSudoPass: boolean, interrupt?: AbortSignal): Promise<Transport> {
  let password: Promise<string> | undefined;
  const sudoPassword = askSudoPass ? () => (password ??= askSecret(io, 'sudo password for the selected hosts: ', interrupt)) : undefined;
  if (sudoPassword) await sudoPassword();
  const { sshTransport } = await import('../runner/ssh-transport.js');
  return sshTransport({
    fleet,
    knownHostsFile: globals.knownHosts,
    acceptNew: globals.acceptNew,
    env: io.env,
    sudoPassword,
    connectTimeoutMs: Math.min(globals.timeout * 1000, 30_000),
  });
}

export async function chooseDisplay(io: Io, globals: GlobalOptions, command: CommandName, extra: RunExtra = {}): Promise<RunDisplay> {
  if (globals.json) {
    return {
      events: {},
      finish: async (end) => writeJson(io, runDocument({ command, inventory: globals.inventory, ...extra, ...end })),
    };
  }
  if (io.stdout.isTTY && io.env.IBFLEET_PLAIN !== '1') return loadTui(io, command);
  const plain = plainHandler(io.stdout, { command, stages: command === 'deploy' || command === 'rollback' || command === 'onboard' });
  return { events: plain, finish: async () => undefined };
}

async function loadTui(io: Io, command: CommandName): Promise<RunDisplay> {
  const { createTui } = await import('../ui/tui/index.js');
  const tui = await createTui(io, { command });
  // A second Ctrl-C exits at once: leave the last frame and the cursor as they should be.
  const restore = () => tui.unmount();
  process.once('exit', restore);
  return {
    events: tui,
    finish: async () => {
      await tui.waitUntilExit();
      process.removeListener('exit', restore);
    },
  };
}

/**
 * The life of a command that works on hosts, as its display shows it: the display, the run's start
 * event, `body` (the fan-out), the end event, the last frame or the JSON document, the verdict.
 */
export async function runDisplayed(
  io: Io,
  run: FleetRunSetup,
  command: CommandName,
  extra: RunExtra,
  body: (events: RunEvents) => Promise<{ readonly results: readonly HostResult[]; readonly cells?: readonly MatrixCell[] }>,
): Promise<RunVerdict> {
  const display = await chooseDisplay(io, run.globals, command, extra);
  const header = { command, inventory: run.globals.inventory, ...extra };
  return runVerdict(await announceRun(run.hosts, { header, concurrency: run.globals.concurrency, interrupt: run.interrupt }, display, body));
}

/** deploy, status, rollback: `work` on every selected host, in parallel. */
export function runPerHost(io: Io, run: FleetRunSetup, command: CommandName, extra: RunExtra, work: (task: HostTask) => Promise<HostOutcome>): Promise<RunVerdict> {
  return runDisplayed(io, run, command, extra, async (events) => ({ results: await runHosts(run.hosts, fanoutOptions(run, events), work) }));
}

/** The fan-out's options from the command line's, reporting to `events`. */
export function fanoutOptions(run: FleetRunSetup, events: RunEvents): FanoutOptions {
  return { concurrency: run.globals.concurrency, timeoutMs: run.globals.timeout * 1000, interrupt: run.interrupt, events };
}
