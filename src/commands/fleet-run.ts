/**
 * What deploy, status, rollback and verify share: pick the hosts, pick the display (TUI on a
 * terminal, plain lines otherwise, one JSON document with --json), wire Ctrl-C, build the SSH
 * transport, and come to the run's verdict. ssh2 and Ink load only here, on demand.
 */
import type { Command } from 'commander';
import { resolve } from 'node:path';
import { UsageError } from '../errors.js';
import type { Fleet, Host } from '../inventory/model.js';
import { parseHostSelection } from '../inventory/select.js';
import {
  runVerdict,
  type CommandName,
  type HostResult,
  type MatrixCell,
  type MatrixStart,
  type RunDisplay,
  type RunEvents,
  type RunHeader,
  type RunVerdict,
} from '../vocabulary.js';
import { announceRun, runHosts, type FanoutOptions, type HostOutcome, type HostTask } from '../runner/fanout.js';
import type { Transport } from '../runner/transport.js';
import { runDocument } from '../ui/json.js';
import { plainHandler } from '../ui/plain.js';
import { parseGlobals, readFleet, writeJson, type GlobalOptions, type Io } from './context.js';
import { checkOwnFilePath } from '../runner/own-file.js';
import { openRunLog, type RunLog } from '../ui/run-log-file.js';
import { askSecret } from './prompt.js';

export interface FleetRunSetup {
  readonly globals: GlobalOptions;
  readonly fleet: Fleet;
  readonly hosts: readonly Host[];
  readonly interrupt: AbortSignal;
  readonly transport: Transport;
  /** What the run log must never contain (the -K password once asked). */
  readonly secrets: () => readonly string[];
}

/** The hosts a run works on (`selection` as --hosts takes it; undefined: all), and -K. */
export interface RunRequest {
  readonly selection: string | undefined;
  readonly askSudoPass: boolean;
}

export async function prepareRun(io: Io, cmd: Command, request: RunRequest): Promise<FleetRunSetup> {
  const globals = parseGlobals(cmd.optsWithGlobals(), io);
  const fleet = await readFleet(globals, io);
  const ids = new Set(parseHostSelection(request.selection ?? 'all', fleet));
  const hosts = fleet.hosts.filter((h) => ids.has(h.id));
  checkLogOption(globals, io);
  const interrupt = io.interruptSignal();
  const secrets: string[] = [];
  const transport = await buildTransport(io, globals, fleet, request.askSudoPass, interrupt, secrets);
  return { globals, fleet, hosts, interrupt, transport, secrets: () => secrets };
}

/**
 * The ssh2 transport for `fleet` with the global options; with -K the sudo password is asked once,
 * up front, and also put in `secrets` (the run log takes it out of anything it writes).
 */
export async function buildTransport(
  io: Io,
  globals: GlobalOptions,
  fleet: Fleet,
  askSudoPass: boolean,
  interrupt?: AbortSignal,
  secrets: string[] = [],
): Promise<Transport> {
  let password: Promise<string> | undefined;
  const ask = async () => {
    const value = await askSecret(io, 'sudo password for the selected hosts: ', interrupt);
    secrets.push(value);
    return value;
  };
  const sudoPassword = askSudoPass ? () => (password ??= ask()) : undefined;
  if (sudoPassword) await sudoPassword();
  const { sshTransport } = await import('../runner/ssh-transport.js');
  return sshTransport({
    fleet,
    knownHostsFile: globals.knownHosts,
    acceptNew: globals.acceptNew,
    env: io.env,
    sudoPassword,
    secrets: () => secrets,
    connectTimeoutMs: Math.min(globals.timeout * 1000, 30_000),
  });
}

