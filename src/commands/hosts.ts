/** `ibfleet hosts [--hosts S]`: the derived addresses, tables, interfaces and managers. */
import type { Command } from 'commander';
import type { CommandResult, Io } from './context.js';
import { readOptions, type OptionTools } from './options.js';

const hostsOptions = ({ z }: OptionTools) => z.object({ hosts: z.string() });

export function registerHosts(program: Command, io: Io, done: (r: CommandResult) => void): void {
  program
    .command('hosts')
    .description('show the derived addresses, tables, interfaces and managers (no SSH)')
    .option('--hosts <set>', 'hosts to show: 16,34 16-20 memserver34 @cpu pair:alice all', 'all')
    .action(async (raw: unknown, cmd: Command) => {
      const opts = await readOptions(hostsOptions, raw);
      const [{ parseGlobals, readFleet, writeJson }, { parseHostSelection }, { formatHostsText, hostsJson }] =
        await Promise.all([import('./context.js'), import('../inventory/select.js'), import('../ui/text/hosts.js')]);
      const globals = parseGlobals(cmd.optsWithGlobals(), io);
      const fleet = await readFleet(globals, io);
      const ids = new Set(parseHostSelection(opts.hosts, fleet));
      const hosts = fleet.hosts.filter((h) => ids.has(h.id));
      if (globals.json) writeJson(io, hostsJson(fleet, hosts));
      else io.stdout.write(formatHostsText(fleet, hosts));
      done({ verdict: 'ok' });
    });
}
