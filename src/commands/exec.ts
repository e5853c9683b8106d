/** `ibfleet exec --hosts S -- CMD ARGS…`: the admin's command on the selected hosts, output folded as `clush -b` folds it. */
import type { Command } from 'commander';
import type { CommandResult, Io } from './context.js';
import { readOptions, type OptionTools } from './options.js';
import { addRunOptions } from './run-options.js';

const execOptions = ({ z }: OptionTools) =>
  z.object({
    hosts: z.string({
      error: 'exec runs a command on hosts, so it needs --hosts (e.g. --hosts 16,34, --hosts @cpu or --hosts all)',
    }),
    askSudoPass: z.boolean().default(false),
  });

export function registerExec(program: Command, io: Io, done: (r: CommandResult) => void): void {
  addRunOptions(
    program
      .command('exec')
      .description(
        'run a command on the selected hosts as root (sudo where the inventory says so); identical output folded once, as clush -b does',
      )
      .option('--hosts <set>', 'hosts to run it on: 16,34 16-20 memserver34 @cpu pair:alice all')
      .argument(
        '<command...>',
        'the command and its arguments, after -- (each word quoted for the remote shell; for a pipe: -- sh -c "…")',
      ),
  ).action(async (argv: string[], raw: unknown, cmd: Command) => {
    const opts = await readOptions(execOptions, raw);
    const [
      { prepareRun, fanoutOptions, startRunLog, withRunLog },
      { announceRun, runHosts },
      { execHost },
      { execLines },
      { runDocument },
      { writeJson },
      { runVerdict },
    ] = await Promise.all([
      import('./fleet-run.js'),
      import('../runner/fanout.js'),
      import('../runner/exec.js'),
      import('../ui/text/exec-fold.js'),
      import('../ui/json.js'),
      import('./context.js'),
      import('../vocabulary.js'),
    ]);
    const run = await prepareRun(io, cmd, { selection: opts.hosts, askSudoPass: opts.askSudoPass });
    const header = { command: 'exec', inventory: run.globals.inventory } as const;
    const log = startRunLog(io, run.globals, 'exec', run.secrets);
    // No live display: like clush -b, the folded output once every host has answered.
    const display = withRunLog(
      io,
      run.globals,
      {
        events: {},
        finish: async (end) => {
          if (run.globals.json) writeJson(io, { ...runDocument(header, end), log: log?.path ?? null });
          else io.stdout.write(`${execLines(end.results).join('\n')}\n`);
        },
      },
      log,
    );
    const end = await announceRun(
      run.hosts,
      { header, concurrency: run.globals.concurrency, interrupt: run.interrupt },
      display,
      async (events) => ({
        results: await runHosts(run.hosts, fanoutOptions(run, events), execHost(run.transport, argv)),
      }),
    );
    done({ verdict: runVerdict(end) });
  });
}
