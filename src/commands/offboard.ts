/**
 * `ibfleet offboard --hosts S | --pair OWNER [--no-rollback] [--dry-run]`: take hosts (a student's
 * pair) out of the fleet. Rollback first, as `ibfleet rollback` does it, unless --no-rollback; a
 * host whose rollback failed stays in the inventory (exit 1). Then the hosts' entries, and every
 * pair naming one of them, leave the inventory line by line, comments and the rest kept
 * (src/inventory/remove.ts), and their keys leave the known_hosts file the runs use.
 */
import type { Command } from 'commander';
import type { CommandResult, Io } from './context.js';
import { readOptions, type OptionTools } from './options.js';
import { addRunOptions } from './run-options.js';

const offboardOptions = ({ z }: OptionTools) =>
  z.object({
    hosts: z.string().optional(),
    pair: z.string().optional(),
    rollback: z.boolean().default(true),
    dryRun: z.boolean().default(false),
    askSudoPass: z.boolean().default(false),
  });

export function registerOffboard(program: Command, io: Io, done: (r: CommandResult) => void): void {
  addRunOptions(
    program
      .command('offboard')
      .description(
        'take hosts or a pair out of the fleet: rollback, then remove them from the inventory (comments kept) and their known_hosts keys',
      )
      .option('--hosts <set>', 'hosts to take out: 16,34 16-20 memserver34 @cpu pair:alice')
      .option('--pair <owner>', "the owner's pair: both its hosts and the pair entry")
      .option('--no-rollback', 'remove from the inventory without rolling the hosts back first (they keep the routing)')
      .option('--dry-run', 'say what would be rolled back and removed; change nothing'),
  ).action(async (raw: unknown, cmd: Command) => {
    const { runOffboard } = await import('./offboard-run.js');
    done({ verdict: await runOffboard(io, cmd, await readOptions(offboardOptions, raw)) });
  });
}
