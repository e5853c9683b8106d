/** `ibfleet status [--hosts S]`: read-only compliance and drift report. */
import type { Command } from 'commander';
import type { Io } from './context.js';
import type { CommandResult } from './register.js';
import { addRunOptions } from './run-options.js';

export function registerStatus(program: Command, io: Io, done: (r: CommandResult) => void): void {
  addRunOptions(
    program
      .command('status')
      .description('read-only: which hosts comply with the playbook and what drifted')
      .option('--hosts <set>', 'hosts to check (default: all)')
      .option('--playbook <file>', 'playbook to check against (default: the built-in dual-ib-routing)'),
  ).action(async (opts: { hosts?: string; playbook?: string }, cmd: Command) => {
    const [{ readPlaybook }, { chooseDisplay, exitCodeFor, prepareRun }, { runHosts }, { statusHost }] = await Promise.all([
      import('./context.js'),
      import('./fleet-run.js'),
      import('../runner/fanout.js'),
      import('../runner/host-workflows.js'),
    ]);
    const playbook = await readPlaybook(opts.playbook, io);
    const run = await prepareRun(io, cmd, opts.hosts, false);
    const display = await chooseDisplay(io, run.globals, 'status', { playbook: playbook.name });
    const started = Date.now();
    display.events.onRunStart?.({ command: 'status', hosts: run.hosts.map((h) => ({ id: h.id, name: h.name, target: h.target })), concurrency: run.globals.concurrency, inventory: run.globals.inventory, playbook: playbook.name, startedAt: started });
    const results = await runHosts(
      run.hosts,
      { concurrency: run.globals.concurrency, timeoutMs: run.globals.timeout * 1000, interrupt: run.interrupt, events: display.events },
      statusHost({ fleet: run.fleet, playbook, transport: run.transport }),
    );
    const end = { results, cells: [], durationMs: Date.now() - started, interrupted: run.interrupt.aborted };
    display.events.onRunEnd?.(end);
    await display.finish(end);
    done({ exitCode: exitCodeFor(results, [], end.interrupted) });
  });
}
