/** `ibfleet lab up | down | list | reboot | flap | restart | exec`: the local rehearsal lab (src/lab/). */
import type { Command } from 'commander';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Fleet } from '../inventory/model.js';
import { DEFAULT_LAB_NAME } from '../lab/names.js';
import type { CommandResult, Io } from './context.js';
import { registerLabArpFlux } from './lab-arp.js';
import { registerLabBreaks, registerLabPort } from './lab-port.js';
import { readOptions, type OptionTools } from './options.js';

const collect = (value: string, previous: string[]) => [...previous, value];

/** Every lab command but list and down names its lab with --name, the default lab without it. */
const nameOption = ['--name <name>', 'lab name', DEFAULT_LAB_NAME] as const;

const upOptions = ({ z }: OptionTools) =>
  z.object({
    hosts: z.string().optional(),
    name: z.string(),
    mgmtSubnet: z.string().optional(),
    manager: z.array(z.string()),
    interfaces: z.array(z.string()),
    nics: z.array(z.string()),
    managers: z.boolean(),
    withoutRdma: z.string().optional(),
    withoutSystemd: z.string().optional(),
    fresh: z.string().optional(),
    withoutPython3: z.string().optional(),
    withFping: z.string().optional(),
    suite: z.array(z.string()),
    linkLayer: z.array(z.string()),
  });
const downOptions = ({ z }: OptionTools) =>
  z.object({ name: z.string().default(DEFAULT_LAB_NAME), all: z.boolean().default(false) });
const namedOptions = ({ z }: OptionTools) => z.object({ name: z.string() });
const flapOptions = ({ z, decimalInteger }: OptionTools) =>
  z.object({ name: z.string(), for: decimalInteger('--for is whole seconds, e.g. 1') });

/** The global options, and how a lab command answers under --json; loaded when the command runs. */
async function labOutput(io: Io, cmd: Command) {
  const { parseGlobals, writeJson } = await import('./context.js');
  const globals = parseGlobals(cmd.optsWithGlobals(), io);
  return { json: globals.json, writeJson: (value: unknown) => writeJson(io, value) };
}

export function registerLab(program: Command, io: Io, done: (r: CommandResult) => void): void {
  const lab = program
    .command('lab')
    .description(
      'rehearsal lab on this machine: hosts in network namespaces, each with sshd, its own /etc and network manager (needs root)',
    );
  registerLabUp(lab, io, done);
  registerLabDown(lab, io, done);
  registerLabList(lab, io, done);
  registerLabReboot(lab, io, done);
  registerLabFlap(lab, io, done);
  registerLabRestart(lab, io, done);
  registerLabExec(lab, io, done);
  registerLabPort(lab, io, done);
  registerLabBreaks(lab, io, done);
  registerLabArpFlux(lab, io, done);
}

