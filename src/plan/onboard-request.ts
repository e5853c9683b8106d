/**
 * An onboard request and what follows from it without a machine being asked: the checks that need
 * no host (a UsageError, exit 2, otherwise), the provisional inventory entries discovery starts
 * from, and the entries to write once discovery has named the interfaces. Pure.
 */
import { UsageError } from '../errors.js';
import type { InventoryAddition } from '../inventory/entry.js';
import { hostById, type Fleet, type Manager } from '../inventory/model.js';
import {
  chooseName,
  ONBOARD_ROLES,
  onboardEntry,
  onboardName,
  type HostDiscovery,
  type OnboardRole,
} from './onboard.js';

export interface OnboardRequest {
  readonly owner: string;
  readonly cpu: number;
  readonly mem: number;
  readonly cpuAddress?: string | undefined;
  readonly memAddress?: string | undefined;
  /** SSH user for both machines; non-root users work through sudo. */
  readonly user?: string | undefined;
  readonly cpuManager?: Manager | undefined;
  readonly memManager?: Manager | undefined;
  /** --cpu-name / --mem-name: the inventory name, instead of the machine's own hostname. */
  readonly cpuName?: string | undefined;
  readonly memName?: string | undefined;
}

function roleNameFlag(request: OnboardRequest, role: OnboardRole): string | undefined {
  return role === 'cpu' ? request.cpuName : request.memName;
}

/** The name onboard writes for a host (chooseName), from what is known so far. */
function nameFor(request: OnboardRequest, role: OnboardRole, fleet: Fleet, hostname: string | undefined): string {
  const id = roleId(request, role);
  const other = roleId(request, role === 'cpu' ? 'mem' : 'cpu');
  const taken = new Set(fleet.hosts.filter((h) => h.id !== id && h.id !== other).map((h) => h.name));
  return chooseName({
    flag: roleNameFlag(request, role),
    inventory: hostById(fleet, id)?.name,
    hostname,
    taken,
    role,
    id,
  });
}

/**
 * Whether the host's name waits for discovery: no --cpu-name / --mem-name and no inventory entry,
 * so it will be what the machine calls itself. Until then it has no name worth printing — a
 * provisional cpuserverN would be contradicted by the nodeN written a moment later.
 */
export function nameWaitsForDiscovery(request: OnboardRequest, role: OnboardRole, fleet: Fleet): boolean {
  return roleNameFlag(request, role) === undefined && hostById(fleet, roleId(request, role)) === undefined;
}

export function roleId(request: OnboardRequest, role: OnboardRole): number {
  return role === 'cpu' ? request.cpu : request.mem;
}

function roleAddress(request: OnboardRequest, role: OnboardRole): string | undefined {
  return role === 'cpu' ? request.cpuAddress : request.memAddress;
}

export function roleManagerFlag(request: OnboardRequest, role: OnboardRole): Manager | undefined {
  return role === 'cpu' ? request.cpuManager : request.memManager;
}

function pairOf(request: OnboardRequest) {
  return { owner: request.owner, cpu: request.cpu, mem: request.mem };
}

/**
 * The pair as far as it is known before discovery (interfaces unknown), after every check that
 * can be made without contacting anything.
 */
export function provisionalAddition(request: OnboardRequest, fleet: Fleet, file: string): InventoryAddition {
  if (request.cpu === request.mem)
    throw new UsageError(`--cpu and --mem are both host ${request.cpu}; a pair is two different machines`);
  if (request.cpuAddress !== undefined && request.cpuAddress === request.memAddress) {
    throw new UsageError(
      `--cpu-address and --mem-address are both ${request.cpuAddress}; a pair is two different machines`,
    );
  }
  const hosts = ONBOARD_ROLES.map((role) => {
    const id = roleId(request, role);
    const address = roleAddress(request, role);
    if (!hostById(fleet, id) && address === undefined) {
      throw new UsageError(
        `host ${id} is not in ${file}, so onboard needs its SSH address: add --${role}-address ADDRESS (the management address, not a 172.16 fabric one)`,
      );
    }
    return onboardEntry({
      id,
      role,
      owner: request.owner,
      name: nameFor(request, role, fleet, undefined),
      address,
      user: request.user,
      managerFlag: roleManagerFlag(request, role),
      discovery: undefined,
    });
  });
  if (request.cpuName !== undefined && request.cpuName === request.memName)
    throw new UsageError(`--cpu-name and --mem-name are both ${request.cpuName}; host names are unique`);
  return { hosts, pair: pairOf(request) };
}

/** The pair as discovery found it: the entries onboard writes, named as the machines call themselves unless told otherwise. */
export function discoveredAddition(
  request: OnboardRequest,
  discovered: readonly HostDiscovery[],
  fleet: Fleet,
): InventoryAddition {
  const hosts = discovered.map((d) =>
    onboardEntry({
      id: d.id,
      role: d.role,
      owner: request.owner,
      name: nameFor(request, d.role, fleet, d.hostname),
      address: roleAddress(request, d.role),
      user: request.user,
      managerFlag: roleManagerFlag(request, d.role),
      discovery: d,
    }),
  );
  // Two machines that call themselves the same: the second keeps the lab's name.
  if (hosts.length === 2 && hosts[0]!.name === hosts[1]!.name)
    hosts[1] = { ...hosts[1]!, name: onboardName(discovered[1]!.role, hosts[1]!.id) };
  return { hosts, pair: pairOf(request) };
}
