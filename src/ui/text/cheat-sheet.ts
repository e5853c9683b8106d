/** The cheat sheet (src/plan/cheat-sheet.ts) as the text onboard prints last; what the machines said is sanitised. Pure. */
import type { CheatCommand, CheatSheet } from '../../plan/cheat-sheet.js';
import { padEnd } from './format.js';
import { sanitizeLine } from './sanitize.js';
import { exportLine } from '../../plan/job-env.js';

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

/** The pair's job settings, as `ibfleet env --hosts pair:OWNER` prints them: one block, or one per machine. */
function envLines(sheet: CheatSheet): string[] {
  if (!sheet.env) return [];
  const head = `for jobs: NCCL, UCX and Open MPI settings (ibfleet env --hosts pair:${sheet.owner} prints them to source)`;
  if (sheet.env.refused.length > 0)
    return ['', head, ...sheet.env.refused.map((r) => `  host ${r.host} is not ready for RDMA jobs: ${r.cause}`)];
  const { blocks } = sheet.env.fleet;
  const exports = (settings: readonly { name: string; value: string }[]) => settings.map((s) => `    ${exportLine(s)}`);
  if (blocks.length === 1) return ['', head, '  on both:', ...exports(blocks[0]!.settings)];
  return [
    '',
    head,
    ...sheet.env.fleet.reasons.map((r) => `  differ: ${r}`),
    ...blocks.flatMap((b) => [
      `  on ${b.names.join(', ')}:`,
      ...b.notes.map((n) => `    # ${n}`),
      ...exports(b.settings),
    ]),
  ];
}

export function formatCheatSheetText(sheet: CheatSheet): string {
  const lines: string[] = [];
  const nameWidth = Math.max(...sheet.machines.map((m) => m.name.length));
  const targetWidth = Math.max(...sheet.machines.map((m) => m.target.length));
  const ifaceWidth = Math.max(...sheet.machines.flatMap((m) => m.nics.map((n) => n.iface.length)));
  lines.push(`${sheet.owner}'s machine pair`);
  for (const m of sheet.machines) {
    const about = [m.os, m.manager].filter(Boolean).join(', ');
    lines.push(
      `  ${m.role}  ${m.id}  ${padEnd(m.name, nameWidth)}  ${padEnd(m.target, targetWidth)}${about ? `  ${about}` : ''}`.trimEnd(),
    );
    for (const n of m.nics)
      lines.push(`       NIC ${n.nic}  ${padEnd(n.iface, ifaceWidth)}  ${n.address}/${n.prefixLength}`);
  }
  lines.push(
    '',
    'Name the NIC every time (-I): each NIC now sends from its own address through its own routing table.',
  );

  lines.push('', sectionState(sheet.ping, 'ping'));
  const pingWidth = Math.max(...sheet.ping.map((c) => c.command.length));
  for (const on of [...new Set(sheet.ping.map((c) => c.on))]) {
    lines.push(`  on ${on}:`);
    for (const c of sheet.ping.filter((p) => p.on === on))
      lines.push(`    ${padEnd(c.command, mark(c) ? pingWidth : 0)}${mark(c)}`);
  }

  const clients = sheet.rping.flatMap((s) => s.clients);
  lines.push(
    '',
    sectionState(clients, 'rping'),
    '  start the server first; it serves one client and exits: start it again before the next client',
  );
  const onWidth =
    Math.max(...sheet.rping.flatMap((s) => [s.on.length, ...s.clients.map((c) => c.on.length)])) + 'on :  '.length;
  const clientWidth = Math.max(...clients.map((c) => c.command.length));
  for (const server of sheet.rping) {
    lines.push(`  to ${server.end.name} ${server.end.iface} (${server.end.ip}):`);
    lines.push(`    ${padEnd(`on ${server.on}:`, onWidth)}${server.command}`);
    server.clients.forEach((c, i) =>
      lines.push(
        `    ${padEnd(i === 0 ? `on ${c.on}:` : '', onWidth)}${padEnd(c.command, mark(c) ? clientWidth : 0)}${mark(c)}`,
      ),
    );
  }
  lines.push(...envLines(sheet));
  if (sheet.notes.length > 0) lines.push('', ...sheet.notes.map((n) => `note: ${n}`));
  return `${lines.map((line) => sanitizeLine(line, 'keep')).join('\n')}\n`;
}
