/** `ibfleet lab arp-flux [--name L] H`: break a lab host's ARP settings, so verify's ARP flux cause can be seen. */
import type { Command } from 'commander';
import { DEFAULT_LAB_NAME } from '../lab/names.js';
import type { CommandResult, Io } from './context.js';

export function registerLabArpFlux(lab: Command, io: Io, done: (r: CommandResult) => void): void {
  lab
    .command('arp-flux')
    .description(
      "break a lab host's ARP settings as an undeployed host has them (arp_ignore=0, arp_announce=0 on its fabric NICs) and flush the other hosts' neighbour tables: any of its NICs answers for any of its addresses, and verify names the ARP flux; ibfleet deploy (or its repair timer) puts them back",
    )
    .argument('<host>', 'host number, e.g. 34')
    .option('--name <name>', 'lab name', DEFAULT_LAB_NAME)
    .action(async (host: string, raw: { name: string }, cmd: Command) => {
      const [{ parseGlobals, writeJson }, { labArpFlux }, { parseLabHosts }, { requireRoot }] = await Promise.all([
        import('./context.js'),
        import('../lab/arp.js'),
        import('../lab/options.js'),
        import('../lab/preflight.js'),
      ]);
      const globals = parseGlobals(cmd.optsWithGlobals(), io);
      const [id] = parseLabHosts(host, 'lab arp-flux');
      requireRoot('lab arp-flux');
      const result = await labArpFlux(raw.name, id!);
      if (globals.json) writeJson(io, { command: 'lab arp-flux', ok: true, ...result });
      else
        io.stdout.write(
          `host ${result.id}: arp_ignore=0 arp_announce=0 on ${result.ifaces.join(', ')}; neighbour tables flushed on ${result.flushed.join(', ')}\n`,
        );
      done({ verdict: 'ok' });
    });
}
