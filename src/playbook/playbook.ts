/**
 * Playbooks: an ordered list of built-in, typed steps with parameters. Pure: text → Playbook.
 */
import { isMap, isScalar, isSeq } from 'yaml';
import { z } from 'zod';
import { clipInput, InventoryError, type InventoryProblem } from '../errors.js';
import { YamlSource, type YamlPath } from '../inventory/yaml-source.js';
import { issuesToProblems } from '../inventory/zod-problems.js';

export const STEP_NAMES = ['policy-routing', 'fabric-sysctl', 'persist', 'verify-routes', 'fabric-health'] as const;
export type StepName = (typeof STEP_NAMES)[number];

const policyRoutingSchema = z.strictObject({
  mainRoutes: z.enum(['remove', 'keep'], { error: 'mainRoutes is remove (the seeds\' choice) or keep' }).default('remove'),
});

const sysctlValue = (max: number, what: string) =>
  z.int({ error: `${what} is a whole number 0..${max}` }).min(0, { error: `${what} is 0..${max}` }).max(max, { error: `${what} is 0..${max}` });

/** Defaults are the values librdmacm, the libfabric verbs guide and Red Hat give for several NICs in one subnet. */
const fabricSysctlSchema = z.strictObject({
  arp_ignore: sysctlValue(8, 'arp_ignore').default(2),
  arp_announce: sysctlValue(2, 'arp_announce').default(2),
  rp_filter: sysctlValue(2, 'rp_filter').default(2),
  accept_local: sysctlValue(1, 'accept_local').default(1),
});

const emptySchema = z.strictObject({});

/**
 * `mode: hook` installs a hook the network manager runs whenever a NIC comes up (it works with every
 * manager version the seeds mention); `mode: native` writes the tables and rules into the manager's
 * own configuration (NetworkManager connection properties, a netplan file) where the manager's
 * version allows, and falls back to the hook with the reason where it does not (src/plan/persistence.ts).
 *
 * The hooks run on the events a manager announces; some change the routing without any (an admin
 * link flap inside NetworkManager's carrier grace, a DHCP renewal). A systemd timer re-applies the
 * routing script every repairEvery seconds (idempotent: it changes nothing when the state is
 * right), which bounds how long such drift lasts. 0 installs no timer.
 */
const persistSchema = z.strictObject({
  mode: z.enum(['hook', 'native'], { error: 'mode is hook (a hook for the host\'s network manager, the default) or native (its own configuration)' }).default('hook'),
  repairEvery: z
    .int({ error: 'repairEvery is whole seconds, 0 (no timer) or 5..3600' })
    .refine((v) => v === 0 || (v >= 5 && v <= 3600), { error: 'repairEvery is 0 (no timer) or 5..3600 seconds' })
    .default(30),
});

const STEP_SCHEMAS = {
  'policy-routing': policyRoutingSchema,
  'fabric-sysctl': fabricSysctlSchema,
  persist: persistSchema,
  'verify-routes': emptySchema,
  'fabric-health': emptySchema,
} as const;

export type PolicyRoutingParams = z.infer<typeof policyRoutingSchema>;
export type FabricSysctlParams = z.infer<typeof fabricSysctlSchema>;
export type PersistMode = z.infer<typeof persistSchema>['mode'];

export interface Playbook {
  readonly name: string;
  readonly file: string;
  readonly steps: readonly StepName[];
  readonly policyRouting: PolicyRoutingParams;
  /** Absent when the playbook has no fabric-sysctl step. */
  readonly fabricSysctl: FabricSysctlParams | undefined;
  readonly persist: boolean;
  /** How the routing persists: a hook per manager, or the manager's own configuration. Hook without a persist step. */
  readonly persistMode: PersistMode;
  /** Seconds between the periodic repair's runs; 0 (or no persist step): no repair timer. */
  readonly repairEvery: number;
  readonly verifyRoutes: boolean;
  /** Status reads each fabric NIC's RDMA port (read-only; skipped with `fabric.rdma: false`). */
  readonly fabricHealth: boolean;
}

const TOP_KEYS = ['name', 'description', 'steps'];

