/** `ibfleet status [--hosts S]`: read-only compliance and drift report. */
import type { Command } from 'commander';
import type { CommandResult, Io } from './context.js';
import { readOptions, type OptionTools } from './options.js';
import { addRunOptions } from './run-options.js';

const statusOptions = ({ z }: OptionTools) =>
  z.object({
    hosts: z.string().optional(),
    playbook: z.string().optional(),
    diff: z.boolean().default(false),
    askSudoPass: z.boolean().default(false),
  });

export function registerStatus(program: Command, io: Io, done: (r: CommandResult) => void): void {
  addRunOptions(
    program
      .command('status')
      .description('read-only: which hosts comply with the playbook and what drifted')
      .option('--hosts <set>', 'hosts to check (default: all)')
      .option('--playbook <file>', 'playbook to check against (default: the built-in dual-ib-routing)')
      .option(
        '--diff',
        "show each of ibfleet's files that differs on a host as a unified diff (host's copy → what deploy installs)",
      ),
  ).action(async (raw: unknown, cmd: Command) => {
    const opts = await readOptions(statusOptions, raw);
    const [{ readPlaybook }, { prepareRun, runPerHost }, { statusHost }, { fleetFindings }] = await Promise.all([
      import('./context.js'),
      import('./fleet-run.js'),
      import('../runner/host-workflows.js'),
      import('../plan/host-plan.js'),
    ]);
    const playbook = await readPlaybook(opts.playbook, io);
    const run = await prepareRun(io, cmd, { selection: opts.hosts, askSudoPass: opts.askSudoPass });
    const { diff } = opts;
    done({
      verdict: await runPerHost(
        io,
        run,
        { command: 'status', inventory: run.globals.inventory, playbook: playbook.name, diff },
        statusHost({ fleet: run.fleet, playbook, transport: run.transport }, { diff }),
        fleetFindings(playbook),
      ),
    });
  });
}
