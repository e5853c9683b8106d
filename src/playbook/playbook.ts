/**
 * Playbooks: an ordered list of built-in, typed steps with parameters. Pure: text → Playbook.
 */
import { isMap, isScalar, isSeq } from 'yaml';
import { clipInput, ConfigError, type InventoryProblem } from '../errors.js';
import { YamlSource, type YamlPath } from '../inventory/yaml-source.js';
import { didYouMean, issuesToProblems } from '../inventory/zod-problems.js';
import { REQUIRED_STEP, STEP_NAMES, stepModule, type RegisteredStep } from '../steps/registry.js';
import { NO_PERSISTER, type Persister } from '../steps/persist/persister.js';
import type { Step } from '../steps/step.js';

/** A step of a playbook: its module (for what it is) and what it does with the playbook's parameters. */
export interface PlaybookStep {
  readonly module: RegisteredStep;
  readonly step: Step;
  /** The parameters as the step took them, defaults filled in (for the run log and tests). */
  readonly params: unknown;
  /** What the step answers for how the routing lasts (persist only). */
  readonly persister?: Persister;
}

export interface Playbook {
  readonly name: string;
  readonly file: string;
  /** In the playbook's order; each step once. */
  readonly steps: readonly PlaybookStep[];
  /** How the routing lasts on a host: its persist step's answers, or NO_PERSISTER (the routing script deploy runs). */
  readonly persister: Persister;
}

const TOP_KEYS = ['name', 'description', 'steps'];

export function loadPlaybook(text: string, file: string): Playbook {
  const source = YamlSource.parse(text, file, 'playbook');
  const problems: InventoryProblem[] = [];
  const root = source.doc.contents;
  if (!isMap(root))
    throw new ConfigError('playbook', [
      source.problem([], 'a playbook is a YAML map with name and steps', 'see playbooks/dual-ib-routing.yaml'),
    ]);
  for (const pair of root.items) {
    const key = isScalar(pair.key) ? String(pair.key.value ?? '') : String(pair.key ?? '');
    if (!TOP_KEYS.includes(key))
      problems.push(
        source.problem(
          [key],
          `unknown key "${clipInput(key)}"${didYouMean(key, TOP_KEYS)}`,
          `allowed here: ${TOP_KEYS.join(', ')}`,
          { key: true },
        ),
      );
  }
  const js = source.toJS() as { name?: unknown; steps?: unknown };
  const name = typeof js.name === 'string' && /^[a-z0-9][a-z0-9_-]*$/.test(js.name) ? js.name : undefined;
  if (js.name === undefined)
    problems.push(
      source.problem(['name'], 'name is required: a lower-case word such as dual-ib-routing', undefined, { key: true }),
    );
  else if (name === undefined)
    problems.push(
      source.problem(
        ['name'],
        `name = ${clipInput(JSON.stringify(js.name) ?? String(js.name))} is not a playbook name`,
        'a lower-case word of a-z, 0-9, _ and -, such as dual-ib-routing',
      ),
    );

  const stepsNode = source.nodeAt(['steps']);
  const steps: PlaybookStep[] = [];
  if (!isSeq(stepsNode)) {
    problems.push(
      source.problem(
        ['steps'],
        'steps is required: a list of built-in steps',
        `known steps: ${STEP_NAMES.join(', ')}`,
        { key: true },
      ),
    );
  } else {
    stepsNode.items.forEach((item, i) => {
      const found = readStep(source, item, i, steps);
      if ('problems' in found) problems.push(...found.problems);
      else steps.push(found);
    });
    if (!steps.some((s) => s.module.name === REQUIRED_STEP) && problems.length === 0) {
      problems.push(
        source.problem(
          ['steps'],
          `the playbook has no ${REQUIRED_STEP} step`,
          `${REQUIRED_STEP} is what the other steps build on`,
          { key: true },
        ),
      );
    }
  }
  if (problems.length > 0) throw new ConfigError('playbook', problems);
  return { name: name!, file, steps, persister: steps.find((s) => s.persister)?.persister ?? NO_PERSISTER };
}

/** One item of `steps:`: `- name` or `- name: { params }`, checked against the step's own schema. */
function readStep(
  source: YamlSource,
  item: unknown,
  i: number,
  before: readonly PlaybookStep[],
): PlaybookStep | { problems: InventoryProblem[] } {
  let stepName: string | undefined;
  let value: unknown = {};
  if (isScalar(item)) stepName = String(item.value);
  else if (isMap(item) && item.items.length === 1 && isScalar(item.items[0]!.key)) {
    stepName = String(item.items[0]!.key.value);
    value = (source.toJS() as { steps: Record<string, unknown>[] }).steps[i]![stepName] ?? {};
  }
  const known = `known steps: ${STEP_NAMES.join(', ')}`;
  if (stepName === undefined)
    return {
      problems: [
        source.problem(
          ['steps', i],
          `steps[${i}] is not a step`,
          `write "- <step>" or "- <step>: { params }"; ${known}`,
        ),
      ],
    };
  const module = stepModule(stepName);
  if (!module)
    return {
      problems: [
        source.problem(
          ['steps', i],
          `steps[${i}]: unknown step "${clipInput(stepName)}"${didYouMean(stepName, STEP_NAMES)}`,
          known,
        ),
      ],
    };
  if (before.some((s) => s.module.name === module.name))
    return {
      problems: [source.problem(['steps', i], `steps[${i}]: step ${module.name} appears twice`, 'each step runs once')],
    };
  const parsed = module.parse(value);
  if ('step' in parsed) {
    // Every number a step takes is a whole number, spelt as the inventory's are (yaml-source.ts, notDecimal),
    // but what is hex by nature (a P_Key: hostOverride.hex), which is written 0x….
    const hex = module.hostOverride?.hex ?? {};
    const numbers = Object.entries(parsed.params as object)
      .filter(([key, v]) => typeof v === 'number' && !Object.hasOwn(hex, key))
      .map(([key]) => key);
    const at = (key: string): YamlPath => ['steps', i, module.name, key];
    const spelling = isScalar(item)
      ? []
      : [
          ...numbers.flatMap((key) => source.notDecimalProblem(at(key)) ?? []),
          ...Object.entries(hex).flatMap(([key, noun]) => source.notHexProblem(at(key), noun) ?? []),
        ];
    return spelling.length ? { problems: spelling } : { module, ...parsed };
  }
  const stepPath = isScalar(item) ? ['steps', i] : ['steps', i, module.name];
  return {
    problems: issuesToProblems(
      parsed.issues.map((issue) => ({ ...issue, path: [...stepPath, ...issue.path] })),
      source,
      () => module.paramKeys,
    ),
  };
}
