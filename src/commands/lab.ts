/** `ibfleet lab up | down | reboot`: the local rehearsal lab (src/lab/). */
import type { Command } from 'commander';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Fleet } from '../inventory/model.js';
import type { CommandResult, Io } from './context.js';

const collect = (value: string, previous: string[]) => [...previous, value];

/** Option schemas and the context helpers, loaded when a lab command runs (not for --help). */
async function load() {
  const [{ z }, context] = await Promise.all([import('zod'), import('./context.js')]);
  const schemas = {
    up: z.object({
      hosts: z.string().optional(),
      name: z.string().default('default'),
      mgmtSubnet: z.string().optional(),
      manager: z.array(z.string()).default([]),
      interfaces: z.array(z.string()).default([]),
    }),
    down: z.object({ name: z.string().optional(), all: z.boolean().default(false) }),
    reboot: z.object({ name: z.string().default('default') }),
  };
  return { schemas, ...context };
}

export function registerLab(program: Command, io: Io, done: (r: CommandResult) => void): void {
  const lab = program
    .command('lab')
    .description('rehearsal lab on this machine: hosts in network namespaces, each with sshd, its own /etc and network manager (needs root)');

  lab
    .command('up')
    .description('bring up lab hosts with the seeds\' failure live (NIC 2 traffic fails); writes a lab inventory and known_hosts')
    .option('--hosts <numbers>', 'host numbers and ranges, e.g. 16,34,40-47 (default: the inventory\'s hosts; others are added as node<H>)')
    .option('--name <name>', 'lab name; several labs can run at once', 'default')
    .option('--mgmt-subnet <cidr>', 'management network of the lab hosts (host H = network + H; default 198.18.0.0/24)')
    .option('--manager <hosts=manager>', 'emulated network manager, e.g. 40=ifupdown or 40-47=networkmanager (repeatable; default: 16 networkmanager, others netplan)', collect, [])
    .option('--interfaces <hosts=names>', 'NIC interface names, e.g. 40=eth0,eth1 (repeatable; default: the inventory\'s, else ib0,ib1)', collect, [])
    .action(async (raw: unknown, cmd: Command) => {
      const { schemas, parseGlobals, parseOptions, writeJson } = await load();
      const globals = parseGlobals(cmd.optsWithGlobals(), io);
      const opts = parseOptions(schemas.up, raw);
      const { labUp } = await import('../lab/up.js');
      const { parseInterfaceAssignments, parseLabHosts, parseManagerAssignments } = await import('../lab/options.js');
      const { formatLabUpText, labUpJson } = await import('../lab/format.js');
      const fleet = await sourceFleet(cmd, io);
      const started = performance.now();
      const info = await labUp({
        name: opts.name,
        fleet,
        managers: parseManagerAssignments(opts.manager),
        interfaces: parseInterfaceAssignments(opts.interfaces),
        ...(opts.hosts !== undefined ? { hosts: parseLabHosts(opts.hosts) } : {}),
        ...(opts.mgmtSubnet !== undefined ? { mgmtSubnet: opts.mgmtSubnet } : {}),
        ...(globals.json ? {} : { onStep: (text: string) => void io.stderr.write(`lab ${opts.name}: ${text}\n`) }),
      });
      const elapsed = performance.now() - started;
      if (globals.json) writeJson(io, labUpJson(info, elapsed));
      else io.stdout.write(formatLabUpText(info, elapsed));
      done({ verdict: 'ok' });
    });

  lab
    .command('down')
    .description('remove every namespace, process, mount, link and file of a lab (safe to repeat, and after a failed up)')
    .option('--name <name>', 'lab name (default: default)')
    .option('--all', 'remove every lab on this machine')
    .action(async (raw: unknown, cmd: Command) => {
      const { schemas, parseGlobals, parseOptions, writeJson } = await load();
      const globals = parseGlobals(cmd.optsWithGlobals(), io);
      const opts = parseOptions(schemas.down, raw);
      const { labDown, labDownAll } = await import('../lab/down.js');
      const { requireRoot } = await import('../lab/preflight.js');
      const { formatLabDownText } = await import('../lab/format.js');
      requireRoot('lab down');
      const results = opts.all ? await labDownAll() : [await labDown(opts.name ?? 'default')];
      if (globals.json) writeJson(io, { command: 'lab down', ok: true, labs: results });
      else io.stdout.write(formatLabDownText(results, opts.all ? undefined : (opts.name ?? 'default')));
      done({ verdict: 'ok' });
    });

  lab
    .command('reboot')
    .description('return hosts to boot state (rules and tables gone, addresses re-added), then run their hooks as their manager would')
    .argument('<hosts>', 'host numbers and ranges, e.g. 34 or 16,34')
    .option('--name <name>', 'lab name', 'default')
    .action(async (hosts: string, raw: unknown, cmd: Command) => {
      const { schemas, parseGlobals, parseOptions, writeJson } = await load();
      const globals = parseGlobals(cmd.optsWithGlobals(), io);
      const opts = parseOptions(schemas.reboot, raw);
      const { labReboot } = await import('../lab/reboot.js');
      const { parseLabHosts } = await import('../lab/options.js');
      const { requireRoot } = await import('../lab/preflight.js');
      const { formatRebootText, rebootJson } = await import('../lab/format.js');
      const ids = parseLabHosts(hosts, 'lab reboot');
      requireRoot('lab reboot');
      const results = await labReboot(opts.name, ids);
      if (globals.json) writeJson(io, rebootJson(results));
      else io.stdout.write(formatRebootText(results));
      done({ verdict: results.every((r) => r.ok) ? 'ok' : 'failed' });
    });
}

/**
 * The inventory the lab takes names, roles, interfaces and pairs from: -i / $IBFLEET_INVENTORY when
 * given, else inventory/fleet.yaml here, else the seeds' example shipped with ibfleet — so `lab up`
 * works from any directory.
 */
async function sourceFleet(cmd: Command, io: Io): Promise<Fleet> {
  const { parseGlobals, readFleet } = await import('./context.js');
  const globals = parseGlobals(cmd.optsWithGlobals(), io);
  const explicit = (cmd.optsWithGlobals() as { inventory?: string }).inventory !== undefined || io.env.IBFLEET_INVENTORY !== undefined;
  if (explicit || existsSync(resolve(io.cwd, globals.inventory))) return readFleet(globals, io);
  const { defaultFleet } = await import('../lab/up.js');
  return defaultFleet();
}