function registerLabUp(lab: Command, io: Io, done: (r: CommandResult) => void): void {
  lab
    .command('up')
    .description(
      "bring up lab hosts with the seeds' failure live (NIC 2 traffic fails); writes a lab inventory and known_hosts",
    )
    .option(
      '--hosts <numbers>',
      "host numbers and ranges, e.g. 16,34,40-47 (default: the inventory's hosts; others are added as node<H>)",
    )
    .option(...nameOption)
    .option('--mgmt-subnet <cidr>', 'management network of the lab hosts (host H = network + H; default 198.18.0.0/24)')
    .option(
      '--manager <hosts=manager>',
      'emulated network manager, e.g. 40=ifupdown or 40-47=networkmanager (repeatable; default: 16 networkmanager, others netplan)',
      collect,
      [],
    )
    .option(
      '--interfaces <hosts=names>',
      "NIC interface names, e.g. 40=eth0,eth1 (repeatable; default: the inventory's, else ib0,ib1)",
      collect,
      [],
    )
    .option(
      '--nics <count|hosts=count>',
      "fabric NICs per host, 1..16: --nics 8 for every host, --nics 16-17=8 for some (repeatable; default: the inventory's, else 2); more than 2 get a GPU node's PCI-slot names (ibp12s0, ibp75s0, …) and a ConnectX-7 each",
      collect,
      [],
    )
    .option(
      '--no-managers',
      'run no network manager in the hosts (the lab adds the fabric addresses itself; no reboot): for labs too big for a daemon per host',
    )
    .option(
      '--without-rdma <hosts>',
      'hosts that show no RDMA device (no /sys/class/infiniband entry, no rping), as a machine without driver or rdma-core',
    )
    .option(
      '--without-systemd <hosts>',
      'hosts that run no systemd (a container, a chroot-like host): no timers, PID 1 is not systemd, systemctl answers offline',
    )
    .option(
      '--without-python3 <hosts>',
      "hosts without python3 (not netplan hosts: netplan is written in it): verify's prober falls back to fping, else ping",
    )
    .option(
      '--with-fping <hosts>',
      "hosts that have fping (this machine's, from scripts/setup); the others lack it, as most machines do",
    )
    .option(
      '--fresh <hosts>',
      'hosts as a new machine arrives: fabric NICs present, no address and nothing configuring them (what deploy and onboard provision from)',
    )
    .option(
      '--suite <suite|hosts=suite>',
      "run hosts on a Debian release's whole root (bullseye, bookworm, trixie): --suite trixie for every host, --suite 16=bullseye for some (repeatable; default: this machine's own /usr); built with mmdebstrap on first use and cached in /var/cache/ibfleet-lab/roots",
      collect,
      [],
    )
    .option(
      '--link-layer <layer|hosts=layer>',
      "the RDMA ports' link layer: infiniband (the default) or ethernet (RoCE: no subnet manager, a GID table following the NICs' addresses); --link-layer 34=ethernet for some hosts (repeatable)",
      collect,
      [],
    )
    .action(async (raw: unknown, cmd: Command) => {
      const opts = await readOptions(upOptions, raw);
      const out = await labOutput(io, cmd);
      const [
        { labUp },
        { parseInterfaceAssignments, parseLabHosts, parseLinkLayers, parseManagerAssignments, parseNicCounts },
        { formatLabUpText, labUpJson },
        { selfCommand },
        { parseSuiteAssignments },
      ] = await Promise.all([
        import('../lab/up.js'),
        import('../lab/options.js'),
        import('../lab/format.js'),
        import('./self-command.js'),
        import('../lab/suites.js'),
      ]);
      const suites = parseSuiteAssignments(opts.suite);
      const fleet = await sourceFleet(cmd, io);
      const started = performance.now();
      const info = await labUp({
        name: opts.name,
        fleet,
        managers: parseManagerAssignments(opts.manager),
        interfaces: parseInterfaceAssignments(opts.interfaces),
        nics: parseNicCounts(opts.nics),
        suites,
        linkLayers: parseLinkLayers(opts.linkLayer),
        networkDaemons: opts.managers,
        ...(opts.hosts !== undefined ? { hosts: parseLabHosts(opts.hosts) } : {}),
        ...(opts.mgmtSubnet !== undefined ? { mgmtSubnet: opts.mgmtSubnet } : {}),
        ...(opts.withoutRdma !== undefined ? { noRdma: parseLabHosts(opts.withoutRdma, '--without-rdma') } : {}),
        ...(opts.withoutSystemd !== undefined
          ? { noSystemd: parseLabHosts(opts.withoutSystemd, '--without-systemd') }
          : {}),
        ...(opts.fresh !== undefined ? { fresh: parseLabHosts(opts.fresh, '--fresh') } : {}),
        ...(opts.withoutPython3 !== undefined
          ? { noPython3: parseLabHosts(opts.withoutPython3, '--without-python3') }
          : {}),
        ...(opts.withFping !== undefined ? { fping: parseLabHosts(opts.withFping, '--with-fping') } : {}),
        ...(out.json ? {} : { onStep: (text: string) => void io.stderr.write(`lab ${opts.name}: ${text}\n`) }),
      });
      const elapsed = performance.now() - started;
      if (out.json) out.writeJson(labUpJson(info, elapsed));
      else io.stdout.write(formatLabUpText(info, elapsed, selfCommand(io.env)));
      done({ verdict: 'ok' });
    });
}

