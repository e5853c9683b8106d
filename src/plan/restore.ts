/**
 * Putting a host back after a change that did not verify: what "as it was" means (the part of the
 * state a deploy can touch, read from the probe before the change: ibfleet's files, and what each
 * step can change), the restore that gets there, and what still differs afterwards. Every
 * registered step is asked, so whatever a change touched is covered. Pure.
 */
import type { Fleet, Host } from '../inventory/model.js';
import type { HostFacts } from '../facts/host-facts.js';
import { CREATED_DIR_LINE, directoriesFor } from '../render/write-files.js';
import type { RestoreSpec } from '../render/restore-script.js';
import type { RenderedFile } from '../script/rendered-file.js';
import { OWNED_PATHS, STEPS } from '../steps/registry.js';
import type { ApplyPart } from '../steps/step.js';

/** Everything of a host a deploy can change, as comparable text: one entry per aspect. */
function touchable(host: Host, fleet: Fleet, facts: HostFacts, before: HostFacts): Map<string, string> {
  const ctx = { host, fleet, facts };
  const out = new Map<string, string>();
  for (const step of STEPS)
    for (const [aspect, value] of step.restore?.snapshot(ctx, before) ?? []) out.set(aspect, value);
  for (const path of OWNED_PATHS) {
    const f = facts.files.get(path);
    out.set(path, f ? `mode ${f.mode.toString(8)} uid ${f.uid} sha256 ${f.sha256.slice(0, 12)}` : 'absent');
  }
  return out;
}

/** What differs between two probes in the part a deploy can change, one line per aspect ("table 941: now …, before …"). */
export function stateDifferences(host: Host, fleet: Fleet, before: HostFacts, now: HostFacts): string[] {
  const was = touchable(host, fleet, before, before);
  const is = touchable(host, fleet, now, before);
  return [...was]
    .filter(([key, value]) => is.get(key) !== value)
    .map(([key, value]) => `${key}: ${is.get(key)}, before ${value}`);
}

/**
 * The restore for a change whose output is `applyOutput`, which wrote `written` and whose steps
 * kept `parts` (what each told the host): ibfleet's files as they were, the directories the change
 * created — only those it could have created, whatever else the output says — and each step's
 * lines that put its part back as the probe before the change found it.
 */
export function planRestore(
  host: Host,
  fleet: Fleet,
  before: HostFacts,
  written: readonly RenderedFile[],
  applyOutput: string,
  parts: ReadonlyMap<string, ApplyPart> = new Map(),
): RestoreSpec {
  const possible = new Set(directoriesFor(written));
  const created = applyOutput
    .split('\n')
    .flatMap((l) =>
      l.startsWith(CREATED_DIR_LINE) && possible.has(l.slice(CREATED_DIR_LINE.length))
        ? [l.slice(CREATED_DIR_LINE.length)]
        : [],
    );
  const ctx = { host, fleet, facts: before };
  return {
    files: OWNED_PATHS.map((path) => {
      const f = before.files.get(path);
      return { path, before: f ? { mode: f.mode, sha256: f.sha256 } : null };
    }),
    createdDirs: directoriesFor(written).filter((d) => created.includes(d)),
    steps: STEPS.flatMap((s) => (s.restore ? [s.restore.lines(ctx, parts.get(s.name)?.memo)] : [])),
  };
}

/**
 * The failure message of a change that did not verify, completed with what the restore achieved:
 * the host as it was, the differences left, or no restore needed because nothing had changed.
 */
export function restoredMessage(
  failure: string,
  outcome:
    | { readonly kind: 'unchanged' }
    | { readonly kind: 'restored'; readonly left: readonly string[] }
    | { readonly kind: 'unfinished'; readonly why: string },
): string {
  switch (outcome.kind) {
    case 'unchanged':
      return `${failure}; the change left the host as it was, nothing to roll back`;
    case 'restored':
      return outcome.left.length === 0
        ? `${failure}; rolled back: the host is as it was before this deploy (source rules, tables, main-table routes, sysctls, ibfleet's files)`
        : `${failure}; rolled back, but these still differ from before: ${outcome.left.join('; ')}`;
    case 'unfinished':
      return `${failure}; rolling back did not finish (${outcome.why}): check the host with ibfleet status`;
  }
}
