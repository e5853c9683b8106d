/** Everything one host receives, as data: path, mode and exact content. Pure and reproducible. */
import { MANAGERS, type Manager } from '../inventory/model.js';
import type { Playbook } from '../playbook/playbook.js';
import { ROUTING_SCRIPT_PATH } from '../script/paths.js';
import type { RenderedFile } from '../script/rendered-file.js';
import { SCRIPT_PERSISTENCE, type Persistence, type RenderContext } from '../steps/step.js';
import { fileChecksOf } from './check-files.js';
import { renderRoutingScript, scriptParts } from './routing-script.js';

/** Each step's files in the playbook's order. */
function stepFiles(playbook: Playbook, ctx: RenderContext): RenderedFile[] {
  return playbook.steps.flatMap((s) => s.step.files?.(ctx) ?? []);
}

/**
 * The routing script for a host it persists the routing on: the steps' parts, and for its --check
 * the files each manager would get (it is the same script whichever manager runs it, and whatever
 * the host's probe showed).
 */
function routingScriptFile(playbook: Playbook, ctx: RenderContext): RenderedFile {
  // What a host's probe showed is left out: the script is the same on every host, and a file that
  // belongs only on some (checkWhere) is checked there alone.
  const { facts: _facts, ...unprobed } = ctx;
  const byManager = new Map(
    MANAGERS.map((manager) => [manager, stepFiles(playbook, { ...unprobed, manager })] as const),
  );
  return {
    path: ROUTING_SCRIPT_PATH,
    mode: 0o755,
    content: renderRoutingScript(ctx, scriptParts(playbook, ctx), fileChecksOf(byManager)),
    role: 'routing-script',
    kind: 'script',
    routing: true,
  };
}

/**
 * The routing script where it persists the routing (not where a manager's own configuration holds
 * it: native persistence), then each step's files in the playbook's order.
 */
export function renderHostFiles(playbook: Playbook, ctx: RenderContext): RenderedFile[] {
  return [
    ...(ctx.persistence.kind === 'script' ? [routingScriptFile(playbook, ctx)] : []),
    ...stepFiles(playbook, ctx),
  ];
}

/** How the playbook persists where no host is asked (`ibfleet render`): the step that persists says, else the routing script. */
export function previewPersistence(playbook: Playbook, manager: Manager): Persistence {
  for (const { step } of playbook.steps) if (step.previewPersistence) return step.previewPersistence(manager);
  return SCRIPT_PERSISTENCE;
}

/** The context of rendering for a host whose manager is known, without asking it. */
export function renderContext(
  playbook: Playbook,
  host: RenderContext['host'],
  fleet: RenderContext['fleet'],
  manager: Manager,
): RenderContext {
  return { host, fleet, playbook: playbook.name, manager, persistence: previewPersistence(playbook, manager) };
}

/** The routing script of a host whose routing the script persists: the same whichever manager runs it (no step's part depends on the manager). */
export function routingScriptFor(
  playbook: Playbook,
  host: RenderContext['host'],
  fleet: RenderContext['fleet'],
): string {
  return routingScriptFile(playbook, {
    host,
    fleet,
    playbook: playbook.name,
    manager: 'netplan',
    persistence: SCRIPT_PERSISTENCE,
  }).content;
}
