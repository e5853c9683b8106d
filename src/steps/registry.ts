/**
 * The steps a playbook can name, in the order they are documented, and what the engine needs
 * from all of them together: the paths ibfleet may own on a host, the facts the probe reads, the
 * kinds of change and their words. A new step is one module and one line in STEPS. Pure.
 */
import type { Fact } from '../facts/fact.js';
import type { HostOverride } from '../inventory/model.js';
import { ROUTES_DATA_PATH, ROUTING_SCRIPT_PATH } from '../script/paths.js';
import { fabricHealth } from './fabric-health/index.js';
import { fabricSysctl } from './fabric-sysctl/index.js';
import { links } from './links/index.js';
import { neighTable } from './neigh-table/index.js';
import { persist, persisterFor } from './persist/index.js';
import type { Persister } from './persist/persister.js';
import { policyRouting } from './policy-routing/index.js';
import type * as z from 'zod';
import type { ChangeKindSpec, OwnedPath, Step, StepModule } from './step.js';
import { verifyRoutes } from './verify-routes/index.js';

/** A step module as the engine holds it: its parameters' type closed inside `parse`. */
export interface RegisteredStep extends Omit<StepModule, 'params' | 'use'> {
  /** The parameters the step takes (for "allowed here" in errors). */
  readonly paramKeys: readonly string[];
  /** The playbook's parameters checked and applied (with the persister, for the step that persists), or zod's issues. */
  parse(raw: unknown): ParsedStep | { readonly issues: readonly z.core.$ZodIssue[] };
}

export interface ParsedStep {
  readonly step: Step;
  readonly params: unknown;
  /** How the routing lasts on a host, from the one step that answers it (persist). */
  readonly persister?: Persister;
}

function register<P>(module: StepModule<P>, persisterOf?: (params: P) => Persister): RegisteredStep {
  const { params, use, ...rest } = module;
  const shape = (params as unknown as { shape?: Record<string, unknown> }).shape;
  return {
    ...rest,
    paramKeys: shape ? Object.keys(shape) : [],
    parse: (raw) => {
      const result = params.safeParse(raw);
      if (!result.success) return { issues: result.error.issues };
      const step = use(result.data);
      return persisterOf
        ? { step, params: result.data, persister: persisterOf(result.data) }
        : { step, params: result.data };
    },
  };
}

/** The steps, in the order the documentation tells them. */
export const STEPS: readonly RegisteredStep[] = [
  register(policyRouting),
  register(fabricSysctl),
  register(neighTable),
  register(persist, persisterFor),
  register(verifyRoutes),
  register(fabricHealth),
  // Last among the modules (SPEC step 6): its rollback deletes the profiles persist's rollback edits first.
  register(links),
];

export function stepModule(name: string): RegisteredStep | undefined {
  return STEPS.find((s) => s.name === name);
}

export const STEP_NAMES: readonly string[] = STEPS.map((s) => s.name);

/** The step every playbook must have: the others build on the routing it makes. */
export const REQUIRED_STEP: string = policyRouting.name;

/** Every path ibfleet may own on a host, whatever the playbook: the routing script and each step's files, with their kinds of change. */
const OWNED: readonly OwnedPath[] = [
  { path: ROUTING_SCRIPT_PATH, kind: 'script' },
  { path: ROUTES_DATA_PATH, kind: 'script' },
  ...STEPS.flatMap((s) => s.paths ?? []),
];

export const OWNED_PATHS: readonly string[] = OWNED.map((p) => p.path);

/** The kind of change installing or removing one of ibfleet's paths is (`file` for one no step claims). */
export function ownedKind(path: string): string {
  return OWNED.find((p) => p.path === path)?.kind ?? 'file';
}

/** The settings steps let a host override in the inventory (`links:`): whoever loads an inventory passes these. */
export const HOST_OVERRIDES: readonly HostOverride[] = STEPS.flatMap((s) => (s.hostOverride ? [s.hostOverride] : []));

/** The facts the steps need the probe to read (the probe reads them for every playbook: a status or rollback must see what any step left). */
export const STEP_FACTS: readonly Fact<unknown>[] = STEPS.flatMap((s) => s.facts ?? []);

/**
 * The order a playbook runs the steps in: the default playbook's (playbooks/dual-ib-routing.yaml,
 * which a test holds alike), links first — it gives the NICs what the others build on. STEPS keeps
 * the documented order, in which rollback takes the steps back (links last).
 */
export const PLAYBOOK_ORDER: readonly string[] = [
  'links',
  'policy-routing',
  'fabric-sysctl',
  'neigh-table',
  'persist',
  'verify-routes',
  'fabric-health',
];

/** Kinds of change the engine itself makes: the routing program (told first of the files), and a file no step claims (last). */
const SCRIPT_KIND: ChangeKindSpec = { kind: 'script', noun: ['script', 'scripts'], shape: 'file' };
const FILE_KIND: ChangeKindSpec = { kind: 'file', noun: ['file', 'files'], shape: 'file' };

/**
 * The kinds of change in the order summaries tell them, derived, never numbered: the fix itself
 * first (counted kinds: `+2 link profiles +2 addresses +2 rules`, `8 sysctls set`), then what makes
 * it last (files: `script, sysctl file and hook installed`); within each, the steps in `order` and
 * each step's kinds as it lists them. A kind two steps declare (neigh-table's sysctl file) keeps
 * its first place.
 */
export function kindOrder(steps: readonly RegisteredStep[], order: readonly string[]): ChangeKindSpec[] {
  const inOrder = [...steps].sort((a, b) => place(order, a.name) - place(order, b.name));
  const kinds = inOrder.flatMap((s) => s.kinds ?? []);
  const byShape = (shape: ChangeKindSpec['shape']) => kinds.filter((k) => k.shape === shape);
  const all = [...byShape('counted'), SCRIPT_KIND, ...byShape('file'), FILE_KIND];
  return all.filter((k, i) => all.findIndex((first) => first.kind === k.kind) === i);
}

/** Where a step stands in `order`; one it leaves out, after the others. */
function place(order: readonly string[], name: string): number {
  const i = order.indexOf(name);
  return i < 0 ? order.length : i;
}

/** Every kind of change, in the order summaries tell them (the map's order). */
export const CHANGE_KINDS: ReadonlyMap<string, ChangeKindSpec> = new Map(
  kindOrder(STEPS, PLAYBOOK_ORDER).map((k) => [k.kind, k]),
);

const KIND_PLACE: ReadonlyMap<string, number> = new Map([...CHANGE_KINDS.keys()].map((kind, i) => [kind, i]));

/** Where summaries tell a kind of change: its place in CHANGE_KINDS; one no step names, after them all. */
export function kindPlace(kind: string): number {
  return KIND_PLACE.get(kind) ?? Number.MAX_SAFE_INTEGER;
}
