#!/usr/bin/env node
/**
 * ibfleet's entry point: argument parsing, and the one place where errors become exit codes —
 * 0 all good, 1 a host failed / drifted / a matrix cell failed, 2 usage or inventory error
 * (nothing contacted), 130 interrupted.
 */
import { Command, CommanderError, Option } from 'commander';
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { commandSpec, findCommand, walkWords } from './command-line.js';
import type { CommandResult, Io } from './commands/context.js';
import { addHelpFooters, optionDescription } from './commands/help.js';
import { registerCommands } from './commands/register.js';
// Every command's steps may fill host/files/ templates (script/host-templates.ts); their source is
// installed here once, not left to whichever module a command happens to reach first.
import './script/host-templates-package.js';
import {
  BugError,
  clipInput,
  ConfigError,
  HostError,
  InterruptedError,
  LabError,
  UsageError,
  type ConfigKind,
} from './errors.js';
import { holdOptimizer } from './optimizer.js';
import { jsonText, sanitizeLine, sanitizeLines } from './ui/text/sanitize.js';
import type { RunVerdict } from './vocabulary.js';
import { VERSION } from './version.js';

export const EXIT = { ok: 0, failed: 1, usage: 2, interrupted: 130 } as const;

/** A request refused before anything changed is the user's to fix, like a usage error. */
const VERDICT_EXIT: Readonly<Record<RunVerdict, number>> = {
  ok: EXIT.ok,
  failed: EXIT.failed,
  refused: EXIT.usage,
  interrupted: EXIT.interrupted,
};

/** What commander said while parsing: its parse error, and (under --json) the help or version it printed. */
export interface CommanderSaid {
  message?: string;
  /** When set, help and version text are kept here instead of printed: --json prints them as a document. */
  out?: string[];
}

export function buildProgram(io: Io, done: (r: CommandResult) => void, said: CommanderSaid = {}): Command {
  const program = new Command('ibfleet')
    .description(
      'Per-NIC policy routing for lab servers with two InfiniBand NICs in one subnet:\nderive, render, deploy over SSH, verify.',
    )
    .version(VERSION, '-V, --version')
    .option('-i, --inventory <file>', 'inventory file (default: inventory/fleet.yaml, or $IBFLEET_INVENTORY)')
    .option('-c, --concurrency <n>', 'hosts worked on at once (default: 32)')
    .option(
      '--timeout <seconds>',
      "time limit per host; in verify's matrix, the longest a host may go without finishing anything (default: 60)",
    )
    .option('--json', 'print one JSON document on stdout instead of text or the TUI; errors too')
    .option('--known-hosts <file>', 'known_hosts file to check host keys against (default: ~/.ssh/known_hosts)')
    .addOption(
      new Option(
        '--accept-new',
        'record unknown host keys (like StrictHostKeyChecking=accept-new); changed keys are still refused',
      ),
    )
    .option(
      '--log <file>',
      'write the run log to FILE (default: $XDG_STATE_HOME/ibfleet/runs/, i.e. ~/.local/state/ibfleet/runs/)',
    )
    .option('--no-log', 'keep no run log')
    .exitOverride()
    .configureOutput({
      writeOut: (s) => void (said.out ? said.out.push(s) : io.stdout.write(s)),
      writeErr: (s) => void io.stderr.write(s),
      // Commander's own parse errors are reported by reportError(), in the run's format (text or JSON).
      outputError: (message) => void (said.message = message.trim().replace(/^error: /, '')),
    });
  const help = program.createHelp();
  program.configureHelp({
    showGlobalOptions: true,
    optionDescription: (option) => optionDescription(option, help, help.optionDescription),
  });
  registerCommands(program, io, done);
  for (const sub of program.commands) sub.exitOverride();
  addHelpFooters(program);
  return program;
}

export async function main(argv: readonly string[], io: Io): Promise<number> {
  let result: CommandResult | undefined;
  const said: CommanderSaid = argv.includes('--json') ? { out: [] } : {};
  const program = buildProgram(io, (r) => (result = r), said);
  try {
    if (argv.length === 0) {
      program.outputHelp();
      return EXIT.usage;
    }
    await program.parseAsync(argv as string[], { from: 'user' });
    return result ? VERDICT_EXIT[result.verdict] : EXIT.ok;
  } catch (error) {
    return reportError(error, io, {
      line: readCommandLine(program, argv),
      json: argv.includes('--json'),
      commanderMessage: said.message,
      commanderOut: said.out,
    });
  }
}

