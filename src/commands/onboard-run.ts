/**
 * onboard's run (src/commands/onboard.ts): the options checked, it hands the request to the runner
 * (src/runner/onboard.ts) and is the handler of its events — lines as the pair is discovered, a
 * display of its own for deploy and for verify, the run log from the first contact — then prints
 * the cheat sheet (or the --json document) and the outcome. The verdict is the command's exit.
 */
import type { Command } from 'commander';
import type { OnboardRequest } from '../plan/onboard-request.js';
import type { OnboardReport } from '../plan/onboard-summary.js';
import type { Playbook } from '../playbook/playbook.js';
import { runOnboard, type OnboardEvents } from '../runner/onboard.js';
import { inventoryFile } from '../runner/files.js';
import { onboardDocument } from '../ui/onboard.js';
import type { RunLog } from '../ui/run-log-file.js';
import { formatCheatSheetText } from '../ui/text/cheat-sheet.js';
import { discoveryWaitLine, formatDiscoveryLines, inventoryChangeText, onboardStartLine } from '../ui/text/onboard.js';
import type { RunVerdict } from '../vocabulary.js';
import { parseGlobals, readPlaybook, writeJson, type GlobalOptions, type Io } from './context.js';
import { buildTransport, checkLogOption, chooseDisplay, startRunLog, withRunLog } from './fleet-run.js';

export interface OnboardCommandRequest extends OnboardRequest {
  readonly askSudoPass: boolean;
}

/** What the event handlers learn as the run goes, and the report reads at the end. */
interface Shown {
  // The log starts once the request passed every check that needs no machine: with the first contact.
  log: RunLog | undefined;
  // Hosts whose name is the machine's own, unknown until discovery: shown by number until then.
  unnamed: ReadonlySet<number>;
}

export async function runOnboardCommand(io: Io, cmd: Command, opts: OnboardCommandRequest): Promise<RunVerdict> {
  const globals = parseGlobals(cmd.optsWithGlobals(), io);
  checkLogOption(globals, io);
  const playbook = await readPlaybook(undefined, io);
  const inventory = inventoryFile(globals.inventory, io.cwd);
  const interrupt = io.interruptSignal();
  const secrets: string[] = [];
  const shown: Shown = { log: undefined, unnamed: new Set() };
  const report = await runOnboard({
    request: opts,
    inventory,
    playbook,
    transport: (fleet) => buildTransport(io, globals, fleet, opts.askSudoPass, interrupt, secrets),
    concurrency: globals.concurrency,
    timeoutMs: globals.timeout * 1000,
    interrupt,
    events: onboardEvents(io, globals, opts, playbook, shown, secrets),
  });
  return reportOnboard(io, globals, report, shown.log);
}

function sayer(io: Io, globals: GlobalOptions): (line: string) => void {
  return (line: string) => void (globals.json ? undefined : io.stdout.write(`${line}\n`));
}

function onboardEvents(
  io: Io,
  globals: GlobalOptions,
  opts: OnboardCommandRequest,
  playbook: Playbook,
  shown: Shown,
  secrets: readonly string[],
): OnboardEvents {
  const say = sayer(io, globals);
  return {
    onStart: (hosts, names) => {
      shown.unnamed = names;
      shown.log = startRunLog(io, globals, 'onboard', () => secrets);
      say(onboardStartLine(opts.owner, hosts, globals.inventory, shown.unnamed));
    },
    discovery: {
      onHostStart: (...a) => shown.log?.events.onHostStart?.(...a),
      onStage: (host, stage, at) => {
        if (stage === 'wait') say(discoveryWaitLine(host, shown.unnamed));
        shown.log?.events.onStage?.(host, stage, at);
      },
      onHostDone: (...a) => shown.log?.events.onHostDone?.(...a),
    },
    onDiscovered: (d, host) => formatDiscoveryLines(d, host).forEach(say),
    phase: async (name) => {
      const header = {
        command: name,
        inventory: globals.inventory,
        ...(name === 'deploy' ? { playbook: playbook.name } : {}),
      };
      const display = globals.json
        ? { events: {}, finish: async () => undefined }
        : await chooseDisplay(io, globals, header);
      return withRunLog(io, globals, display, shown.log, { close: false });
    },
    onInventory: (change) => {
      const text = inventoryChangeText(change);
      if (text !== undefined) say(text);
    },
  };
}

function reportOnboard(io: Io, globals: GlobalOptions, report: OnboardReport, log: RunLog | undefined): RunVerdict {
  const say = sayer(io, globals);
  log?.close();
  if (globals.json) writeJson(io, { ...onboardDocument(report, globals.inventory), log: log?.path ?? null });
  else if (report.cheatSheet) say(`\n${formatCheatSheetText(report.cheatSheet)}`);
  if (log) say(`run log: ${log.path}`);
  if (report.outcome === 'ok') say(`onboard ok: ${report.summary}`);
  else io.stderr.write(`ibfleet onboard: ${report.summary}\n`);
  return report.outcome === 'ok' || report.outcome === 'refused' || report.outcome === 'interrupted'
    ? report.outcome
    : 'failed';
}
