/** `ibfleet render`: every file each host would receive, with path, owner and mode. */
import { formatMode } from '../../script/rendered-file.js';
import type { HostRender } from '../../render/host-render.js';

export function formatRenderText(renders: readonly HostRender[]): string {
  const out: string[] = [];
  for (const r of renders) {
    const managerNote =
      r.managers.length === 1
        ? `manager ${r.managers[0]}`
        : 'manager auto: detected at deploy, one of the hooks below is installed';
    out.push(
      `==> host ${r.host.id} (${r.host.name}) · ${managerNote} · ${r.files.length} files${r.commands.length ? ' and commands' : ''}`,
    );
    for (const note of r.notes) out.push(`note: ${note}`);
    for (const f of r.files) {
      out.push(`--- ${f.path}  (root:root ${formatMode(f.mode)}, ${f.role}${f.manager ? `, ${f.manager}` : ''})`);
      out.push(f.content.endsWith('\n') ? f.content.slice(0, -1) : f.content);
    }
    for (const c of r.commands) out.push(`--- ${c.title}`, ...c.lines);
    out.push('');
  }
  return `${out.join('\n')}`;
}

export function renderJson(renders: readonly HostRender[]) {
  return {
    command: 'render',
    ok: true,
    hosts: renders.map((r) => ({
      id: r.host.id,
      name: r.host.name,
      managers: r.managers,
      files: r.files.map((f) => ({
        path: f.path,
        mode: formatMode(f.mode),
        role: f.role,
        manager: f.manager ?? null,
        content: f.content,
      })),
      ...(r.commands.length ? { commands: r.commands } : {}),
      ...(r.notes.length ? { notes: r.notes } : {}),
    })),
  };
}