interface ErrorContext {
  readonly line: CommandLine;
  readonly json: boolean;
  /** What commander said about its parse error (kept from its output, not printed by it). */
  readonly commanderMessage: string | undefined;
  /** The help or version text commander wrote, kept under --json. */
  readonly commanderOut: readonly string[] | undefined;
}

/** What a command line asked for, read against the program's own definitions (src/command-line.ts). */
export interface CommandLine {
  /** The command the words name (`deploy`, `lab up`); undefined: none, or one the program does not have. */
  readonly name: string | undefined;
  /** It takes hosts only as --hosts (it has the option and no positional arguments). */
  readonly takesHostsOption: boolean;
  /** Words given to it that are neither options nor their values. */
  readonly positionals: readonly string[];
}

export function readCommandLine(program: Command, argv: readonly string[]): CommandLine {
  const root = commandSpec(program);
  const { path, positionals } = walkWords(root, argv);
  const command = findCommand(root, path);
  return {
    name: path.length > 0 ? path.join(' ') : undefined,
    takesHostsOption: path.length > 0 && command.args.length === 0 && command.options.some((o) => o.long === '--hosts'),
    positionals: path.length > 0 ? positionals : [],
  };
}

/** `ibfleet deploy 16`: a host set given as a word, as ssh-style tools take it. */
function positionalHint(line: CommandLine): string | undefined {
  const word = line.positionals[0];
  if (!line.takesHostsOption || word === undefined) return undefined;
  return `${line.name} takes hosts as --hosts, not as a word: did you mean ibfleet ${line.name} --hosts ${word}?`;
}

interface ReportedError {
  /** Under --json, `error.kind`: which file was invalid for a ConfigError. */
  readonly kind: 'usage' | ConfigKind | 'interrupted' | 'host' | 'lab' | 'bug';
  readonly message: string;
  readonly exit: number;
  /** The text for stderr (without --json: the whole report). */
  readonly text: string;
  readonly problems?: readonly { file: string; line: number; column: number; message: string; hint: string | null }[];
}

