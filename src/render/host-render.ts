/** What `ibfleet render` shows for one host: its files for a known manager, or every manager's for `auto`. Pure. */
import { MANAGERS, type Fleet, type Host } from '../inventory/model.js';
import type { Playbook } from '../playbook/playbook.js';
import type { RenderedFile } from '../script/rendered-file.js';
import type { PreviewPart } from '../steps/step.js';
import { renderContext, renderHostFiles } from './host-files.js';

/** Commands deploy runs besides writing files (native persistence on NetworkManager hosts). */
export type RenderedCommands = NonNullable<PreviewPart['commands']>[number];

export interface HostRender {
  readonly host: Host;
  /** The managers whose files are included: one, or all three when the inventory says auto. */
  readonly managers: readonly string[];
  readonly files: readonly RenderedFile[];
  /** Commands deploy runs on the host besides the files (nmcli for native persistence). */
  readonly commands: readonly RenderedCommands[];
  /** What only the host can decide, said with the render (native persistence's conditions). */
  readonly notes: readonly string[];
}

/**
 * With `manager: auto` only the host can say which manager's files it gets: every manager's are
 * shown, each path once (the first manager's version of a file they share), files of one role
 * together, and a note that deploy detects the manager.
 */
export function renderForDisplay(host: Host, fleet: Fleet, playbook: Playbook): HostRender {
  const managers = host.manager === 'auto' ? MANAGERS : [host.manager];
  const files = new Map<string, RenderedFile>();
  const commands: RenderedCommands[] = [];
  const notes: string[] = [];
  for (const manager of managers) {
    const ctx = renderContext(playbook, host, fleet, manager);
    for (const file of renderHostFiles(playbook, ctx)) if (!files.has(file.path)) files.set(file.path, file);
    for (const { step } of playbook.steps) {
      const preview = step.preview?.(ctx) ?? {};
      for (const c of preview.commands ?? []) if (!commands.some((k) => k.title === c.title)) commands.push(c);
      for (const n of preview.notes ?? []) if (!notes.includes(n)) notes.push(n);
    }
  }
  const roles = [...new Set([...files.values()].map((f) => f.role))];
  const grouped = [...files.values()].sort((a, b) => roles.indexOf(a.role) - roles.indexOf(b.role));
  const auto =
    host.manager === 'auto' && notes.length > 0
      ? ['manager auto: deploy detects the manager and installs what it needs of the above']
      : [];
  return { host, managers, files: grouped, commands, notes: [...auto, ...notes] };
}