/** A step's parameters, validated; undefined, with the problems said, when they are not right. `bare`: the step is written without parameters. */
function readParams(step: StepName, at: YamlPath, bare: boolean, value: unknown, source: YamlSource, problems: InventoryProblem[]): object | undefined {
  const result = STEP_SCHEMAS[step].safeParse(value);
  if (!result.success) {
    const stepPath = bare ? at : [...at, step];
    const issues = result.error.issues.map((issue) => ({ ...issue, path: [...stepPath, ...issue.path] }));
    problems.push(...issuesToProblems(issues, source, () => Object.keys(STEP_SCHEMAS[step].shape)));
    return undefined;
  }
  // Every number a step takes is a whole number, spelt as the inventory's are (yaml-source.ts, notDecimal).
  const spelling = Object.keys(result.data).flatMap((key) => source.notDecimalProblem([...at, step, key]) ?? []);
  problems.push(...spelling);
  return spelling.length > 0 ? undefined : result.data;
}

export function loadPlaybook(text: string, file: string): Playbook {
  const source = YamlSource.parse(text, file);
  const problems: InventoryProblem[] = [];
  const root = source.doc.contents;
  if (!isMap(root)) throw new InventoryError([source.problem([], 'a playbook is a YAML map with name and steps', 'see playbooks/dual-ib-routing.yaml')]);
  for (const pair of root.items) {
    const key = isScalar(pair.key) ? String(pair.key.value ?? '') : String(pair.key ?? '');
    if (!TOP_KEYS.includes(key)) problems.push(source.problem([key], `unknown key "${clipInput(key)}"`, `allowed here: ${TOP_KEYS.join(', ')}`, { key: true }));
  }
  const js = source.toJS() as { name?: unknown; steps?: unknown };
  const name = typeof js.name === 'string' && /^[a-z0-9][a-z0-9_-]*$/.test(js.name) ? js.name : undefined;
  if (js.name === undefined) problems.push(source.problem(['name'], 'name is required: a lower-case word such as dual-ib-routing', undefined, { key: true }));
  else if (name === undefined) problems.push(source.problem(['name'], `name = ${clipInput(JSON.stringify(js.name) ?? String(js.name))} is not a playbook name`, 'a lower-case word of a-z, 0-9, _ and -, such as dual-ib-routing'));

  const stepsNode = source.nodeAt(['steps']);
  const params: Partial<Record<StepName, unknown>> = {};
  const steps: StepName[] = [];
  if (!isSeq(stepsNode)) {
    problems.push(source.problem(['steps'], 'steps is required: a list of built-in steps', `known steps: ${STEP_NAMES.join(', ')}`, { key: true }));
  } else {
    stepsNode.items.forEach((item, i) => {
      let stepName: string | undefined;
      let value: unknown = {};
      if (isScalar(item)) stepName = String(item.value);
      else if (isMap(item) && item.items.length === 1 && isScalar(item.items[0]!.key)) {
        stepName = String(item.items[0]!.key.value);
        value = (source.toJS() as { steps: Record<string, unknown>[] }).steps[i]![stepName] ?? {};
      }
      if (stepName === undefined) {
        problems.push(source.problem(['steps', i], `steps[${i}] is not a step`, `write "- <step>" or "- <step>: { params }"; known steps: ${STEP_NAMES.join(', ')}`));
        return;
      }
      if (!(STEP_NAMES as readonly string[]).includes(stepName)) {
        problems.push(source.problem(['steps', i], `steps[${i}]: unknown step "${clipInput(stepName)}"`, `known steps: ${STEP_NAMES.join(', ')}`));
        return;
      }
      const step = stepName as StepName;
      if (steps.includes(step)) {
        problems.push(source.problem(['steps', i], `steps[${i}]: step ${step} appears twice`, 'each step runs once'));
        return;
      }
      const data = readParams(step, ['steps', i], isScalar(item), value, source, problems);
      if (data === undefined) return;
      steps.push(step);
      params[step] = data;
    });
    if (!steps.includes('policy-routing') && problems.length === 0) {
      problems.push(source.problem(['steps'], 'the playbook has no policy-routing step', 'policy-routing is what the other steps build on', { key: true }));
    }
  }
  if (problems.length > 0) throw new InventoryError(problems);
  return {
    name: name!,
    file,
    steps,
    policyRouting: params['policy-routing'] as PolicyRoutingParams,
    fabricSysctl: params['fabric-sysctl'] as FabricSysctlParams | undefined,
    persist: steps.includes('persist'),
    persistMode: (params.persist as z.infer<typeof persistSchema> | undefined)?.mode ?? 'hook',
    repairEvery: (params.persist as z.infer<typeof persistSchema> | undefined)?.repairEvery ?? 0,
    verifyRoutes: steps.includes('verify-routes'),
    fabricHealth: steps.includes('fabric-health'),
  };
}