function registerLabDown(lab: Command, io: Io, done: (r: CommandResult) => void): void {
  lab
    .command('down')
    .description(
      'remove every namespace, process, mount, link and file of a lab (safe to repeat, and after a failed up)',
    )
    .option('--name <name>', `lab name (default: ${DEFAULT_LAB_NAME})`)
    .option('--all', 'remove every lab on this machine')
    .action(async (raw: unknown, cmd: Command) => {
      const opts = await readOptions(downOptions, raw);
      const out = await labOutput(io, cmd);
      const [{ labDown, labDownAll }, { requireRoot }, { formatLabDownText }, { describeLabsUp, labSummaries }] =
        await Promise.all([
          import('../lab/down.js'),
          import('../lab/preflight.js'),
          import('../lab/format.js'),
          import('../lab/state.js'),
        ]);
      requireRoot('lab down');
      const results = opts.all ? await labDownAll() : [await labDown(opts.name)];
      if (out.json) out.writeJson({ command: 'lab down', ok: true, labs: results });
      else {
        io.stdout.write(formatLabDownText(results, opts.all ? undefined : opts.name));
        // Nothing was there: perhaps the user meant another lab.
        if (results.every((r) => !r.found) && !opts.all) io.stdout.write(`${describeLabsUp(await labSummaries())}\n`);
      }
      done({ verdict: 'ok' });
    });
}

function registerLabList(lab: Command, io: Io, done: (r: CommandResult) => void): void {
  lab
    .command('list')
    .description('the labs on this machine: name, hosts, management subnet, inventory')
    .action(async (_raw: unknown, cmd: Command) => {
      const out = await labOutput(io, cmd);
      const [{ requireRoot }, { labSummaries }, { formatLabListText, labListJson }] = await Promise.all([
        import('../lab/preflight.js'),
        import('../lab/state.js'),
        import('../lab/format.js'),
      ]);
      // A lab's state directory is root's alone (it holds the lab's private key).
      requireRoot('lab list');
      const labs = await labSummaries();
      if (out.json) out.writeJson(labListJson(labs));
      else io.stdout.write(formatLabListText(labs));
      done({ verdict: 'ok' });
    });
}

function registerLabReboot(lab: Command, io: Io, done: (r: CommandResult) => void): void {
  lab
    .command('reboot')
    .description(
      "boot hosts' networking again: their manager and D-Bus stopped, /run and the kernel state as at boot, the manager started; it brings the NICs up and runs the hooks itself",
    )
    .argument('<hosts>', 'hosts as for --hosts: 34, 16,34, 16-40, memserver34, @cpu, pair:alice or all')
    .option(...nameOption)
    .action(async (hosts: string, raw: unknown, cmd: Command) => {
      const { name } = await readOptions(namedOptions, raw);
      const out = await labOutput(io, cmd);
      const [{ labReboot }, { requireRoot }, { formatRebootText, rebootJson }] = await Promise.all([
        import('../lab/reboot.js'),
        import('../lab/preflight.js'),
        import('../lab/format.js'),
      ]);
      requireRoot('lab reboot');
      const results = await labReboot(name, await selectLabHosts(name, hosts));
      if (out.json) out.writeJson(rebootJson(results));
      else io.stdout.write(formatRebootText(results));
      done({ verdict: results.every((r) => r.ok) ? 'ok' : 'failed' });
    });
}

function registerLabFlap(lab: Command, io: Io, done: (r: CommandResult) => void): void {
  lab
    .command('flap')
    .description(
      "take a fabric NIC's carrier down and up again (its switch port), as a cable or port flap does; the host's manager reacts as on a real link",
    )
    .argument('<host>', 'host number, e.g. 16')
    .argument('<nic>', "the NIC's interface name, e.g. ibs5f0")
    .option(...nameOption)
    .option('--for <seconds>', 'how long the carrier stays down', '1')
    .action(async (host: string, nic: string, raw: unknown, cmd: Command) => {
      const opts = await readOptions(flapOptions, raw);
      const out = await labOutput(io, cmd);
      const [{ labFlap }, { parseLabHosts }, { requireRoot }] = await Promise.all([
        import('../lab/flap.js'),
        import('../lab/options.js'),
        import('../lab/preflight.js'),
      ]);
      const [id] = parseLabHosts(host, 'lab flap');
      requireRoot('lab flap');
      const result = await labFlap(opts.name, id!, nic, opts.for * 1000);
      if (out.json) out.writeJson({ command: 'lab flap', ok: true, ...result });
      else
        io.stdout.write(
          `host ${result.id}: ${result.iface} carrier down for ${opts.for} s, then up${result.settled ? '' : '; hooks still running after 20 s'}\n`,
        );
      done({ verdict: 'ok' });
    });
}

