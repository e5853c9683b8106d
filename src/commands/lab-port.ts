/** `ibfleet lab port [--name L] H NIC [STATE] [--mode M] [--mtu N] [--rate R]`: change a lab host's RDMA port at run time. */
import type { Command } from 'commander';
import { UsageError } from '../errors.js';
import { IPOIB_MODES, PORT_STATES, type IpoibMode, type PortStateName } from '../lab/rdma-emulation.js';
import type { CommandResult, Io } from './context.js';

const oneOf = <T extends string>(list: readonly T[], value: string | undefined): value is T => list.includes(value as T);

export function registerLabPort(lab: Command, io: Io, done: (r: CommandResult) => void): void {
  lab
    .command('port')
    .description('change a lab host\'s RDMA port as the fabric would: its state (active, down, init, polling: the interface loses carrier unless ACTIVE; no-sm: ACTIVE with no subnet manager), rate, IPoIB mode and MTU')
    .argument('<host>', 'host number, e.g. 34')
    .argument('<nic>', 'the NIC\'s interface name, e.g. ib1')
    .argument('[state]', `port state: ${PORT_STATES.join(', ')}`)
    .option('--name <name>', 'lab name', 'default')
    .option('--mode <mode>', 'IPoIB mode: datagram (MTU 2044) or connected (MTU 65520)')
    .option('--mtu <bytes>', 'interface MTU (default: the mode\'s)')
    .option('--rate <text>', 'port rate as sysfs prints it, e.g. "56 Gb/sec (4X FDR)" for a degraded link')
    .action(async (host: string, nic: string, state: string | undefined, raw: { name: string; mode?: string; mtu?: string; rate?: string }, cmd: Command) => {
      const [{ parseGlobals, writeJson }, { labPort }, { parseLabHosts }, { requireRoot }] = await Promise.all([
        import('./context.js'),
        import('../lab/rdma.js'),
        import('../lab/options.js'),
        import('../lab/preflight.js'),
      ]);
      const globals = parseGlobals(cmd.optsWithGlobals(), io);
      if (state !== undefined && !oneOf(PORT_STATES, state)) throw new UsageError(`lab port: unknown state ${JSON.stringify(state)} (allowed: ${PORT_STATES.join(', ')})`);
      if (raw.mode !== undefined && !oneOf(IPOIB_MODES, raw.mode)) throw new UsageError(`lab port: --mode is datagram or connected, not ${JSON.stringify(raw.mode)}`);
      if (raw.mtu !== undefined && !/^[0-9]{2,5}$/.test(raw.mtu)) throw new UsageError('lab port: --mtu is a whole number of bytes, e.g. 2044');
      const mtu = raw.mtu === undefined ? undefined : Number(raw.mtu);
      if (mtu !== undefined && (mtu < 68 || mtu > 65535)) throw new UsageError('lab port: --mtu is 68..65535');
      if (raw.rate !== undefined && !/^\d+(\.\d+)? Gb\/sec( \(.*\))?$/.test(raw.rate)) throw new UsageError('lab port: --rate is written as sysfs does, e.g. "56 Gb/sec (4X FDR)"');
      if (state === undefined && raw.mode === undefined && mtu === undefined && raw.rate === undefined) throw new UsageError('lab port: say what to change: a state, --mode, --mtu or --rate');
      const [id] = parseLabHosts(host, 'lab port');
      requireRoot('lab port');
      const result = await labPort(raw.name, id!, nic, {
        ...(oneOf<PortStateName>(PORT_STATES, state) ? { state } : {}),
        ...(oneOf<IpoibMode>(IPOIB_MODES, raw.mode) ? { mode: raw.mode } : {}),
        ...(mtu !== undefined ? { mtu } : {}),
        ...(raw.rate ? { rate: raw.rate } : {}),
      });
      if (globals.json) writeJson(io, { command: 'lab port', ok: true, ...result });
      else io.stdout.write(`host ${result.id}: ${result.iface} → ${result.port}: ${result.changed.join('; ')}\n`);
      done({ verdict: 'ok' });
    });
}
