/**
 * `lab up`'s run (src/commands/lab-up.ts): its options read into the lab's own terms (host sets,
 * per-host assignments; a usage error names the option), the source inventory chosen, the lab
 * brought up (src/lab/), and what came up printed — or its --json document.
 */
import type { Command } from 'commander';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Fleet } from '../inventory/model.js';
import { formatLabUpText, labUpJson } from '../lab/format.js';
import {
  parseInterfaceAssignments,
  parseLabHosts,
  parseLinkLayers,
  parseManagerAssignments,
  parseNicCounts,
} from '../lab/options.js';
import { parseSuiteAssignments } from '../lab/suites.js';
import { defaultFleet, labUp, type LabUpOptions } from '../lab/up.js';
import type { RunVerdict } from '../vocabulary.js';
import { parseGlobals, readFleet, type Io } from './context.js';
import { labOutput } from './lab-command.js';
import { selfCommand } from './self-command.js';

/** `lab up`'s options as its schema checked them: still the words the user typed. */
export interface LabUpRequest {
  readonly hosts?: string | undefined;
  readonly name: string;
  readonly mgmtSubnet?: string | undefined;
  readonly manager: readonly string[];
  readonly interfaces: readonly string[];
  readonly nics: readonly string[];
  readonly managers: boolean;
  readonly withoutRdma?: string | undefined;
  readonly withoutSystemd?: string | undefined;
  readonly fresh?: string | undefined;
  readonly withoutPython3?: string | undefined;
  readonly withFping?: string | undefined;
  readonly suite: readonly string[];
  readonly linkLayer: readonly string[];
}

export async function runLabUp(io: Io, cmd: Command, opts: LabUpRequest): Promise<RunVerdict> {
  const out = await labOutput(io, cmd);
  const suites = parseSuiteAssignments(opts.suite);
  const fleet = await sourceFleet(cmd, io);
  const started = performance.now();
  const onStep = out.json ? undefined : (text: string) => void io.stderr.write(`lab ${opts.name}: ${text}\n`);
  const info = await labUp(labUpOptions(opts, fleet, suites, onStep));
  const elapsed = performance.now() - started;
  if (out.json) out.writeJson(labUpJson(info, elapsed));
  else io.stdout.write(formatLabUpText(info, elapsed, selfCommand(io.env)));
  return 'ok';
}

/** The request in the lab's terms; each option is read in this order, so the first wrong one is named. */
function labUpOptions(
  opts: LabUpRequest,
  fleet: Fleet,
  suites: NonNullable<LabUpOptions['suites']>,
  onStep: ((text: string) => void) | undefined,
): LabUpOptions {
  return {
    name: opts.name,
    fleet,
    managers: parseManagerAssignments(opts.manager),
    interfaces: parseInterfaceAssignments(opts.interfaces),
    nics: parseNicCounts(opts.nics),
    suites,
    linkLayers: parseLinkLayers(opts.linkLayer),
    networkDaemons: opts.managers,
    ...(opts.hosts !== undefined ? { hosts: parseLabHosts(opts.hosts) } : {}),
    ...(opts.mgmtSubnet !== undefined ? { mgmtSubnet: opts.mgmtSubnet } : {}),
    ...(opts.withoutRdma !== undefined ? { noRdma: parseLabHosts(opts.withoutRdma, '--without-rdma') } : {}),
    ...(opts.withoutSystemd !== undefined
      ? { noSystemd: parseLabHosts(opts.withoutSystemd, '--without-systemd') }
      : {}),
    ...(opts.fresh !== undefined ? { fresh: parseLabHosts(opts.fresh, '--fresh') } : {}),
    ...(opts.withoutPython3 !== undefined
      ? { noPython3: parseLabHosts(opts.withoutPython3, '--without-python3') }
      : {}),
    ...(opts.withFping !== undefined ? { fping: parseLabHosts(opts.withFping, '--with-fping') } : {}),
    ...(onStep ? { onStep } : {}),
  };
}

/**
 * The inventory the lab takes names, roles, interfaces and pairs from: -i / $IBFLEET_INVENTORY when
 * given, else inventory/fleet.yaml here, else the seeds' example shipped with ibfleet — so `lab up`
 * works from any directory.
 */
async function sourceFleet(cmd: Command, io: Io): Promise<Fleet> {
  const globals = parseGlobals(cmd.optsWithGlobals(), io);
  const explicit =
    (cmd.optsWithGlobals() as { inventory?: string }).inventory !== undefined || io.env.IBFLEET_INVENTORY !== undefined;
  if (explicit || existsSync(resolve(io.cwd, globals.inventory))) return readFleet(globals, io);
  return defaultFleet();
}
