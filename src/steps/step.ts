/**
 * A playbook step as a module: np's tasks-as-data and pyinfra's operations, applied to a
 * provisioning engine. A step says what it is (its name, its parameters, the kinds of change it
 * makes, the paths it may own, the facts it needs the probe to read), and, given its parameters,
 * what it contributes to each of the engine's outputs: the host's files, the routing script, the
 * findings that make a deploy plan, a verification and a status report, the lines a change script
 * runs, what status says beyond the routing, and how its change is undone (rollback, and the
 * restore after a failed verification). The engine (src/plan, src/render) iterates over the
 * playbook's steps and knows none of them by name: a new capability is one new module and one
 * line in registry.ts. Everything here is pure.
 */
import type * as z from 'zod';
import type { Fact } from '../facts/fact.js';
import type { HostFacts } from '../facts/host-facts.js';
import type { NmProfile } from '../facts/nm-facts.js';
import type { Fleet, Host, HostOverride, Manager, Nic } from '../inventory/model.js';
import type { RenderedFile } from '../script/rendered-file.js';
import type { Change, ChangeAction, HostResult, NicFabric } from '../vocabulary.js';

/** A fabric NIC and the connection profile NetworkManager activates it with. */
export interface NicProfile {
  readonly nic: Nic;
  readonly profile: NmProfile;
}

/** Where the host's netplan configuration defines a NIC: its device type and id (`ethernets`, `ib0`). */
export interface NetplanDevice {
  readonly iface: string;
  readonly type: string;
  readonly id: string;
}

/**
 * Who makes the routing state and brings it back: ibfleet's routing script (`script`: run by deploy,
 * and by the hooks and the repair timer where the playbook persists), or the network manager's own
 * configuration (native persistence) — a NetworkManager connection profile per NIC, or ibfleet's
 * netplan file for the NICs' devices. Decided per host by the step that persists (`persistence`).
 */
export type Persistence =
  | { readonly kind: 'script' }
  | { readonly kind: 'networkmanager'; readonly profiles: readonly NicProfile[] }
  | { readonly kind: 'netplan'; readonly devices: readonly NetplanDevice[] };

export const SCRIPT_PERSISTENCE: Persistence = { kind: 'script' };

/**
 * The hand-off from links to persist: how the manager brings the NIC up once links' change ran, in
 * the manager's own terms — the connection profile (NetworkManager), or the device of ibfleet's
 * netplan file — which native persistence puts the NIC's routing into.
 */
export type ManagerBinding =
  | { readonly manager: 'networkmanager'; readonly profile: NmProfile }
  | { readonly manager: 'netplan'; readonly device: NetplanDevice };

/**
 * What a step's change makes of a fabric NIC before anything else of the change needs it (the
 * links step: the NIC's convention address, in the manager's configuration). The engine decides
 * with it what the probe cannot show yet: an interface without its address (or a P_Key child not
 * yet created) is no blocker when a step provides it, and the persisting step finds the profile or
 * netplan device the NIC will be brought up with.
 */
export interface NicProvision {
  readonly iface: string;
  /** The change creates the interface (a P_Key child of an interface the host has). */
  readonly creates: boolean;
  /** What brings the NIC up once the change ran (a profile's uuid is known before): what persist binds the routing to. */
  readonly binding?: ManagerBinding;
}

/** Whether the steps' provisions make a blocker moot: the NIC will carry its address (and exist) once the change ran. */
export function providedFor(blocker: Blocker, provisions: readonly NicProvision[]): boolean {
  const provision = provisions.find((p) => p.iface === blocker.iface);
  if (!provision) return false;
  return blocker.kind === 'nic-unaddressed' || (blocker.kind === 'nic-missing' && provision.creates);
}

/** What rendering a host's files needs: no probe (`ibfleet render` has none). */
export interface RenderContext {
  readonly host: Host;
  readonly fleet: Fleet;
  /** The playbook's name, which every generated file's header names. */
  readonly playbook: string;
  readonly manager: Manager;
  readonly persistence: Persistence;
  /** What the host's probe found, when a host was asked: a step may leave out what the host cannot run (a timer without systemd). */
  readonly facts?: HostFacts;
  /** What the playbook's steps provide the NICs before the routing applies (Step.provides); none where no host was asked. */
  readonly provisions?: readonly NicProvision[];
}

