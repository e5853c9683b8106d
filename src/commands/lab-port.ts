/** `ibfleet lab port [--name L] H NIC [STATE] [--mode M] [--mtu N] [--rate R]`: change a lab host's RDMA port at run time. */
import type { Command } from 'commander';
import { DEFAULT_LAB_NAME } from '../lab/names.js';
import { IPOIB_MODES, PORT_STATES } from '../lab/rdma-emulation.js';
import type { CommandResult, Io } from './context.js';
import { readOptions, type OptionTools } from './options.js';

const portOptions = ({ z, decimalInteger }: OptionTools) => {
  const mtuRange = 'lab port: --mtu is 68..65535';
  return z
    .object({
      name: z.string(),
      state: z
        .enum(PORT_STATES, {
          error: (issue) =>
            `lab port: unknown state ${JSON.stringify(issue.input)} (allowed: ${PORT_STATES.join(', ')})`,
        })
        .optional(),
      mode: z
        .enum(IPOIB_MODES, {
          error: (issue) => `lab port: --mode is datagram or connected, not ${JSON.stringify(issue.input)}`,
        })
        .optional(),
      mtu: decimalInteger('lab port: --mtu is a whole number of bytes, e.g. 2044')
        .pipe(z.number().min(68, { error: mtuRange }).max(65535, { error: mtuRange }))
        .optional(),
      rate: z
        .string()
        .regex(/^\d+(\.\d+)? Gb\/sec( \(.*\))?$/, {
          error: 'lab port: --rate is written as sysfs does, e.g. "56 Gb/sec (4X FDR)"',
        })
        .optional(),
    })
    .refine((o) => o.state !== undefined || o.mode !== undefined || o.mtu !== undefined || o.rate !== undefined, {
      error: 'lab port: say what to change: a state, --mode, --mtu or --rate',
    });
};

export function registerLabPort(lab: Command, io: Io, done: (r: CommandResult) => void): void {
  lab
    .command('port')
    .description(
      "change a lab host's RDMA port as the fabric would: its state (active, down, init, polling: the interface loses carrier unless ACTIVE; no-sm: ACTIVE with no subnet manager), rate, IPoIB mode and MTU",
    )
    .argument('<host>', 'host number, e.g. 34')
    .argument('<nic>', "the NIC's interface name, e.g. ib1")
    .argument('[state]', `port state: ${PORT_STATES.join(', ')}`)
    .option('--name <name>', 'lab name', DEFAULT_LAB_NAME)
    .option('--mode <mode>', 'IPoIB mode: datagram (MTU 2044) or connected (MTU 65520)')
    .option('--mtu <bytes>', "interface MTU (default: the mode's)")
    .option('--rate <text>', 'port rate as sysfs prints it, e.g. "56 Gb/sec (4X FDR)" for a degraded link')
    .action(
      async (host: string, nic: string, state: string | undefined, raw: Record<string, unknown>, cmd: Command) => {
        const { name, ...change } = await readOptions(portOptions, { ...raw, state });
        const [{ parseGlobals, writeJson }, { labPort }, { parseLabHosts }, { requireRoot }] = await Promise.all([
          import('./context.js'),
          import('../lab/rdma.js'),
          import('../lab/options.js'),
          import('../lab/preflight.js'),
        ]);
        const globals = parseGlobals(cmd.optsWithGlobals(), io);
        const [id] = parseLabHosts(host, 'lab port');
        requireRoot('lab port');
        const result = await labPort(name, id!, nic, change);
        if (globals.json) writeJson(io, { command: 'lab port', ok: true, ...result });
        else io.stdout.write(`host ${result.id}: ${result.iface} → ${result.port}: ${result.changed.join('; ')}\n`);
        done({ verdict: 'ok' });
      },
    );
}
