/**
 * `ibfleet onboard --cpu H --mem H --owner NAME [--cpu-address A --mem-address A] [--user U]`: a new
 * student's machine pair in one command. This file is the command's face — its options and their
 * schema; the run is src/commands/onboard-run.ts, loaded only when the command runs.
 */
import type { Command } from 'commander';
import { MANAGERS } from '../inventory/model.js';
import type { CommandResult, Io } from './context.js';
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
    const { runOnboardCommand } = await import('./onboard-run.js');
    done({ verdict: await runOnboardCommand(io, cmd, await readOptions(onboardOptions, raw)) });
  });
}
