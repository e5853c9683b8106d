/** `ibfleet rollback --hosts S`: remove hooks, rules, tables and the sysctl file; restore main routes. */
import type { Command } from 'commander';
import type { CommandResult, Io } from './context.js';
import { addRunOptions } from './run-options.js';

export function registerRollback(program: Command, io: Io, done: (r: CommandResult) => void): void {
  addRunOptions(
    program
      .command('rollback')
      .description('undo deploy: remove hooks, script and sysctl file, rules and tables; main routes back as the kernel had them')
      .option('--hosts <set>', 'hosts to roll back: 16,34 16-20 memserver34 @cpu pair:alice all'),
  ).action(async (opts: { hosts?: string }, cmd: Command) => {
    const [{ readPlaybook }, { prepareRun, runPerHost }, { rollbackHost }] = await Promise.all([
      import('./context.js'),
      import('./fleet-run.js'),
      import('../runner/host-workflows.js'),
    ]);
    const playbook = await readPlaybook(undefined, io);
    const run = await prepareRun(io, cmd, opts.hosts, true);
    done({ verdict: await runPerHost(io, run, 'rollback', {}, rollbackHost({ fleet: run.fleet, playbook, transport: run.transport })) });
  });
}
