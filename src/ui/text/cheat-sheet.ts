/**
 * The student's cheat sheet: their machine pair, each NIC's interface and address, and the exact
 * ping and rping commands that work now — in the seeds' own form (`ping -I ibs5f0 172.16.34.1`,
 * `rping -s -a … -p … -v` on one machine, `rping -c -I … -a … -C 10 -v` on the other), each marked
 * with what verify saw when it ran it just now. Pure: a data model (for --json) and its text.
 */
import type { Host, Manager } from '../../inventory/model.js';
import type { MatrixCell } from '../../runner/events.js';
import { RPING_BASE_PORT } from '../../plan/matrix.js';

/** Pings a student's rping client sends; enough to see it work, bounded so it ends on its own. */
export const CHEAT_SHEET_RPING_COUNT = 10;

export interface CheatEnd {
  readonly host: number;
  readonly name: string;
  readonly nic: number;
  readonly iface: string;
  readonly ip: string;
}

export type Checked = 'ok' | 'failed' | 'skipped' | 'not-checked';

export interface CheatCommand {
  /** The host name to run it on. */
  readonly on: string;
  readonly command: string;
  readonly from: CheatEnd;
  readonly to: CheatEnd;
  /** What verify saw for this NIC combination just now. */
  readonly checked: Checked;
  readonly detail: string;
}

export interface RpingServer {
  readonly on: string;
  readonly command: string;
  readonly end: CheatEnd;
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
  readonly nics: readonly { readonly nic: number; readonly iface: string; readonly address: string; readonly prefixLength: number }[];
}

export interface CheatSheet {
  readonly owner: string;
  readonly machines: readonly [CheatSheetMachine, CheatSheetMachine];
  readonly ping: readonly CheatCommand[];
  readonly rping: readonly RpingServer[];
  readonly port: number;
  readonly notes: readonly string[];
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

function ends(host: Host): CheatEnd[] {
  return host.nics.map((n) => ({ host: host.id, name: host.name, nic: n.index, iface: n.iface, ip: n.address }));
}

function verdict(cells: readonly MatrixCell[] | undefined, method: 'ping' | 'rping', from: CheatEnd, to: CheatEnd): { checked: Checked; detail: string } {
  const cell = cells?.find((c) => c.method === method && c.from.host === from.host && c.from.nic === from.nic && c.to.host === to.host && c.to.nic === to.nic);
  if (!cell) return { checked: 'not-checked', detail: '' };
  return { checked: cell.ok === true ? 'ok' : cell.ok === false ? 'failed' : 'skipped', detail: cell.detail.replace(/^skipped: /, '') };
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
    ends(a).flatMap((from) => ends(b).map((to) => ({ on: a.name, command: `ping -I ${from.iface} ${to.ip}`, from, to, ...verdict(input.cells, 'ping', from, to) }))),
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
  if (skipped.length > 0) notes.push(`rping could not be checked here: ${skipped.join('; ')}. The commands are right for this pair; run them once the machines have their RDMA devices.`);
  else if (input.cells !== undefined && rpingClients.every((c) => c.checked === 'not-checked')) notes.push('rping was not checked here.');
  if (input.cells === undefined) notes.push('verify did not run: none of these commands was checked (ibfleet verify --pair ' + input.owner + ' checks them).');
  return { owner: input.owner, machines: [machine('cpu', input.cpu), machine('mem', input.mem)], ping, rping, port, notes };
}

function pad(text: string, width: number): string {
  return text.length >= width ? text : text + ' '.repeat(width - text.length);
}

function mark(c: CheatCommand): string {
  return c.checked === 'failed' ? `   # FAILED just now: ${c.detail}` : '';
}

function sectionState(commands: readonly CheatCommand[], what: string): string {
  const failed = commands.filter((c) => c.checked === 'failed').length;
  const ok = commands.filter((c) => c.checked === 'ok').length;
  if (failed > 0) return `${what} (${ok} of ${commands.length} worked just now; the FAILED ones are marked)`;
  if (ok === commands.length) return `${what} (all ${commands.length} checked just now)`;
  if (ok > 0) return `${what} (${ok} of ${commands.length} checked just now)`;
  return `${what} (not checked here)`;
}

export function formatCheatSheetText(sheet: CheatSheet): string {
  const lines: string[] = [];
  const nameWidth = Math.max(...sheet.machines.map((m) => m.name.length));
  const targetWidth = Math.max(...sheet.machines.map((m) => m.target.length));
  const ifaceWidth = Math.max(...sheet.machines.flatMap((m) => m.nics.map((n) => n.iface.length)));
  lines.push(`${sheet.owner}'s machine pair`);
  for (const m of sheet.machines) {
    const about = [m.os, m.manager].filter(Boolean).join(', ');
    lines.push(`  ${m.role}  ${m.id}  ${pad(m.name, nameWidth)}  ${pad(m.target, targetWidth)}${about ? `  ${about}` : ''}`.trimEnd());
    for (const n of m.nics) lines.push(`       NIC ${n.nic}  ${pad(n.iface, ifaceWidth)}  ${n.address}/${n.prefixLength}`);
  }
  lines.push('', 'Name the NIC every time (-I): each NIC now sends from its own address through its own routing table.');

  lines.push('', sectionState(sheet.ping, 'ping'));
  const pingWidth = Math.max(...sheet.ping.map((c) => c.command.length));
  for (const on of [...new Set(sheet.ping.map((c) => c.on))]) {
    lines.push(`  on ${on}:`);
    for (const c of sheet.ping.filter((p) => p.on === on)) lines.push(`    ${pad(c.command, mark(c) ? pingWidth : 0)}${mark(c)}`);
  }

  const clients = sheet.rping.flatMap((s) => s.clients);
  lines.push('', sectionState(clients, 'rping'), '  start the server first; it serves one client and exits: start it again before the next client');
  const onWidth = Math.max(...sheet.rping.flatMap((s) => [s.on.length, ...s.clients.map((c) => c.on.length)])) + 'on :  '.length;
  const clientWidth = Math.max(...clients.map((c) => c.command.length));
  for (const server of sheet.rping) {
    lines.push(`  to ${server.end.name} ${server.end.iface} (${server.end.ip}):`);
    lines.push(`    ${pad(`on ${server.on}:`, onWidth)}${server.command}`);
    server.clients.forEach((c, i) => lines.push(`    ${pad(i === 0 ? `on ${c.on}:` : '', onWidth)}${pad(c.command, mark(c) ? clientWidth : 0)}${mark(c)}`));
  }
  if (sheet.notes.length > 0) lines.push('', ...sheet.notes.map((n) => `note: ${n}`));
  return `${lines.join('\n')}\n`;
}