function registerLabRestart(lab: Command, io: Io, done: (r: CommandResult) => void): void {
  lab
    .command('restart')
    .description(
      "restart a host's network manager as systemctl restart would (NetworkManager, systemd-networkd; ifupdown: ifdown + ifup of each NIC)",
    )
    .argument('<host>', 'host number, e.g. 16')
    .option(...nameOption)
    .action(async (host: string, raw: unknown, cmd: Command) => {
      const { name } = await readOptions(namedOptions, raw);
      const out = await labOutput(io, cmd);
      const [{ labRestartManager }, { parseLabHosts }, { requireRoot }] = await Promise.all([
        import('../lab/restart.js'),
        import('../lab/options.js'),
        import('../lab/preflight.js'),
      ]);
      const [id] = parseLabHosts(host, 'lab restart');
      requireRoot('lab restart');
      const r = await labRestartManager(name, id!);
      if (out.json)
        out.writeJson({
          command: 'lab restart',
          ok: r.ok,
          host: r.id,
          manager: r.manager,
          exitCode: r.result.code,
          output: r.result.stdout + r.result.stderr,
        });
      else
        io.stdout.write(
          `host ${r.id}: ${r.manager} restarted${r.ok ? '' : ` — FAILED (exit ${r.result.code}${r.settled ? '' : ', hooks still running after 20 s'})\n${r.result.stdout}${r.result.stderr}`}\n`,
        );
      done({ verdict: r.ok ? 'ok' : 'failed' });
    });
}

function registerLabExec(lab: Command, io: Io, done: (r: CommandResult) => void): void {
  lab
    .command('exec')
    .description(
      'run a command inside a lab host (its network, /etc, /run and D-Bus), e.g. lab exec 16 -- nmcli device reapply ibs5f0',
    )
    .argument('<host>', 'host number, e.g. 16')
    .argument('<command...>', 'the command and its arguments (put -- before them)')
    .option(...nameOption)
    .action(async (host: string, argv: string[], raw: unknown, cmd: Command) => {
      const { name } = await readOptions(namedOptions, raw);
      const out = await labOutput(io, cmd);
      const [{ labExec }, { parseLabHosts }, { requireRoot }, { requireLab }] = await Promise.all([
        import('../lab/exec.js'),
        import('../lab/options.js'),
        import('../lab/preflight.js'),
        import('../lab/state.js'),
      ]);
      const [id] = parseLabHosts(host, 'lab exec');
      requireRoot('lab exec');
      await requireLab(name);
      const result = await labExec(name, id!, argv);
      if (out.json)
        out.writeJson({
          command: 'lab exec',
          ok: result.code === 0,
          host: id,
          argv,
          exitCode: result.code,
          stdout: result.stdout,
          stderr: result.stderr,
        });
      else {
        io.stdout.write(result.stdout);
        io.stderr.write(result.stderr);
        if (result.code !== 0) io.stderr.write(`ibfleet: lab exec: ${argv[0]} exited with ${result.code}\n`);
      }
      done({ verdict: result.code === 0 ? 'ok' : 'failed' });
    });
}

/** A `--hosts` selection against the lab's own inventory: numbers, ranges, names, roles, pairs, all. */
async function selectLabHosts(name: string, expression: string): Promise<number[]> {
  const [
    { requireLab },
    { labPaths },
    { loadInventory },
    { parseHostSelection },
    { readFile },
    { HOST_OVERRIDES },
    { dirname },
  ] = await Promise.all([
    import('../lab/state.js'),
    import('../lab/names.js'),
    import('../inventory/load.js'),
    import('../inventory/select.js'),
    import('node:fs/promises'),
    import('../steps/registry.js'),
    import('node:path'),
  ]);
  await requireLab(name);
  const file = labPaths(name).inventory;
  return parseHostSelection(
    expression,
    loadInventory(await readFile(file, 'utf8'), file, dirname(file), HOST_OVERRIDES),
  );
}

/**
 * The inventory the lab takes names, roles, interfaces and pairs from: -i / $IBFLEET_INVENTORY when
 * given, else inventory/fleet.yaml here, else the seeds' example shipped with ibfleet — so `lab up`
 * works from any directory.
 */
async function sourceFleet(cmd: Command, io: Io): Promise<Fleet> {
  const { parseGlobals, readFleet } = await import('./context.js');
  const globals = parseGlobals(cmd.optsWithGlobals(), io);
  const explicit =
    (cmd.optsWithGlobals() as { inventory?: string }).inventory !== undefined || io.env.IBFLEET_INVENTORY !== undefined;
  if (explicit || existsSync(resolve(io.cwd, globals.inventory))) return readFleet(globals, io);
  const { defaultFleet } = await import('../lab/up.js');
  return defaultFleet();
}
