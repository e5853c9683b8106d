/** `ibfleet lab up | down | list | reboot | flap | restart | exec`: the local rehearsal lab (src/lab/); `lab up` is src/commands/lab-up.ts. */
import type { Command } from 'commander';
import { DEFAULT_LAB_NAME } from '../lab/names.js';
import type { CommandResult, Io } from './context.js';
import { registerLabArpFlux } from './lab-arp.js';
import { labOutput, nameOption } from './lab-command.js';
import { registerLabBreaks, registerLabPort } from './lab-port.js';
import { registerLabUp } from './lab-up.js';
import { readOptions, type OptionTools } from './options.js';

const downOptions = ({ z }: OptionTools) =>
  z.object({ name: z.string().default(DEFAULT_LAB_NAME), all: z.boolean().default(false) });
const namedOptions = ({ z }: OptionTools) => z.object({ name: z.string() });
const flapOptions = ({ z, decimalInteger }: OptionTools) =>
  z.object({ name: z.string(), for: decimalInteger('--for is whole seconds, e.g. 1') });

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
          `host ${result.id}: ${result.iface} carrier down for ${opts.for} s, then up${result.settled ? '' : '; the dispatcher had not run its hooks after 20 s'}\n`,
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
          `host ${r.id}: ${r.manager} restarted${r.ok ? '' : ` — FAILED (exit ${r.result.code}${r.settled ? '' : ', the dispatcher had not run its hooks after 20 s'})\n${r.result.stdout}${r.result.stderr}`}\n`,
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
