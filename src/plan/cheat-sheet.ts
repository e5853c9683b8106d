/**
 * The student's cheat sheet as data: their machine pair, each NIC's interface and address, and the
 * exact ping and rping commands that work now — in the seeds' own form (`ping -c 3 -I ibs5f0 172.16.34.1`,
 * `rping -s -a … -p … -v` on one machine, `rping -c -I … -a … -C 10 -v` on the other), each marked
 * with what verify saw when it ran it just now — and beside them the settings the pair's RDMA jobs
 * need (what `ibfleet env --hosts pair:OWNER` prints), from the ports verify read. Pure; --json shows it as is, src/ui/text/cheat-sheet.ts
 * as text. It is planning's kind, not a renderer's: it judges what verify saw and the pair's job
 * settings (job-env.ts), and writes nothing a host runs.
 */
import type { Host, Manager } from '../inventory/model.js';
import type { EnvRefusal, FleetEnv } from './job-env.js';
import type { CellEnd, MatrixCell } from '../vocabulary.js';
import { RPING_BASE_PORT } from '../render/verify-commands.js';

/** Pings a student's ping sends: without -c it runs until Ctrl-C, and a newcomer may not know to press it. */
export const CHEAT_SHEET_PING_COUNT = 3;

/** Pings a student's rping client sends; enough to see it work, bounded so it ends on its own. */
export const CHEAT_SHEET_RPING_COUNT = 10;

export type Checked = 'ok' | 'failed' | 'skipped' | 'not-checked';

export interface CheatCommand {
  /** The host name to run it on. */
  readonly on: string;
  readonly command: string;
  readonly from: CellEnd;
  readonly to: CellEnd;
  /** What verify saw for this NIC combination just now. */
  readonly checked: Checked;
  readonly detail: string;
}

export interface RpingServer {
  readonly on: string;
  readonly command: string;
  readonly end: CellEnd;
  /** One client per NIC of the other machine. */
  readonly clients: readonly CheatCommand[];
}

export interface CheatSheetMachine {
  readonly role: 'cpu' | 'mem';
  readonly id: number;
  readonly name: string;
  readonly target: string;
  readonly os: string | undefined;
  readonly manager: Manager | undefined;
  readonly nics: readonly {
    readonly nic: number;
    readonly iface: string;
    readonly address: string;
    readonly prefixLength: number;
  }[];
}

export interface CheatSheet {
  readonly owner: string;
  readonly machines: readonly [CheatSheetMachine, CheatSheetMachine];
  readonly ping: readonly CheatCommand[];
  readonly rping: readonly RpingServer[];
  readonly port: number;
  readonly notes: readonly string[];
  /** The settings the pair's RDMA jobs need (ibfleet env), or why a machine gets none; absent where verify did not read the ports. */
  readonly env?: { readonly fleet: FleetEnv; readonly refused: readonly EnvRefusal[] };
}

export interface CheatSheetInput {
  readonly owner: string;
  readonly cpu: Host;
  readonly mem: Host;
  readonly details?: ReadonlyMap<number, { readonly os?: string | undefined; readonly manager?: Manager | undefined }>;
  /** verify's matrix for the pair; without it every command is `not-checked`. */
  readonly cells?: readonly MatrixCell[];
  readonly port?: number;
}

function ends(host: Host): CellEnd[] {
  return host.nics.map((n) => ({ host: host.id, name: host.name, nic: n.index, iface: n.iface, ip: n.address }));
}

function verdict(
  cells: readonly MatrixCell[] | undefined,
  method: 'ping' | 'rping',
  from: CellEnd,
  to: CellEnd,
): { checked: Checked; detail: string } {
  const cell = cells?.find(
    (c) =>
      c.method === method &&
      c.from.host === from.host &&
      c.from.nic === from.nic &&
      c.to.host === to.host &&
      c.to.nic === to.nic,
  );
  if (!cell) return { checked: 'not-checked', detail: '' };
  return {
    checked: cell.ok === true ? 'ok' : cell.ok === false ? 'failed' : 'skipped',
    detail: cell.detail.replace(/^skipped: /, ''),
  };
}

export function buildCheatSheet(input: CheatSheetInput): CheatSheet {
  const port = input.port ?? RPING_BASE_PORT;
  const machine = (role: 'cpu' | 'mem', host: Host): CheatSheetMachine => ({
    role,
    id: host.id,
    name: host.name,
    target: host.target,
    os: input.details?.get(host.id)?.os,
    manager: input.details?.get(host.id)?.manager,
    nics: host.nics.map((n) => ({ nic: n.index, iface: n.iface, address: n.address, prefixLength: n.prefixLength })),
  });
  const directions: [Host, Host][] = [
    [input.cpu, input.mem],
    [input.mem, input.cpu],
  ];
  const ping: CheatCommand[] = directions.flatMap(([a, b]) =>
    ends(a).flatMap((from) =>
      ends(b).map((to) => ({
        on: a.name,
        command: `ping -c ${CHEAT_SHEET_PING_COUNT} -I ${from.iface} ${to.ip}`,
        from,
        to,
        ...verdict(input.cells, 'ping', from, to),
      })),
    ),
  );
  // Servers on the memory server first: the seeds' direction (the CPU server is the client).
  const rping: RpingServer[] = directions.flatMap(([client, server]) =>
    ends(server).map((to) => ({
      on: server.name,
      command: `rping -s -a ${to.ip} -p ${port} -v`,
      end: to,
      clients: ends(client).map((from) => ({
        on: client.name,
        command: `rping -c -I ${from.ip} -a ${to.ip} -p ${port} -C ${CHEAT_SHEET_RPING_COUNT} -v`,
        from,
        to,
        ...verdict(input.cells, 'rping', from, to),
      })),
    })),
  );
  const notes: string[] = [];
  const rpingClients = rping.flatMap((s) => s.clients);
  const skipped = [...new Set(rpingClients.filter((c) => c.checked === 'skipped').map((c) => c.detail))];
  if (skipped.length > 0)
    notes.push(
      `rping could not be checked here: ${skipped.join('; ')}. The commands are right for this pair; run them once the machines have their RDMA devices.`,
    );
  else if (input.cells !== undefined && rpingClients.every((c) => c.checked === 'not-checked'))
    notes.push('rping was not checked here.');
  if (input.cells === undefined)
    notes.push(
      'verify did not run: none of these commands was checked (ibfleet verify --pair ' + input.owner + ' checks them).',
    );
  return {
    owner: input.owner,
    machines: [machine('cpu', input.cpu), machine('mem', input.mem)],
    ping,
    rping,
    port,
    notes,
  };
}