function describeError(error: unknown, io: Io, context: ErrorContext): ReportedError | 'help' | 'version' {
  const { name } = context.line;
  if (error instanceof CommanderError) {
    if (error.code === 'commander.version') return 'version';
    // A command group without its subcommand (`ibfleet lab`): commander printed its help to stderr.
    if (error.code === 'commander.help' && error.exitCode !== 0) {
      const message = `${name ?? 'ibfleet'} needs one of its commands (listed above)`;
      return { kind: 'usage', message, exit: EXIT.usage, text: `ibfleet: ${message}\n` };
    }
    if (error.code === 'commander.helpDisplayed' || error.code === 'commander.help') return 'help';
    const said = context.commanderMessage ?? error.message.replace(/^error: /, '');
    const message = (error.code === 'commander.excessArguments' ? positionalHint(context.line) : undefined) ?? said;
    return {
      kind: 'usage',
      message,
      exit: EXIT.usage,
      text: `ibfleet: ${message}\n(run ibfleet ${name ?? ''}${name ? ' ' : ''}--help for usage)\n`,
    };
  }
  if (error instanceof ConfigError) {
    const message = `${error.total === 1 ? 'this problem' : `these ${error.total} problems`} must be fixed first; nothing was contacted`;
    const problems = error.problems.map((p) => ({
      file: p.position.file,
      line: p.position.line,
      column: p.position.column,
      message: p.message,
      hint: p.hint ?? null,
    }));
    return {
      kind: error.kind,
      message: `${error.message}\n${message}`,
      exit: EXIT.usage,
      text: `${error.message}\nibfleet: ${message}\n`,
      problems,
    };
  }
  if (error instanceof UsageError)
    return { kind: 'usage', message: error.message, exit: EXIT.usage, text: `ibfleet: ${error.message}\n` };
  if (error instanceof InterruptedError)
    return { kind: 'interrupted', message: 'interrupted', exit: EXIT.interrupted, text: 'ibfleet: interrupted\n' };
  if (error instanceof HostError || error instanceof LabError) {
    const [kind, where] =
      error instanceof HostError ? (['host', error.stage] as const) : (['lab', error.step] as const);
    return {
      kind,
      message: `${where}: ${error.message}`,
      exit: EXIT.failed,
      text: `ibfleet: ${where}: ${sanitizeLine(error.message, 'keep')}\n${sanitizeLines(error.stderrTail, 'keep').join('\n')}\n`,
    };
  }
  const what = error instanceof BugError ? 'bug' : 'unexpected error';
  const text =
    error instanceof Error
      ? `${error.name !== 'Error' && !(error instanceof BugError) ? `${error.name}: ` : ''}${error.message}`
      : String(error);
  if (io.env.IBFLEET_DEBUG) {
    // The build is minified: a stack names source lines only with source maps on.
    const mapped =
      process.execArgv.includes('--enable-source-maps') || (io.env.NODE_OPTIONS ?? '').includes('--enable-source-maps');
    const stack = `ibfleet: ${what}: ${error instanceof Error ? (error.stack ?? text) : text}\n${mapped ? '' : 'ibfleet: NODE_OPTIONS=--enable-source-maps names the source lines\n'}`;
    return { kind: 'bug', message: `${what}: ${text}`, exit: EXIT.failed, text: stack };
  }
  // One line: what happened and where the details are, not a stack trace the user cannot act on.
  const line = `${what}: ${clipInput(text.split('\n')[0]!, 200)}`;
  return {
    kind: 'bug',
    message: line,
    exit: EXIT.failed,
    text: `ibfleet: ${line} (a defect in ibfleet: run it again with IBFLEET_DEBUG=1 for the stack trace, and report it with the command you ran)\n`,
  };
}

/**
 * Every error as the run would have said it: text on stderr, and with --json also one document on
 * stdout (`{"command", "ok": false, "error": {"kind", "message"}}`) so a script reading stdout
 * always gets JSON. The exit code is the same either way.
 */
function reportError(error: unknown, io: Io, context: ErrorContext): number {
  const described = describeError(error, io, context);
  const { name } = context.line;
  const json = context.json;
  if (described === 'help' || described === 'version') {
    // Under --json, help and version are a document too: `{"command", "ok": true, "help": TEXT}`.
    const text = (context.commanderOut ?? []).join('');
    if (json)
      io.stdout.write(
        `${jsonText({ command: name ?? null, ok: true, [described]: described === 'version' ? text.trim() : text })}\n`,
      );
    return EXIT.ok;
  }
  io.stderr.write(described.text);
  if (json) {
    const doc = {
      command: name ?? null,
      ok: false,
      error: {
        kind: described.kind,
        message: described.message,
        ...(described.problems ? { problems: described.problems } : {}),
      },
    };
    io.stdout.write(`${jsonText(doc)}\n`);
  }
  return described.exit;
}

function processIo(): Io {
  let controller: AbortController | undefined;
  return {
    stdout: process.stdout,
    stderr: process.stderr,
    stdin: process.stdin,
    env: process.env,
    cwd: process.cwd(),
    interruptSignal() {
      if (!controller) {
        const c = (controller = new AbortController());
        process.on('SIGINT', () => {
          if (c.signal.aborted) process.exit(EXIT.interrupted);
          process.stderr.write(
            '\nibfleet: interrupted: no new hosts start; changes under way finish (Ctrl-C again to quit now)\n',
          );
          c.abort();
        });
      }
      return controller.signal;
    },
  };
}

const invokedDirectly =
  process.argv[1] !== undefined && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url);
if (invokedDirectly) {
  // Until the inventory is read, no TurboFan: what runs before runs once; after, a higher bar for it (optimizer.ts).
  holdOptimizer();
  // `ibfleet status | head`: a closed pipe is the reader's choice, not an error worth a stack trace.
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0);
      throw error;
    });
  }
  const code = await main(process.argv.slice(2), processIo());
  process.exitCode = code;
}