/** What deciding about a host needs: the above and what its probe found. */
export interface HostContext extends RenderContext {
  readonly facts: HostFacts;
}

/** What reading a host needs, whatever the playbook and manager: the host and its facts (status's extras, rollback, restore). */
export interface FactsContext {
  readonly host: Host;
  readonly fleet: Fleet;
  readonly facts: HostFacts;
}

/**
 * What a finding is about, typed, so the engine decides on it and never on its text: one of
 * ibfleet's files (to install or replace), a file to take away, an aspect of a NIC (`table`,
 * `rule`, `profile`, …: the step that checks it names its aspects), or an aspect of the host.
 */
export type Subject =
  | { readonly kind: 'file'; readonly path: string }
  | { readonly kind: 'stale'; readonly path: string }
  | { readonly kind: 'nic'; readonly iface: string; readonly aspect: string }
  | { readonly kind: 'host'; readonly aspect: string };

export interface Finding {
  /** Stable label, e.g. `rule ib0`, `file /etc/ibfleet/ibfleet-routes` (checks show it). */
  readonly id: string;
  readonly subject: Subject;
  readonly ok: boolean;
  /** The state found, phrased as drift when not ok ("ib1: main-table route to 172.16.0.0/16 is back"). */
  readonly detail: string;
  /** What deploy changes to fix it; undefined for checks only verification can confirm. */
  readonly fix: Change | undefined;
}

/**
 * Why a host cannot take the playbook at all: nothing is changed. Typed so that status can tell
 * which a port's state already explains (an interface down behind an ACTIVE port).
 */
export interface Blocker {
  /**
   * `nic-unaddressed`: the NIC carries no address of the fabric (up without one, or down without
   * its address), which a step may provide (NicProvision); `nic-address`: it carries another, or
   * its own where it does not belong; `nic-down`: it carries its address but the link is down;
   * `step`: a step refuses what the playbook asks of this host (the hardware cannot take it).
   */
  readonly kind:
    | 'probe'
    | 'not-root'
    | 'tool'
    | 'nic-missing'
    | 'nic-down'
    | 'nic-unaddressed'
    | 'nic-address'
    | 'persistence'
    | 'step';
  readonly iface?: string;
  readonly message: string;
}

/** A file a step may own on a host, and the kind of change installing or removing it is. */
export interface OwnedPath {
  readonly path: string;
  readonly kind: string;
  /**
   * Whether the host gets this file is decided from its probe (the step's `decidedOnHost`, for one
   * file): `ibfleet export ansible`'s role neither writes nor removes it.
   */
  readonly decidedOnHost?: boolean;
}

/**
 * A kind of change and the words displays count it with (`+2 rules`, `hook installed`). Where
 * summaries tell it follows from where it is declared (registry.ts, CHANGE_KINDS): a step lists its
 * kinds in the order it tells them, and the steps come in the order a playbook runs them.
 */
export interface ChangeKindSpec {
  readonly kind: string;
  /** Singular and plural. */
  readonly noun: readonly [string, string];
  /** counted: `+2 rules`, `8 sysctls set` (the fix itself, told first); file: named with what happened (`hook installed`). */
  readonly shape: 'counted' | 'file';
}

/**
 * A step's part of the routing program's data (render/routes-data.ts): lines of routes.conf, each
 * `KIND FIELD...`, which the program (host/ibfleet-routes, the same on every host) reads, checks and
 * acts on — `main-routes remove`, `sysctl rp_filter 2`. What the program does with each kind is its
 * own, named function (nic_routing, set_sysctl, raise_neigh, …); a step the playbook leaves out has
 * no line, and the program does nothing of it.
 */
export type RoutesData = readonly string[];

/** What the engine's deploy plan knows when a step writes its part of the change. */
export interface ApplyInput {
  /** Findings that failed (what the change must fix). */
  readonly failing: readonly Finding[];
  readonly write: readonly RenderedFile[];
  readonly remove: readonly string[];
}

