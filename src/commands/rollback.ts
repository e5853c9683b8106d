/** `ibfleet rollback --hosts S`: remove hooks, rules, tables and the sysctl file; restore main routes. */
import type { Command } from 'commander';
import type { CommandResult, Io } from './context.js';
import { readOptions, type OptionTools } from './options.js';
import { addRunOptions, hostsRequired } from './run-options.js';

const rollbackOptions = ({ z }: OptionTools) =>
  z.object({
    hosts: z.string({ error: hostsRequired('rollback') }),
    askSudoPass: z.boolean().default(false),
  });

export function registerRollback(program: Command, io: Io, done: (r: CommandResult) => void): void {
  addRunOptions(
    program
      .command('rollback')
      .description(
        'undo deploy: remove hooks, script and sysctl file, rules and tables; main routes back as the kernel had them',
      )
      .option('--hosts <set>', 'hosts to roll back: 16,34 16-20 memserver34 @cpu pair:alice all'),
  ).action(async (raw: unknown, cmd: Command) => {
    const opts = await readOptions(rollbackOptions, raw);
    const [{ readPlaybook }, { prepareRun, runPerHost }, { rollbackHost }] = await Promise.all([
      import('./context.js'),
      import('./fleet-run.js'),
      import('../runner/host-workflows.js'),
    ]);
    const playbook = await readPlaybook(undefined, io);
    const run = await prepareRun(io, cmd, { selection: opts.hosts, askSudoPass: opts.askSudoPass });
    done({
      verdict: await runPerHost(
        io,
        run,
        { command: 'rollback', inventory: run.globals.inventory },
        rollbackHost({ fleet: run.fleet, playbook, transport: run.transport }),
      ),
    });
  });
}
