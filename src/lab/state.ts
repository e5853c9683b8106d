/** The lab's state file: the plan `lab up` built from, so `down` and `reboot` act on exactly that. */
import { readFile, rename, writeFile } from 'node:fs/promises';
import { UsageError } from '../errors.js';
import { checkLabName, labPaths } from './names.js';
import type { LabPlan } from './plan.js';

export interface LabState {
  /** `starting` until every host's sshd answers; a lab left `starting` crashed during `up`. */
  readonly status: 'starting' | 'up';
  readonly plan: LabPlan;
}

export async function readLabState(name: string): Promise<LabState | undefined> {
  try {
    const state = JSON.parse(await readFile(labPaths(name).state, 'utf8')) as LabState;
    return state.plan?.version === 1 ? state : undefined;
  } catch {
    return undefined;
  }
}

export async function writeLabState(state: LabState): Promise<void> {
  const file = labPaths(state.plan.name).state;
  await writeFile(`${file}.tmp`, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
  await rename(`${file}.tmp`, file);
}

/** The plan of a lab that is up, or a usage error saying how to start it. */
export async function requireLab(name: string): Promise<LabPlan> {
  checkLabName(name);
  const state = await readLabState(name);
  if (!state) throw new UsageError(`lab ${name} is not up (no ${labPaths(name).state}); start it with: ibfleet lab up${name === 'default' ? '' : ` --name ${name}`}`);
  if (state.status !== 'up') throw new UsageError(`lab ${name} did not finish starting; remove it with: ibfleet lab down${name === 'default' ? '' : ` --name ${name}`}`);
  return state.plan;
}
