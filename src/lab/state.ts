/** The lab's state file: the plan `lab up` built from, so `down` and `reboot` act on exactly that. */
import { existsSync } from 'node:fs';
import { readdir, readFile, rename, writeFile } from 'node:fs/promises';
import { UsageError } from '../errors.js';
import { foldHosts } from '../inventory/select.js';
import { DEFAULT_LAB_NAME, LAB_ROOT, checkLabName, hostPaths, isLabName, labNameOption, labPaths } from './names.js';
import type { LabPlan } from './plan.js';
import type { SuiteVersions } from './roots.js';
import { formatVersions } from './suites.js';

export interface LabState {
  /** `starting` until every host's sshd answers; a lab left `starting` crashed during `up`. */
  readonly status: 'starting' | 'up';
  readonly plan: LabPlan;
  /** Package versions of the suites' roots the hosts run on (absent: every host on the machine's /usr). */
  readonly roots?: SuiteVersions;
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

/** One lab on this machine as `lab list` shows it. */
export interface LabSummary {
  readonly name: string;
  readonly status: LabState['status'];
  readonly hosts: readonly number[];
  readonly mgmtSubnet: string;
  /** The lab's one link in the machine's namespace, which carries the route to its subnet. */
  readonly rootLink: string;
  readonly inventory: string;
  readonly knownHosts: string;
  readonly identity: string;
  /** Hosts of a lab that is up whose sshd no longer runs: the machine restarted (its processes ended, the lab's files stayed), or someone stopped it. */
  readonly hostsWithoutSshd: readonly number[];
  /** What each host runs: its manager, and the suite whose root it runs on with that root's versions. */
  readonly hostSystems: readonly {
    readonly id: number;
    readonly manager: string;
    readonly suite?: string;
    readonly versions?: string;
  }[];
}

/** The pid a lab host's sshd wrote, if it did (sshd removes the file when it stops). */
export async function readSshdPid(lab: string, id: number): Promise<number | undefined> {
  const pid = Number((await readFile(hostPaths(lab, id).sshdPid, 'utf8').catch(() => '')).trim());
  return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
}

/** Whether a lab host's sshd, the process its pid file names, still runs. */
async function sshdRuns(lab: string, id: number): Promise<boolean> {
  const pid = await readSshdPid(lab, id);
  return pid !== undefined && (await readFile(`/proc/${pid}/comm`, 'utf8').catch(() => '')).trim() === 'sshd';
}

/** Every lab with a state file, by name; a lab whose `up` crashed shows as `starting`. */
export async function labSummaries(): Promise<LabSummary[]> {
  const names = existsSync(LAB_ROOT) ? (await readdir(LAB_ROOT)).filter(isLabName).sort() : [];
  const states = (await Promise.all(names.map(readLabState))).filter((s): s is LabState => s !== undefined);
  return Promise.all(
    states.map(async ({ status, plan, roots }) => {
      const paths = labPaths(plan.name);
      const hosts = plan.hosts.map((h) => h.id);
      const running =
        status === 'up' ? await Promise.all(hosts.map((id) => sshdRuns(plan.name, id))) : hosts.map(() => true);
      const hostsWithoutSshd = hosts.filter((_, i) => !running[i]);
      const hostSystems = plan.hosts.map((h) => ({
        id: h.id,
        manager: h.manager,
        ...(h.suite !== undefined ? { suite: h.suite, versions: formatVersions(roots?.[h.suite] ?? {}) } : {}),
      }));
      return {
        name: plan.name,
        status,
        hosts,
        mgmtSubnet: plan.mgmtSubnet,
        rootLink: plan.rootLink,
        inventory: paths.inventory,
        knownHosts: paths.knownHosts,
        identity: paths.identity,
        hostsWithoutSshd,
        hostSystems,
      };
    }),
  );
}

/** "labs up here: demo (hosts 16,34,40, 198.18.0.0/24)…", or that there are none: said whenever a named lab is not there. */
export function describeLabsUp(labs: readonly LabSummary[]): string {
  const up = labs.filter((l) => l.status === 'up');
  if (up.length === 0) return 'no lab is up on this machine';
  return `labs up here: ${up.map((l) => `${l.name} (hosts ${foldHosts(l.hosts)}, ${l.mgmtSubnet})`).join(', ')}`;
}

/**
 * Why lab `name` cannot be used, and the next step. Without --name the lab is `default`; when other
 * labs are up, the user most likely meant one of them, so the fix is their --name, not `lab up`.
 */
export function labNotUpMessage(name: string, labs: readonly LabSummary[]): string {
  const up = labs.filter((l) => l.status === 'up');
  const startIt = `ibfleet lab up${labNameOption(name)}`;
  if (name !== DEFAULT_LAB_NAME || up.length === 0) {
    return `lab ${name} is not up (${describeLabsUp(labs)}); start it with: ${startIt}`;
  }
  const described = (l: LabSummary) => `${l.name} (hosts ${foldHosts(l.hosts)}, ${l.mgmtSubnet})`;
  const which =
    up.length === 1
      ? `the lab up here is ${described(up[0]!)}: add --name ${up[0]!.name}`
      : `labs up here: ${up.map(described).join(', ')}: add --name with one of ${up.map((l) => l.name).join(', ')}`;
  return `without --name the lab is "${DEFAULT_LAB_NAME}", which is not up; ${which} (or start the default lab with: ${startIt})`;
}

/** The plan of a lab that is up, or a usage error naming the labs that are and how to start this one. */
export async function requireLab(name: string): Promise<LabPlan> {
  checkLabName(name);
  const state = await readLabState(name);
  if (!state) throw new UsageError(labNotUpMessage(name, await labSummaries()));
  if (state.status !== 'up')
    throw new UsageError(`lab ${name} did not finish starting; remove it with: ibfleet lab down${labNameOption(name)}`);
  return state.plan;
}
