/** `ibfleet deploy --hosts S [--dry-run] [--playbook P]`: probe → plan → push → apply → verify, per host, in parallel. */
import type { Command } from 'commander';
import { UsageError } from '../errors.js';
import type { CommandResult, Io } from './context.js';
import { addRunOptions } from './run-options.js';

export function registerDeploy(program: Command, io: Io, done: (r: CommandResult) => void): void {
  addRunOptions(
    program
      .command('deploy')
      .description('probe, plan, push, apply and verify per-NIC routing on the selected hosts, in parallel')
      .option('--hosts <set>', 'hosts to deploy to: 16,34 16-20 memserver34 @cpu pair:alice all')
      .option('--playbook <file>', 'playbook (default: the built-in dual-ib-routing)')
      .option('-n, --dry-run', 'show the plan per host, by kind of change, hosts with the same plan folded; change nothing')
      .option('--show-scripts', 'with --dry-run: also print the exact script each host would run'),
  ).action(async (opts: { hosts?: string; playbook?: string; dryRun?: boolean; showScripts?: boolean }, cmd: Command) => {
    if (opts.showScripts && !opts.dryRun) throw new UsageError('--show-scripts goes with --dry-run (a deploy that runs writes each host\'s script to the run log)');
    const [{ readPlaybook }, { prepareRun, runPerHost }, { deployHost }] = await Promise.all([
      import('./context.js'),
      import('./fleet-run.js'),
      import('../runner/host-workflows.js'),
    ]);
    const playbook = await readPlaybook(opts.playbook, io);
    const run = await prepareRun(io, cmd, opts.hosts, true);
    const dryRun = opts.dryRun === true;
    const showScripts = dryRun && opts.showScripts === true;
    done({ verdict: await runPerHost(io, run, 'deploy', { playbook: playbook.name, dryRun, showScripts }, deployHost({ fleet: run.fleet, playbook, transport: run.transport }, { dryRun })) });
  });
}
