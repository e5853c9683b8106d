/** Everything one host receives, as data: path, mode and exact content. Reproducible (the routing program is read once from the package). */
import { MANAGERS, type Manager } from '../inventory/model.js';
import type { Playbook } from '../playbook/playbook.js';
// The steps fill host/files/ templates (script/host-templates.ts): here, where files are rendered, their source.
import '../script/host-templates-package.js';
import { ROUTES_DATA_PATH, ROUTING_SCRIPT_PATH } from '../script/paths.js';
import { ROUTES_PROGRAM, ROUTES_PROGRAM_VERSION, ROUTES_WATCH_PROGRAM } from '../script/routes-program.js';
import type { RenderedFile } from '../script/rendered-file.js';
import { SCRIPT_PERSISTENCE, type Persistence, type RenderContext } from '../steps/step.js';
import { needsWatch, WATCH_PATH } from '../steps/persist/watch.js';
import { fileChecksOf } from './check-files.js';
import { renderRoutesData } from './routes-data.js';

/** Each step's files in the playbook's order. */
function stepFiles(playbook: Playbook, ctx: RenderContext): RenderedFile[] {
  return playbook.steps.flatMap((s) => s.step.files?.(ctx) ?? []);
}

/**
 * The routing program and its data for a host it persists the routing on. The program is the
 * repository's host/ibfleet-routes, the same bytes on every host; the data holds the host's NICs,
 * the steps' settings and, for its --check, the files each manager would get (the data is the same
 * whichever manager runs it, and whatever the host's probe showed). The data comes first: a hook
 * that runs between the two writes finds the old program, which reads none.
 */
function routingFiles(playbook: Playbook, ctx: RenderContext): RenderedFile[] {
  // What a host's probe showed is left out: the data is the same on every host, and a file that
  // belongs only on some (checkWhere) is checked there alone.
  const { facts: _facts, ...unprobed } = ctx;
  const byManager = new Map(
    MANAGERS.map((manager) => [manager, stepFiles(playbook, { ...unprobed, manager })] as const),
  );
  return [
    {
      path: ROUTES_DATA_PATH,
      mode: 0o644,
      content: renderRoutesData(playbook, ctx, ROUTES_PROGRAM_VERSION, fileChecksOf(byManager)),
      role: 'routing-data',
      kind: 'script',
      routing: true,
    },
    { path: ROUTING_SCRIPT_PATH, mode: 0o755, content: ROUTES_PROGRAM, role: 'routing-script', kind: 'script' },
  ];
}

/**
 * The routing program and its data where they persist the routing (not where a manager's own
 * configuration holds it: native persistence), then each step's files in the playbook's order.
 */
export function renderHostFiles(playbook: Playbook, ctx: RenderContext): RenderedFile[] {
  return [
    ...(ctx.persistence.kind === 'script' ? routingFiles(playbook, ctx) : []),
    ...stepFiles(playbook, ctx),
    ...watchFiles(playbook, ctx),
  ];
}

/** NetworkManager before 1.42 without systemd: the route watcher, which persist's hook starts (steps/persist/watch.ts). */
function watchFiles(playbook: Playbook, ctx: RenderContext): RenderedFile[] {
  if (!playbook.steps.some((s) => s.step.name === 'persist') || !needsWatch(ctx)) return [];
  return [
    {
      path: WATCH_PATH,
      mode: 0o755,
      content: ROUTES_WATCH_PROGRAM,
      role: 'route-watcher',
      kind: 'hook',
      label: `route watcher ${WATCH_PATH}`,
    },
  ];
}

/** How the playbook persists where no host is asked (`ibfleet render`): its persister says (the routing script, without one). */
export function previewPersistence(playbook: Playbook, manager: Manager): Persistence {
  return playbook.persister.preview(manager);
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

/** The routing data of a host whose routing the program persists: the same whichever manager runs it (no step's part depends on the manager). */
export function routesDataFor(playbook: Playbook, host: RenderContext['host'], fleet: RenderContext['fleet']): string {
  return routingFiles(playbook, {
    host,
    fleet,
    playbook: playbook.name,
    manager: 'netplan',
    persistence: SCRIPT_PERSISTENCE,
  })[0]!.content;
}