/** A step's part of the change script (render/apply-script.ts), in the order the script runs them. */
export interface ApplyPart {
  /** A staged file's check before it goes live (netplan generate); sets `status` to refuse it. */
  readonly validate?: readonly { readonly path: string; readonly lines: (staged: string) => readonly string[] }[];
  /** What to do in the kernel directly where no routing script runs (native persistence). */
  readonly kernel?: readonly string[];
  /** What the network manager is told; run under the routing script's lock. */
  readonly manager?: readonly string[];
  /**
   * What the network manager is told where it runs ibfleet's hook itself before it returns
   * (ifupdown's `ifup` runs if-up.d): after the files, before the change takes the routing script's
   * lock — the hook's routing script would wait on it.
   */
  readonly unlocked?: readonly string[];
  /** After the files and the routing script (systemd told about changed units). */
  readonly after?: readonly string[];
  /** Kept for the restore: what this step told the host (restore's `memo`). */
  readonly memo?: unknown;
}

/** Status's findings beyond the routing. */
export interface StatusPart {
  /** What makes the host not ok, said first (a port that cannot carry traffic). */
  readonly problems?: readonly string[];
  readonly warnings?: readonly string[];
  readonly fabric?: readonly NicFabric[];
  /** A blocker this step's problems already explain: status leaves it out. */
  explains?(blocker: Blocker): boolean;
}

/** What rendering shows beyond the files: commands deploy runs, and notes on what only the host decides. */
export interface PreviewPart {
  readonly commands?: readonly { readonly title: string; readonly lines: readonly string[] }[];
  readonly notes?: readonly string[];
}

/**
 * A step with its parameters: what it contributes to a host, each part optional — the facts it
 * needs, its files and its part of the routing program's data, its findings and its part of the
 * change. What only the step that persists answers (how the routing lasts on a host, per manager)
 * is not here: persist/persister.ts, which the playbook holds (Playbook.persister).
 */
export interface Step {
  readonly name: string;
  /**
   * What this step's change gives the host's NICs before the rest of the change runs (its address,
   * the profile that carries it): asked before anything else, with the probe's facts. Its apply
   * part's `manager` lines make it so, and wait for it, before the routing script runs.
   */
  provides?(ctx: Omit<HostContext, 'persistence' | 'provisions'>): readonly NicProvision[];
  /** What this step needs the host's probe to read beyond what every probe reads (ProbeOptions.wants): the names its facts know. */
  probeWants?(host: Host): readonly string[];
  files?(ctx: RenderContext): readonly RenderedFile[];
  routesData?(ctx: RenderContext): RoutesData;
  preview?(ctx: RenderContext): PreviewPart;
  notes?(ctx: HostContext): readonly string[];
  /** Per fabric NIC: what holds and what does not. */
  nicFindings?(ctx: HostContext, nic: Nic): readonly Finding[];
  /** Why the host cannot take what this step is asked (connected mode on an HCA that has none): nothing is changed, status names it. */
  blockers?(ctx: HostContext): readonly Blocker[];
  /**
   * For the host: `before` come ahead of the NICs' findings (a NIC's configuration in its manager,
   * from which its kernel state follows), `after` behind the files'. `files`: every file rendered.
   */
  hostFindings?(
    ctx: HostContext,
    files: readonly RenderedFile[],
  ): { readonly before?: readonly Finding[]; readonly after?: readonly Finding[] };
  /** Why one of ibfleet's files differs, where this step can tell it is no hand edit (another tableBase); undefined where it cannot. */
  modifiedWhy?(ctx: HostContext, file: RenderedFile): string | undefined;
  apply?(ctx: HostContext, input: ApplyInput): ApplyPart;
  status?(ctx: FactsContext): StatusPart;
  /**
   * Why `ibfleet export ansible`, which has no probe, cannot do what this step is asked on the host
   * (what it does is decided there, from the probe); undefined: the exported role does it.
   */
  exportRefusal?(host: Host): string | undefined;
  /**
   * The program the exported role runs on the host for this step, before the routing (a shell script
   * whose host functions come with it): what the step decides there, from what the host shows, in
   * place of deploy's probe. Undefined: the step has nothing of its own to run.
   */
  exportProgram?(host: Host, manager: Manager, playbook: string): string | undefined;
  /** Status over the selected hosts together (the fleet's ports compared). */
  fleet?(results: readonly HostResult[]): FleetPart;
}

