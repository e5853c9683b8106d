/** `ibfleet deploy --hosts S [--dry-run] [--playbook P]`: probe → plan → push → apply → verify, per host, in parallel. */
import type { Command } from 'commander';
import type { CommandResult, Io } from './context.js';
import { readOptions, type OptionTools } from './options.js';
import { addRunOptions, hostsRequired } from './run-options.js';

const deployOptions = ({ z }: OptionTools) =>
  z
    .object({
      hosts: z.string({ error: hostsRequired('deploy') }),
      playbook: z.string().optional(),
      dryRun: z.boolean().default(false),
      showScripts: z.boolean().default(false),
      askSudoPass: z.boolean().default(false),
    })
    .refine((o) => o.dryRun || !o.showScripts, {
      error: "--show-scripts goes with --dry-run (a deploy that runs writes each host's script to the run log)",
    });

export function registerDeploy(program: Command, io: Io, done: (r: CommandResult) => void): void {
  addRunOptions(
    program
      .command('deploy')
      .description('probe, plan, push, apply and verify per-NIC routing on the selected hosts, in parallel')
      .option('--hosts <set>', 'hosts to deploy to: 16,34 16-20 memserver34 @cpu pair:alice all')
      .option('--playbook <file>', 'playbook (default: the built-in dual-ib-routing)')
      .option(
        '-n, --dry-run',
        'show the plan per host, by kind of change, hosts with the same plan folded; change nothing',
      )
      .option('--show-scripts', 'with --dry-run: also print the exact script each host would run'),
  ).action(async (raw: unknown, cmd: Command) => {
    const opts = await readOptions(deployOptions, raw);
    const [{ readPlaybook }, { prepareRun, runPerHost }, { deployHost }] = await Promise.all([
      import('./context.js'),
      import('./fleet-run.js'),
      import('../runner/host-workflows.js'),
    ]);
    const playbook = await readPlaybook(opts.playbook, io);
    const run = await prepareRun(io, cmd, { selection: opts.hosts, askSudoPass: opts.askSudoPass });
    const { dryRun } = opts;
    const showScripts = dryRun && opts.showScripts;
    done({
      verdict: await runPerHost(
        io,
        run,
        { command: 'deploy', inventory: run.globals.inventory, playbook: playbook.name, dryRun, showScripts },
        deployHost({ fleet: run.fleet, playbook, transport: run.transport }, { dryRun }),
      ),
    });
  });
}
