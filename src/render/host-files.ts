/** Everything one host receives, as data: path, mode and exact content. Pure and reproducible. */
import type { Manager } from '../inventory/model.js';
import type { Playbook } from '../playbook/playbook.js';
import { ROUTING_SCRIPT_PATH } from '../script/paths.js';
import type { RenderedFile } from '../script/rendered-file.js';
import { SCRIPT_PERSISTENCE, type Persistence, type RenderContext } from '../steps/step.js';
import { renderRoutingScript, scriptParts } from './routing-script.js';

/**
 * The routing script where it persists the routing (not where a manager's own configuration holds
 * it: native persistence), then each step's files in the playbook's order.
 */
export function renderHostFiles(playbook: Playbook, ctx: RenderContext): RenderedFile[] {
  const script: RenderedFile[] =
    ctx.persistence.kind === 'script' ? [{ path: ROUTING_SCRIPT_PATH, mode: 0o755, content: renderRoutingScript(ctx, scriptParts(playbook, ctx)), role: 'routing-script', kind: 'script', routing: true }] : [];
  return [...script, ...playbook.steps.flatMap((s) => s.step.files?.(ctx) ?? [])];
}

/** How the playbook persists where no host is asked (`ibfleet render`): the step that persists says, else the routing script. */
export function previewPersistence(playbook: Playbook, manager: Manager): Persistence {
  for (const { step } of playbook.steps) if (step.previewPersistence) return step.previewPersistence(manager);
  return SCRIPT_PERSISTENCE;
}

/** The context of rendering for a host whose manager is known, without asking it. */
export function renderContext(playbook: Playbook, host: RenderContext['host'], fleet: RenderContext['fleet'], manager: Manager): RenderContext {
  return { host, fleet, playbook: playbook.name, manager, persistence: previewPersistence(playbook, manager) };
}

/** The routing script of a host whose routing the script persists: the same whichever manager runs it (no step's part depends on the manager). */
export function routingScriptFor(playbook: Playbook, host: RenderContext['host'], fleet: RenderContext['fleet']): string {
  const ctx: RenderContext = { host, fleet, playbook: playbook.name, manager: 'netplan', persistence: SCRIPT_PERSISTENCE };
  return renderRoutingScript(ctx, scriptParts(playbook, ctx));
}
