/**
 * `ibfleet lab port [--name L] H NIC [STATE] [--mode M] [--mtu N] [--rate R]`: change a lab host's
 * RDMA port at run time; `lab gid`, `lab sm`, `lab pkey`: break its GID table, subnet manager or
 * P_Key table as a fabric does.
 */
import type { Command } from 'commander';
import { DEFAULT_LAB_NAME } from '../lab/names.js';
import { GID_ORDERS, IPOIB_MODES, PORT_STATES } from '../lab/rdma-emulation.js';
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
      gids: z
        .enum(GID_ORDERS, {
          error: (issue) => `lab port: --gids is one of ${GID_ORDERS.join(', ')}, not ${JSON.stringify(issue.input)}`,
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
    .option(
      '--gids <order>',
      `RoCE, with active: the order the port's GIDs register in as it comes back — ${GID_ORDERS.join(', ')} (default kernel; reorder: as a flap racing the manager can leave them)`,
    )
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

const gidOptions = ({ z }: OptionTools) =>
  z.object({
    name: z.string(),
    order: z.enum(GID_ORDERS, {
      error: (issue) => `lab gid: unknown order ${JSON.stringify(issue.input)} (allowed: ${GID_ORDERS.join(', ')})`,
    }),
  });

const smOptions = ({ z, decimalInteger }: OptionTools) => {
  const range = 'lab sm: the SM LID is 1..49151 (a unicast LID), e.g. 2';
  return z.object({
    name: z.string(),
    lid: decimalInteger(range).pipe(z.number().min(1, { error: range }).max(0xbfff, { error: range })),
    subnetPrefix: z
      .string()
      .regex(/^[0-9a-f]{4}(:[0-9a-f]{4}){3}$/, {
        error: 'lab sm: --subnet-prefix is four groups of four hex digits as sysfs prints it, e.g. fec0:0000:0000:0001',
      })
      .optional(),
  });
};

const pkeyOptions = ({ z }: OptionTools) =>
  z.object({
    name: z.string(),
    pkeys: z.array(
      z
        .string()
        .regex(/^0x[0-9a-fA-F]{1,4}$/, { error: 'lab pkey: a P_Key is written as sysfs prints it, e.g. 0x8002' })
        .transform((p) => `0x${p.slice(2).toLowerCase().padStart(4, '0')}`),
    ),
  });

/** How a lab break command answers: one line, or the JSON document. */
async function answerBreak(
  io: Io,
  cmd: Command,
  command: string,
  result: { id: number; iface: string; port: string; changed: string },
): Promise<void> {
  const { parseGlobals, writeJson } = await import('./context.js');
  if (parseGlobals(cmd.optsWithGlobals(), io).json) writeJson(io, { command, ok: true, ...result });
  else io.stdout.write(`host ${result.id}: ${result.iface} → ${result.port}: ${result.changed}\n`);
}

export function registerLabBreaks(lab: Command, io: Io, done: (r: CommandResult) => void): void {
  const host = async (text: string, command: string) => {
    const [{ parseLabHosts }, { requireRoot }] = await Promise.all([
      import('../lab/options.js'),
      import('../lab/preflight.js'),
    ]);
    const [id] = parseLabHosts(text, command);
    requireRoot(command);
    return id!;
  };
  lab
    .command('gid')
    .description(
      "rewrite a RoCE lab host's GID table from its NIC's addresses: kernel (as registered), reorder (an IPv6 GID took the IPv4 entries' slots, as after a port flap: the v2 GID moves from 3 to 5), linklocal-only (fe80:: entries alone)",
    )
    .argument('<host>', 'host number, e.g. 34')
    .argument('<nic>', "the NIC's interface name, e.g. ib1")
    .argument('<order>', GID_ORDERS.join(' | '))
    .option('--name <name>', 'lab name', DEFAULT_LAB_NAME)
    .action(async (h: string, nic: string, order: string, raw: Record<string, unknown>, cmd: Command) => {
      const { name, order: o } = await readOptions(gidOptions, { ...raw, order });
      const id = await host(h, 'lab gid');
      const { labGid } = await import('../lab/rdma.js');
      await answerBreak(io, cmd, 'lab gid', await labGid(name, id, nic, o));
      done({ verdict: 'ok' });
    });
  lab
    .command('sm')
    .description(
      "put an InfiniBand lab host's port under another subnet manager: its SM LID (and subnet prefix); lab port H NIC active gives it the fabric's back",
    )
    .argument('<host>', 'host number, e.g. 34')
    .argument('<nic>', "the NIC's interface name, e.g. ib1")
    .argument('<lid>', 'the SM LID the port sees, e.g. 2 (the fabric has 1)')
    .option('--name <name>', 'lab name', DEFAULT_LAB_NAME)
    .option(
      '--subnet-prefix <prefix>',
      "GID 0's upper half, e.g. fec0:0000:0000:0001 (the fabric has fe80:0000:0000:0000)",
    )
    .action(async (h: string, nic: string, lid: string, raw: Record<string, unknown>, cmd: Command) => {
      const opts = await readOptions(smOptions, { ...raw, lid });
      const id = await host(h, 'lab sm');
      const { labSm } = await import('../lab/rdma.js');
      await answerBreak(io, cmd, 'lab sm', await labSm(opts.name, id, nic, opts.lid, opts.subnetPrefix));
      done({ verdict: 'ok' });
    });
  lab
    .command('pkey')
    .description(
      "set an InfiniBand lab host's port P_Key table: the default partition (0xffff) and the P_Keys given (none: the default alone)",
    )
    .argument('<host>', 'host number, e.g. 34')
    .argument('<nic>', "the NIC's interface name, e.g. ib1")
    .argument('[pkeys...]', 'P_Keys as sysfs prints them, e.g. 0x8002')
    .option('--name <name>', 'lab name', DEFAULT_LAB_NAME)
    .action(async (h: string, nic: string, pkeys: string[], raw: Record<string, unknown>, cmd: Command) => {
      const opts = await readOptions(pkeyOptions, { ...raw, pkeys });
      const id = await host(h, 'lab pkey');
      const { labPkey } = await import('../lab/rdma.js');
      await answerBreak(io, cmd, 'lab pkey', await labPkey(opts.name, id, nic, opts.pkeys));
      done({ verdict: 'ok' });
    });
}
