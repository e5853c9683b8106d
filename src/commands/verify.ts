/** `ibfleet verify --hosts S | --pair OWNER [--rping] [--full | --rail | --ring]`: the NIC-to-NIC connectivity matrix. */
import type { Command } from 'commander';
import { UsageError } from '../errors.js';
import type { RpingMode } from '../plan/matrix.js';
import type { CommandResult, Io } from './context.js';
import { addRunOptions } from './run-options.js';

interface VerifyFlags {
  hosts?: string;
  pair?: string;
  rping?: boolean;
  ring?: boolean;
  rail?: boolean;
  full?: boolean;
  rpingPort?: string;
}

export function registerVerify(program: Command, io: Io, done: (r: CommandResult) => void): void {
  const verify = addRunOptions(
    program
      .command('verify')
      .description('prove connectivity: ping (and rping where there is RDMA) from every NIC to every NIC of the other hosts')
      .option('--hosts <set>', 'hosts to check (default: all)')
      .option('--pair <owner>', "check one student's machine pair (same as --hosts pair:OWNER)")
      .option('--rping', 'require the RDMA check: rping cells for every pair (skipped with the reason where a host has no RDMA device)')
      .option('--no-rping', 'ping only, even where the hosts have RDMA devices')
      .option('--full', 'every NIC to every NIC of every other host (the default while that is at most 1024 cells a host)')
      .option('--rail', 'NIC n to NIC n of every other host: what rail-aligned collective traffic uses (the default when the full matrix is too large and this is not)')
      .option('--ring', 'each host to the next one only (all NIC pairs); the default when the full matrix and the rails are too large')
      .option('--rping-port <port>', 'first rping port; each server on a host gets the next one (default: 7174)'),
  );
  // --rping and --no-rping set one value, the last one winning; both given is a contradiction, not a choice.
  const said = new Set<string>();
  verify.on('option:rping', () => said.add('--rping'));
  verify.on('option:no-rping', () => said.add('--no-rping'));
  verify.action(async (opts: VerifyFlags, cmd: Command) => {
    if (said.size > 1) throw new UsageError('--rping and --no-rping contradict each other: give one (--rping: every pair must pass rping; --no-rping: ping only)');
    if (opts.hosts !== undefined && opts.pair !== undefined) throw new UsageError('give --hosts or --pair, not both');
    const modes = (['full', 'rail', 'ring'] as const).filter((m) => opts[m]);
    if (modes.length > 1) throw new UsageError(`${modes.map((m) => `--${m}`).join(' and ')} contradict each other: give one (--full: every NIC pair; --rail: NIC n to NIC n; --ring: each host to the next)`);
    const basePort = Number(opts.rpingPort ?? '7174');
    if (!Number.isInteger(basePort) || basePort < 1024 || basePort > 65000) throw new UsageError('--rping-port must be a whole number 1024..65000');
    // commander turns --rping / --no-rping into one boolean; neither given means "where possible".
    const rping: RpingMode = cmd.getOptionValueSource('rping') === 'cli' ? (opts.rping ? 'on' : 'off') : 'auto';
    const [{ fanoutOptions, prepareRun, runDisplayed }, { runVerify }, { chooseMatrixMode }] = await Promise.all([import('./fleet-run.js'), import('../runner/verify.js'), import('../plan/matrix.js')]);
    const run = await prepareRun(io, cmd, opts.pair !== undefined ? `pair:${opts.pair}` : opts.hosts, false);
    if (run.hosts.length < 2) throw new UsageError(`verify needs at least two hosts; the selection has ${run.hosts.length}`);
    const matrix = chooseMatrixMode(run.hosts, modes[0]);
    const verdict = await runDisplayed(io, run, 'verify', {}, (events) =>
      runVerify({ ...fanoutOptions(run, events), fleet: run.fleet, hosts: run.hosts, mode: matrix.mode, ...(matrix.reason ? { modeReason: matrix.reason } : {}), rping, transport: run.transport, basePort }),
    );
    done({ verdict });
  });
}
