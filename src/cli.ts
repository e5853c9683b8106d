#!/usr/bin/env node
/**
 * ibfleet's entry point: argument parsing, and the one place where errors become exit codes —
 * 0 all good, 1 a host failed / drifted / a matrix cell failed, 2 usage or inventory error
 * (nothing contacted), 130 interrupted.
 */
import { Command, CommanderError, Option } from 'commander';
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { CommandResult, Io } from './commands/context.js';
import { registerCommands } from './commands/register.js';
import { BugError, clipInput, HostError, InterruptedError, InventoryError, UsageError } from './errors.js';
import type { RunVerdict } from './vocabulary.js';
import { VERSION } from './version.js';

export const EXIT = { ok: 0, failed: 1, usage: 2, interrupted: 130 } as const;

/** A request refused before anything changed is the user's to fix, like a usage error. */
const VERDICT_EXIT: Readonly<Record<RunVerdict, number>> = { ok: EXIT.ok, failed: EXIT.failed, refused: EXIT.usage, interrupted: EXIT.interrupted };

export function buildProgram(io: Io, done: (r: CommandResult) => void): Command {
  const program = new Command('ibfleet')
    .description('Per-NIC policy routing for lab servers with two InfiniBand NICs in one subnet:\nderive, render, deploy over SSH, verify.')
    .version(VERSION, '-V, --version')
    .option('-i, --inventory <file>', 'inventory file (default: inventory/fleet.yaml or $IBFLEET_INVENTORY)')
    .option('-c, --concurrency <n>', 'hosts worked on at once', '32')
    .option('--timeout <seconds>', 'per-host time limit', '60')
    .option('--json', 'print one JSON document on stdout instead of text or the TUI')
    .option('--known-hosts <file>', 'known_hosts file to check host keys against (default: ~/.ssh/known_hosts)')
    .addOption(new Option('--accept-new', 'record unknown host keys (like StrictHostKeyChecking=accept-new); changed keys are still refused'))
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride()
    .configureOutput({
      writeOut: (s) => void io.stdout.write(s),
      writeErr: (s) => void io.stderr.write(s),
    });
  registerCommands(program, io, done);
  for (const sub of program.commands) sub.exitOverride().showHelpAfterError('(run with --help for usage)');
  return program;
}

export async function main(argv: readonly string[], io: Io): Promise<number> {
  let result: CommandResult | undefined;
  const program = buildProgram(io, (r) => (result = r));
  try {
    if (argv.length === 0) {
      program.outputHelp();
      return EXIT.usage;
    }
    await program.parseAsync(argv as string[], { from: 'user' });
    return result ? VERDICT_EXIT[result.verdict] : EXIT.ok;
  } catch (error) {
    return reportError(error, io);
  }
}

function reportError(error: unknown, io: Io): number {
  if (error instanceof CommanderError) {
    return error.code === 'commander.helpDisplayed' || error.code === 'commander.version' || error.code === 'commander.help' ? EXIT.ok : EXIT.usage;
  }
  if (error instanceof InventoryError) {
    io.stderr.write(`${error.message}\nibfleet: ${error.total === 1 ? 'this problem' : `these ${error.total} problems`} must be fixed first; nothing was contacted\n`);
    return EXIT.usage;
  }
  if (error instanceof UsageError) {
    io.stderr.write(`ibfleet: ${error.message}\n`);
    return EXIT.usage;
  }
  if (error instanceof InterruptedError) {
    io.stderr.write('ibfleet: interrupted\n');
    return EXIT.interrupted;
  }
  if (error instanceof HostError) {
    io.stderr.write(`ibfleet: ${error.stage}: ${error.message}\n${error.stderrTail}\n`);
    return EXIT.failed;
  }
  const what = error instanceof BugError ? 'bug' : 'unexpected error';
  const text = error instanceof Error ? `${error.name !== 'Error' && !(error instanceof BugError) ? `${error.name}: ` : ''}${error.message}` : String(error);
  if (io.env.IBFLEET_DEBUG) {
    // The build is minified: a stack names source lines only with source maps on.
    const mapped = process.execArgv.includes('--enable-source-maps') || (io.env.NODE_OPTIONS ?? '').includes('--enable-source-maps');
    io.stderr.write(`ibfleet: ${what}: ${error instanceof Error ? (error.stack ?? text) : text}\n${mapped ? '' : 'ibfleet: NODE_OPTIONS=--enable-source-maps names the source lines\n'}`);
  } else {
    // One line: what happened and where the details are, not a stack trace the user cannot act on.
    io.stderr.write(`ibfleet: ${what}: ${clipInput(text.split('\n')[0]!, 200)} (a defect in ibfleet: run it again with IBFLEET_DEBUG=1 for the stack trace, and report it with the command you ran)\n`);
  }
  return EXIT.failed;
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
          process.stderr.write('\nibfleet: interrupted: no new hosts start; changes under way finish (Ctrl-C again to quit now)\n');
          c.abort();
        });
      }
      return controller.signal;
    },
  };
}

const invokedDirectly = process.argv[1] !== undefined && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url);
if (invokedDirectly) {
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
