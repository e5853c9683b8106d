/** `ibfleet onboard --cpu H --mem H --owner NAME [--cpu-address A --mem-address A] [--user U]`: a new student's machine pair in one command. */
import type { Command } from 'commander';
import { MANAGERS } from '../inventory/model.js';
import type { CommandResult, Io } from './context.js';
import type { RunLog } from '../ui/run-log-file.js';
import { readOptions, type OptionTools } from './options.js';
import { addRunOptions } from './run-options.js';

/** The options as a schema; the inventory's name rules load with it, when the command runs. */
async function onboardOptions({ z }: OptionTools) {
  const [{ ADDRESS, ADDRESS_RULE, HOST_NAME, OWNER_NAME, USER_NAME }, { readsAsSelection }] = await Promise.all([
    import('../inventory/schema.js'),
    import('../inventory/select.js'),
  ]);
  const hostNumber = (flag: string) => {
    const error = `${flag} is a host number 1..254 (the third octet of the machine's 172.16 addresses)`;
    return z
      .string({ error })
      .regex(/^[0-9]+$/, { error })
      .transform(Number)
      .pipe(z.number().min(1, { error }).max(254, { error }));
  };
  const address = (flag: string) =>
    z
      .string()
      .regex(ADDRESS, { error: `${flag} is the management (SSH) address: ${ADDRESS_RULE}` })
      .optional();
  // A name --hosts reads as something else (`16`, `16-20`, `all`) could never select the host by name.
  const hostName = (flag: string) =>
    z
      .string()
      .regex(HOST_NAME, { error: `${flag} is a host name: letters, digits, dots and dashes` })
      .refine((name) => !readsAsSelection(name), {
        error: `${flag} is a host name --hosts can select: not a number, a range (16-20) or all`,
      })
      .optional();
  const manager = (flag: string) => z.enum(MANAGERS, { error: `${flag} is one of ${MANAGERS.join(', ')}` }).optional();
  return z.object({
    cpu: hostNumber('--cpu'),
    mem: hostNumber('--mem'),
    owner: z.string().regex(OWNER_NAME, { error: '--owner is a user-style name (a-z, 0-9, _ . -), e.g. alice' }),
    cpuAddress: address('--cpu-address'),
    memAddress: address('--mem-address'),
    user: z.string().regex(USER_NAME, { error: '--user is a Unix user name' }).optional(),
    cpuManager: manager('--cpu-manager'),
    memManager: manager('--mem-manager'),
    cpuName: hostName('--cpu-name'),
    memName: hostName('--mem-name'),
    askSudoPass: z.boolean().default(false),
  });
}

export function registerOnboard(program: Command, io: Io, done: (r: CommandResult) => void): void {
  addRunOptions(
    program
      .command('onboard')
      .description(
        "a new student's machine pair in one command: discover both, deploy, add them to the inventory, verify, print the cheat sheet",
      )
      .requiredOption('--cpu <host>', 'host number of the CPU server (third octet of its 172.16 addresses)')
      .requiredOption('--mem <host>', 'host number of the memory server')
      .requiredOption('--owner <name>', "the student's name: the pair is recorded as theirs")
      .option('--cpu-address <addr>', "CPU server's SSH (management) address; default: the inventory's")
      .option('--mem-address <addr>', "memory server's SSH (management) address; default: the inventory's")
      .option(
        '--user <user>',
        "SSH user on both machines (default: the inventory's, else root); non-root users work through sudo",
      )
      .option(
        '--cpu-manager <manager>',
        `network manager of the CPU server when it cannot be detected (${MANAGERS.join(', ')})`,
      )
      .option(
        '--mem-manager <manager>',
        `network manager of the memory server when it cannot be detected (${MANAGERS.join(', ')})`,
      )
      .option(
        '--cpu-name <name>',
        "the CPU server's name in the inventory (default: the inventory's, else the machine's own hostname)",
      )
      .option(
        '--mem-name <name>',
        "the memory server's name in the inventory (default: the inventory's, else the machine's own hostname)",
      ),
  ).action(async (raw: unknown, cmd: Command) => {
    const [
      { parseGlobals, readPlaybook, writeJson },
      { chooseDisplay, buildTransport, checkLogOption, startRunLog, withRunLog },
      { runOnboard },
      { inventoryFile },
      { formatCheatSheetText },
      { onboardDocument },
      { discoveryWaitLine, formatDiscoveryLines, inventoryChangeText, onboardStartLine },
    ] = await Promise.all([
      import('./context.js'),
      import('./fleet-run.js'),
      import('../runner/onboard.js'),
      import('../runner/files.js'),
      import('../ui/text/cheat-sheet.js'),
      import('../ui/onboard.js'),
      import('../ui/text/onboard.js'),
    ]);
    const opts = await readOptions(onboardOptions, raw);
    const globals = parseGlobals(cmd.optsWithGlobals(), io);
    checkLogOption(globals, io);
    const playbook = await readPlaybook(undefined, io);
    const inventory = inventoryFile(globals.inventory, io.cwd);
    const say = (line: string) => void (globals.json ? undefined : io.stdout.write(`${line}\n`));
    const interrupt = io.interruptSignal();
    const secrets: string[] = [];
    // The log starts once the request passed every check that needs no machine: with the first contact.
    let log: RunLog | undefined;
    // Hosts whose name is the machine's own, unknown until discovery: shown by number until then.
    let unnamed: ReadonlySet<number> = new Set();
    const report = await runOnboard({
      request: opts,
      inventory,
      playbook,
      transport: (fleet) => buildTransport(io, globals, fleet, opts.askSudoPass, interrupt, secrets),
      concurrency: globals.concurrency,
      timeoutMs: globals.timeout * 1000,
      interrupt,
      events: {
        onStart: (hosts, names) => {
          unnamed = names;
          log = startRunLog(io, globals, 'onboard', () => secrets);
          say(onboardStartLine(opts.owner, hosts, globals.inventory, unnamed));
        },
        discovery: {
          onHostStart: (...a) => log?.events.onHostStart?.(...a),
          onStage: (host, stage, at) => {
            if (stage === 'wait') say(discoveryWaitLine(host, unnamed));
            log?.events.onStage?.(host, stage, at);
          },
          onHostDone: (...a) => log?.events.onHostDone?.(...a),
        },
        onDiscovered: (d, host) => formatDiscoveryLines(d, host).forEach(say),
        phase: async (name) => {
          const header = {
            command: name,
            inventory: globals.inventory,
            ...(name === 'deploy' ? { playbook: playbook.name } : {}),
          };
          const display = globals.json
            ? { events: {}, finish: async () => undefined }
            : await chooseDisplay(io, globals, header);
          return withRunLog(io, globals, display, log, { close: false });
        },
        onInventory: (change) => {
          const text = inventoryChangeText(change);
          if (text !== undefined) say(text);
        },
      },
    });

    log?.close();
    if (globals.json) writeJson(io, { ...onboardDocument(report, globals.inventory), log: log?.path ?? null });
    else if (report.cheatSheet) say(`\n${formatCheatSheetText(report.cheatSheet)}`);
    if (log) say(`run log: ${log.path}`);
    if (report.outcome === 'ok') say(`onboard ok: ${report.summary}`);
    else io.stderr.write(`ibfleet onboard: ${report.summary}\n`);
    done({
      verdict:
        report.outcome === 'ok' || report.outcome === 'refused' || report.outcome === 'interrupted'
          ? report.outcome
          : 'failed',
    });
  });
}