export async function chooseDisplay(
  io: Io,
  globals: GlobalOptions,
  header: RunHeader,
  log?: RunLog,
): Promise<RunDisplay> {
  const { command } = header;
  if (globals.json) {
    return {
      events: {},
      finish: async (end) => writeJson(io, { ...runDocument(header, end), log: log?.path ?? null }),
    };
  }
  if (io.stdout.isTTY && io.env.IBFLEET_PLAIN !== '1') return loadTui(io, command);
  const plain = plainHandler(io.stdout, {
    command,
    stages: command === 'deploy' || command === 'rollback' || command === 'onboard',
  });
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
  header: RunHeader,
  body: (events: RunEvents) => Promise<{
    readonly results: readonly HostResult[];
    readonly cells?: readonly MatrixCell[];
    readonly matrix?: MatrixStart;
    readonly warnings?: readonly string[];
    readonly problems?: readonly string[];
  }>,
): Promise<RunVerdict> {
  const log = startRunLog(io, run.globals, header.command, run.secrets);
  const display = withRunLog(io, run.globals, await chooseDisplay(io, run.globals, header, log), log);
  return runVerdict(
    await announceRun(
      run.hosts,
      { header, concurrency: run.globals.concurrency, interrupt: run.interrupt },
      display,
      body,
    ),
  );
}

/**
 * The run's log (src/ui/run-log-file.ts), or none with --no-log. A log that cannot be opened
 * is said once on stderr and the run goes on: the record matters less than the work.
 */
export function startRunLog(
  io: Io,
  globals: GlobalOptions,
  command: string,
  secrets: () => readonly string[],
): RunLog | undefined {
  try {
    return openRunLog({ env: io.env, cwd: io.cwd, file: globals.log, command, secrets });
  } catch (error) {
    if (error instanceof UsageError) throw error;
    io.stderr.write(
      `ibfleet: no run log: ${(error as Error).message} (--log FILE to write it elsewhere, --no-log for none)\n`,
    );
    return undefined;
  }
}

/**
 * `--log FILE` names a file to write, maybe as root and maybe in /tmp: one that is a link or
 * another user's file is refused before the -K prompt and before any host is contacted (exit 2).
 * The open checks again (runner/own-file.ts); this is so that the refusal comes first.
 */
export function checkLogOption(globals: GlobalOptions, io: Io): void {
  if (typeof globals.log === 'string') checkOwnFilePath(resolve(io.cwd, globals.log), `--log ${globals.log}`);
}

/** `display`, with every event also written to `log`, which is closed and named once the display is done. */
export function withRunLog(
  io: Io,
  globals: GlobalOptions,
  display: RunDisplay,
  log: RunLog | undefined,
  options: { readonly close?: boolean } = {},
): RunDisplay {
  if (!log) return display;
  return {
    events: teeEvents(display.events, log.events),
    finish: async (end) => {
      await display.finish(end);
      if (options.close === false) return;
      log.close();
      if (!globals.json) io.stdout.write(`run log: ${log.path}\n`);
    },
  };
}

/** Both handlers get every event, `first` first. */
export function teeEvents(first: RunEvents, second: RunEvents): RunEvents {
  const names = [...new Set([...Object.keys(first), ...Object.keys(second)])] as (keyof RunEvents)[];
  return Object.fromEntries(
    names.map((name) => [
      name,
      (...args: unknown[]) => {
        (first[name] as ((...a: unknown[]) => void) | undefined)?.(...args);
        (second[name] as ((...a: unknown[]) => void) | undefined)?.(...args);
      },
    ]),
  ) as RunEvents;
}

/**
 * deploy, status, rollback: `work` on every selected host, in parallel; `across` adds what only the
 * hosts together show (status: odd IPoIB modes, degraded links).
 */
export function runPerHost(
  io: Io,
  run: FleetRunSetup,
  header: RunHeader,
  work: (task: HostTask) => Promise<HostOutcome>,
  across?: (results: readonly HostResult[]) => { warnings: string[]; problems: string[] },
): Promise<RunVerdict> {
  return runDisplayed(io, run, header, async (events) => {
    const results = await runHosts(run.hosts, fanoutOptions(run, events), work);
    return { results, ...(across?.(results) ?? {}) };
  });
}

/** The fan-out's options from the command line's, reporting to `events`. */
export function fanoutOptions(run: FleetRunSetup, events: RunEvents): FanoutOptions {
  return {
    concurrency: run.globals.concurrency,
    timeoutMs: run.globals.timeout * 1000,
    interrupt: run.interrupt,
    events,
  };
}
