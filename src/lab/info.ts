/** What a running lab offers its users and tests: paths, and per host its address, manager and namespace. Pure. */
import type { Manager } from '../inventory/model.js';
import { hostPaths, labPaths } from './names.js';
import { runsSystemd, type LabPlan } from './plan.js';
import type { SuiteVersions } from './roots.js';
import { formatVersions, type Suite } from './suites.js';

export interface LabHostInfo {
  readonly id: number;
  readonly name: string;
  /** Management (SSH) address. */
  readonly address: string;
  readonly manager: Manager;
  /** Whether the host emulates one systemd runs (false: lab up --without-systemd, or a lab without network daemons). */
  readonly systemd: boolean;
  /** As a new machine arrives: its fabric NICs carry no address and nothing configures them (lab up --fresh). */
  readonly fresh: boolean;
  readonly interfaces: readonly string[];
  /** Fabric NICs in order: interface and IPoIB address. */
  readonly nics: readonly { readonly iface: string; readonly address: string; readonly prefixLength: number }[];
  /** Network namespace: `ip netns exec <namespace> ...` reaches the host's network. */
  readonly namespace: string;
  /** sshd's log, with one "Accepted publickey" line per login. */
  readonly sshdLog: string;
  /** The Debian release whose root the host runs on (lab up --suite); absent: the machine's own /usr. */
  readonly suite?: Suite;
  /** On a suite: its managers' versions, as `NM 1.52.1, systemd 257.13, …`. */
  readonly versions?: string;
}

export interface LabInfo {
  readonly name: string;
  readonly dir: string;
  readonly inventoryPath: string;
  readonly knownHostsPath: string;
  readonly identityPath: string;
  readonly mgmtSubnet: string;
  readonly controllerAddress: string;
  /** The lab's one link in the machine's own namespace. */
  readonly rootLink: string;
  /** Whether the hosts run their network managers (false: lab up --no-managers; then no reboot either). */
  readonly managers: boolean;
  readonly hosts: readonly LabHostInfo[];
}

export function labInfo(plan: LabPlan, roots?: SuiteVersions): LabInfo {
  const paths = labPaths(plan.name);
  return {
    name: plan.name,
    dir: paths.dir,
    inventoryPath: paths.inventory,
    knownHostsPath: paths.knownHosts,
    identityPath: paths.identity,
    mgmtSubnet: plan.mgmtSubnet,
    controllerAddress: plan.controllerAddress,
    rootLink: plan.rootLink,
    managers: plan.networkDaemons,
    hosts: plan.hosts.map((h) => ({
      id: h.id,
      name: h.name,
      address: h.address,
      manager: h.manager,
      systemd: runsSystemd(h) && plan.networkDaemons,
      fresh: h.fresh === true,
      interfaces: h.nics.map((n) => n.iface),
      nics: h.nics.map((n) => ({ iface: n.iface, address: n.address, prefixLength: n.prefixLength })),
      namespace: h.namespace,
      sshdLog: hostPaths(plan.name, h.id).sshdLog,
      ...(h.suite !== undefined ? { suite: h.suite, versions: formatVersions(roots?.[h.suite] ?? {}) } : {}),
    })),
  };
}