/** Status over the selected hosts together: warnings, and what makes the run fail (ports in another subnet). */
export interface FleetPart {
  readonly warnings: readonly string[];
  readonly problems: readonly string[];
}

/** Lines of a rollback or restore script, by when they run. */
export interface UndoLines {
  /** Before ibfleet's files are taken away (a timer stopped). */
  readonly beforeFiles?: readonly string[];
  /** After the files (systemd reloads its units). */
  readonly afterFiles?: readonly string[];
  /** The network manager's configuration (under the routing script's lock). */
  readonly manager?: readonly string[];
  /** The kernel state: rules, tables, routes, settings. */
  readonly kernel?: readonly string[];
  /** Last, before the closing probe. */
  readonly last?: readonly string[];
}

/** What rolling a host back needs: the host as it is, and the NICs whose convention address the rollback takes away (Undo.withdraws). */
export interface RollbackContext extends FactsContext {
  readonly withdrawn: readonly string[];
}

/** Taking back what a step did, whatever playbook did it: rollback removes everything ibfleet ever did. */
export interface Undo {
  findings(ctx: RollbackContext): readonly Finding[];
  lines(ctx: FactsContext): UndoLines;
  /** The NICs whose convention address this rollback removes (a fresh machine's NICs are fresh again): no route comes back through them. */
  withdraws?(ctx: FactsContext): readonly string[];
}

/** Putting back what a change of this step did, after the change failed verification. */
export interface Restore {
  /**
   * The part of the host this step can change, as comparable text: `[aspect, value]` (what differs
   * after a restore is said). `before`: the probe before the change, when `ctx.facts` is a later
   * one — which aspects there are may depend on what the host said then (the change rewrites it).
   */
  snapshot(ctx: FactsContext, before?: HostFacts): readonly (readonly [string, string])[];
  /** The lines that put the host back as `ctx.facts` (the probe before the change) found it; `memo`: what the step's apply kept. */
  lines(ctx: FactsContext, memo: unknown): UndoLines;
}

/**
 * A step module: what it is, and `use(params)` for what it does with them. `P` is what its schema
 * gives (the playbook's parameters, defaults filled in).
 */
export interface StepModule<P = unknown> {
  readonly name: string;
  /** One line: what the step does (help, errors that list the steps). */
  readonly summary: string;
  readonly params: z.ZodType<P>;
  readonly kinds?: readonly ChangeKindSpec[];
  /** Every path the step may install on a host, with the kind of change it is: the probe tracks them, rollback removes them. */
  readonly paths?: readonly OwnedPath[];
  /** What the probe must read for it beyond the common facts. */
  readonly facts?: readonly Fact<unknown>[];
  /**
   * Its files are decided on each host from the probe (which NICs lack their address, the profile
   * bound to one): `ibfleet export ansible`'s role neither writes nor removes them, whatever the
   * playbook — they stay as deploy left them.
   */
  readonly decidedOnHost?: boolean;
  /**
   * Parameters a host may override in the inventory (`links:` on the host or in `defaults`):
   * checked when the inventory is loaded, read back from `host.overrides[key]`.
   */
  readonly hostOverride?: HostOverride;
  readonly undo?: Undo;
  readonly restore?: Restore;
  use(params: P): Step;
}

/** `change('rule', 'add', 'ib1', 'ib1: rule …')`. */
export function change(kind: string, action: ChangeAction, subject: string, text: string): Change {
  return { kind, action, subject, text };
}

/** A finding about one aspect of a NIC. */
export function nicFinding(
  nic: Pick<Nic, 'iface'>,
  aspect: string,
  id: string,
  ok: boolean,
  detail: string,
  fix?: Change,
): Finding {
  return { id, subject: { kind: 'nic', iface: nic.iface, aspect }, ok, detail, fix: ok ? undefined : fix };
}

/** Whether a finding is about `aspect` of this NIC. */
export function isAbout(finding: Finding, iface: string, aspect: string): boolean {
  return finding.subject.kind === 'nic' && finding.subject.iface === iface && finding.subject.aspect === aspect;
}
