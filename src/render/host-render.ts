/** What `ibfleet render` shows for one host: its files for a known manager, or every candidate hook for `auto`. */
import { MANAGERS, type Fleet, type Host } from '../inventory/model.js';
import type { Playbook } from '../playbook/playbook.js';
import { renderHostFiles, type RenderedFile } from './files.js';

export interface HostRender {
  readonly host: Host;
  /** The managers whose hook is included: one, or all three when the inventory says auto. */
  readonly managers: readonly string[];
  readonly files: readonly RenderedFile[];
}

export function renderForDisplay(host: Host, fleet: Fleet, playbook: Playbook): HostRender {
  if (host.manager !== 'auto') return { host, managers: [host.manager], files: renderHostFiles(host, fleet, playbook, host.manager) };
  const common = renderHostFiles(host, fleet, playbook, 'netplan').filter((f) => f.role !== 'hook');
  const hooks = MANAGERS.flatMap((m) => renderHostFiles(host, fleet, playbook, m).filter((f) => f.role === 'hook'));
  return { host, managers: [...MANAGERS], files: [common[0]!, ...hooks, ...common.slice(1)] };
}
