/** `ibfleet verify --hosts S | --pair OWNER [--rping] [--ring]`: the NIC-to-NIC connectivity matrix. */
import type { Command } from 'commander';
import { UsageError } from '../errors.js';
import type { RpingMode } from '../plan/matrix.js';
import type { CommandResult, Io } from './context.js';
import { readOptions, type OptionTools } from './options.js';
import { addRunOptions } from './run-options.js';

const RPING_FLAGS = ['--rping', '--no-rping'] as const;

const verifyOptions = ({ z, decimalInteger }: OptionTools) => {
  const port = '--rping-port must be a whole number 1024..65000';
  return z
    .object({
      hosts: z.string().optional(),
      pair: z.string().optional(),
      // The rping flags given, in order (commander folds them into one boolean, the last winning):
      // both given is a contradiction, not a choice; neither means "where possible".
      rping: z
        .array(z.enum(RPING_FLAGS))
        .max(1, {
          error:
            '--rping and --no-rping contradict each other: give one (--rping: every pair must pass rping; --no-rping: ping only)',
        })
        .transform((flags): RpingMode => (flags[0] === '--rping' ? 'on' : flags[0] === '--no-rping' ? 'off' : 'auto')),
      full: z.boolean().default(false),
      rail: z.boolean().default(false),
      ring: z.boolean().default(false),
      rpingPort: decimalInteger(port)
        .pipe(z.number().min(1024, { error: port }).max(65000, { error: port }))
        .optional(),
      askSudoPass: z.boolean().default(false),
    })
    .refine((o) => o.hosts === undefined || o.pair === undefined, { error: 'give --hosts or --pair, not both' })
    .superRefine((o, ctx) => {
      const modes = (['full', 'rail', 'ring'] as const).filter((m) => o[m]);
      if (modes.length > 1)
        ctx.addIssue({
          code: 'custom',
          message: `${modes.map((m) => `--${m}`).join(' and ')} contradict each other: give one (--full: every NIC pair; --rail: NIC n to NIC n; --ring: each host to the next)`,
        });
    });
};

export function registerVerify(program: Command, io: Io, done: (r: CommandResult) => void): void {
  const verify = addRunOptions(
    program
      .command('verify')
      .description(
        'prove connectivity: ping (and rping where there is RDMA) from every NIC to every NIC of the other hosts',
      )
      .option('--hosts <set>', 'hosts to check (default: all)')
      .option('--pair <owner>', "check one student's machine pair (same as --hosts pair:OWNER)")
      .option(
        '--rping',
        'require the RDMA check: rping cells for every pair (skipped with the reason where a host has no RDMA device)',
      )
      .option('--no-rping', 'ping only, even where the hosts have RDMA devices')
      .option(
        '--full',
        'every NIC to every NIC of every other host (the default while that is at most 8192 cells a host)',
      )
      .option(
        '--rail',
        'NIC n to NIC n of every other host: what rail-aligned collective traffic uses (the default when the full matrix is too large and this is not)',
      )
      .option(
        '--ring',
        'each host to the next one only (all NIC pairs); the default when the full matrix and the rails are too large',
      )
      .option('--rping-port <port>', 'first rping port; each server on a host gets the next one (default: 7174)'),
  );
  const rpingFlags: (typeof RPING_FLAGS)[number][] = [];
  verify.on('option:rping', () => rpingFlags.push('--rping'));
  verify.on('option:no-rping', () => rpingFlags.push('--no-rping'));
  verify.action(async (raw: Record<string, unknown>, cmd: Command) => {
    const opts = await readOptions(verifyOptions, { ...raw, rping: rpingFlags });
    const [{ fanoutOptions, prepareRun, runDisplayed }, { runVerify }, { chooseMatrixMode }] = await Promise.all([
      import('./fleet-run.js'),
      import('../runner/verify.js'),
      import('../plan/matrix.js'),
    ]);
    const run = await prepareRun(io, cmd, {
      selection: opts.pair !== undefined ? `pair:${opts.pair}` : opts.hosts,
      askSudoPass: opts.askSudoPass,
    });
    if (run.hosts.length < 2)
      throw new UsageError(`verify needs at least two hosts; the selection has ${run.hosts.length}`);
    const matrix = chooseMatrixMode(
      run.hosts,
      opts.full ? 'full' : opts.rail ? 'rail' : opts.ring ? 'ring' : undefined,
    );
    const verdict = await runDisplayed(io, run, { command: 'verify', inventory: run.globals.inventory }, (events) =>
      runVerify({
        ...fanoutOptions(run, events),
        fleet: run.fleet,
        hosts: run.hosts,
        mode: matrix.mode,
        ...(matrix.reason ? { modeReason: matrix.reason } : {}),
        rping: opts.rping,
        transport: run.transport,
        ...(opts.rpingPort !== undefined ? { basePort: opts.rpingPort } : {}),
      }),
    );
    done({ verdict });
  });
}
