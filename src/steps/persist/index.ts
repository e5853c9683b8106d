/**
 * The `persist` step: the routing comes back after a reboot and after a NIC goes down and up.
 *
 * `mode: hook` installs a hook for the host's network manager, which runs the routing script
 * whenever a NIC comes up (it works with every manager version the seeds mention); `mode: native`
 * writes the tables and rules into the manager's own configuration (NetworkManager connection
 * properties, a netplan file) where the manager's version allows, and falls back to the hook with
 * the reason where it does not (persistence.ts).
 *
 * The hooks run on the events a manager announces; some change the routing without any (an admin
 * link flap inside NetworkManager's carrier grace, a DHCP renewal). A systemd timer re-applies the
 * routing script every repairEvery seconds (idempotent: it changes nothing when the state is
 * right), which bounds how long such drift lasts. 0 installs no timer. Pure.
 */
import { z } from 'zod';
import { MANAGERS, type Host, type Manager } from '../../inventory/model.js';
import { factOf, type HostFacts } from '../../facts/host-facts.js';
import type { RenderedFile } from '../../script/rendered-file.js';
import { SCRIPT_PERSISTENCE, type ApplyInput, type ApplyPart, type HostContext, type Persistence, type PreviewPart, type RenderContext, type StepModule } from '../step.js';
import { hookPath, renderHook } from './hooks.js';
import { renderNativeSteps } from './native-apply.js';
import { profileFindings, staleFindings, timerFinding } from './native-assess.js';
import { renderNetplanFile, renderNetplanValidation } from './native-netplan.js';
import { NM_NATIVE_SINCE, nmModifyCommand, nmReapplyCommand, nmRoutingRule } from './native-nm.js';
import { planNativeSteps } from './native-plan.js';
import { HOOK_PATHS, NETPLAN_FILE_PATH, REPAIR_DROP_IN_PATH, REPAIR_PATHS, REPAIR_SERVICE_PATH, REPAIR_TIMER_PATH } from './paths.js';
import { chooseNative } from './persistence.js';
import { renderRepairDropIn, renderRepairService, renderRepairTimer } from './repair.js';
import { NO_SYSTEMD_NOTE, repairActivation, SYSTEMD_FACT } from './systemd.js';
import { persistRestore, persistUndo } from './undo.js';
import { formerRoutingOf } from '../policy-routing/former.js';

const params = z.strictObject({
  mode: z.enum(['hook', 'native'], { error: 'mode is hook (a hook for the host\'s network manager, the default) or native (its own configuration)' }).default('hook'),
  repairEvery: z
    .int({ error: 'repairEvery is whole seconds, 0 (no timer) or 5..3600' })
    .refine((v) => v === 0 || (v >= 5 && v <= 3600), { error: 'repairEvery is 0 (no timer) or 5..3600 seconds' })
    .default(30),
});

export type PersistParams = z.infer<typeof params>;

/** What the chosen manager needs on the host for its hook to ever run. */
function managerPrerequisite(manager: Manager, facts: HostFacts): string | undefined {
  switch (manager) {
    case 'netplan':
      return facts.dirs.has('/etc/networkd-dispatcher') || facts.tools.has('networkd-dispatcher')
        ? undefined
        : 'networkd-dispatcher is not installed, so a routable.d hook would never run; install it (apt install networkd-dispatcher) or set the host\'s manager';
    case 'networkmanager':
      return facts.dirs.has('/etc/NetworkManager/dispatcher.d') || facts.tools.has('NetworkManager')
        ? undefined
        : 'NetworkManager\'s dispatcher directory /etc/NetworkManager/dispatcher.d is missing; is NetworkManager installed?';
    case 'ifupdown':
      return facts.dirs.has('/etc/network/if-up.d') || facts.tools.has('ifup') ? undefined : '/etc/network/if-up.d is missing; is ifupdown installed?';
  }
}

/** Where the routing script persists, the playbook wants the periodic repair and the probe found no systemd to time it. */
function withoutSystemd(ctx: RenderContext, { repairEvery }: PersistParams): boolean {
  return repairEvery > 0 && ctx.persistence.kind === 'script' && ctx.facts !== undefined && factOf(ctx.facts, SYSTEMD_FACT).runs === false;
}

function files(ctx: RenderContext, p: PersistParams): RenderedFile[] {
  const { repairEvery } = p;
  const { host, playbook, manager, persistence } = ctx;
  if (persistence.kind === 'netplan') return [{ path: NETPLAN_FILE_PATH, mode: 0o600, content: renderNetplanFile(host, ctx.fleet, playbook, persistence.devices), role: 'netplan', manager, kind: 'netplan-file', routing: true }];
  if (persistence.kind === 'networkmanager') return [];
  const out: RenderedFile[] = [{ path: hookPath(manager), mode: 0o755, content: renderHook(manager, host, playbook), role: 'hook', manager, kind: 'hook', label: `hook ${hookPath(manager)}`, stageOutside: true }];
  // A host without systemd has no timers (a container, a chroot-like host): the hooks alone persist the routing.
  if (repairEvery > 0 && !withoutSystemd(ctx, p)) {
    const unit = (path: string, content: string): RenderedFile => ({ path, mode: 0o644, content, role: 'repair', kind: 'timer', label: `repair unit ${path}` });
    out.push(unit(REPAIR_SERVICE_PATH, renderRepairService(host, playbook)), unit(REPAIR_TIMER_PATH, renderRepairTimer(host, playbook, repairEvery)), unit(REPAIR_DROP_IN_PATH, renderRepairDropIn(host, playbook)));
  }
  return out;
}

/** How `ibfleet render` shows native persistence, where only the host knows its profiles and netplan devices. */
function previewPersistence(manager: Manager, { mode }: PersistParams): Persistence {
  if (mode === 'hook') return SCRIPT_PERSISTENCE;
  if (manager === 'networkmanager') return { kind: 'networkmanager', profiles: [] };
  if (manager === 'netplan') return { kind: 'netplan', devices: [] };
  return SCRIPT_PERSISTENCE;
}

/** The placeholder render shows for what only the host's probe knows. */
function profilePlaceholder(iface: string): string {
  return `<uuid of the active connection of ${iface}>`;
}

function nmCommands(host: Host): NonNullable<PreviewPart['commands']>[number] {
  return {
    title: `nmcli (NetworkManager ${NM_NATIVE_SINCE}+: each fabric NIC's active connection profile)`,
    lines: host.nics.flatMap((nic) => [
      nmModifyCommand({ iface: nic.iface, uuid: profilePlaceholder(nic.iface), name: nic.iface, routeTable: nic.table, removeRules: [], addRules: [nmRoutingRule(nic)] }),
      nmReapplyCommand(nic.iface),
    ]),
  };
}

function preview(ctx: RenderContext, { mode }: PersistParams): PreviewPart {
  if (mode === 'hook') return {};
  switch (ctx.manager) {
    case 'networkmanager':
      return {
        commands: [nmCommands(ctx.host)],
        notes: [
          `native persistence: deploy sets each fabric NIC's active connection profile with the nmcli commands below (the uuid found on the host; ibfleet deploy --dry-run --show-scripts shows them exactly). NetworkManager before ${NM_NATIVE_SINCE} gets the hook files instead (ibfleet render with the hook playbook shows them).`,
        ],
      };
    case 'netplan':
      return {
        notes: [
          `native persistence: ${NETPLAN_FILE_PATH} as shown when the host's netplan defines each NIC as ethernets.<interface>; deploy writes the device type and id the host's own netplan file gives each NIC (deploy --dry-run --show-scripts shows it), or the hook files where netplan does not define a NIC by itself. netplan cannot keep the kernel's subnet route out of main: it stays, and the rules come first.`,
        ],
      };
    case 'ifupdown':
      return { notes: ["native persistence on ifupdown is ifupdown's own if-up.d hook: the files are the hook playbook's"] };
  }
}

function apply(ctx: HostContext, input: ApplyInput): ApplyPart {
  const native = planNativeSteps(ctx, input);
  return {
    // A netplan file is renamed into place only once netplan generate accepts it with the host's own.
    validate: [{ path: NETPLAN_FILE_PATH, lines: renderNetplanValidation }],
    manager: native ? renderNativeSteps(native) : [],
    after: repairActivation(input.write.map((f) => f.path), input.remove),
    memo: native,
  };
}

export const persist: StepModule<PersistParams> = {
  name: 'persist',
  summary: "makes the routing last: the hook for the host's network manager and a repair timer, or (mode: native) the manager's own configuration",
  params,
  kinds: [
    { kind: 'nm-profile', noun: ['connection profile', 'connection profiles'], shape: 'counted', rank: 10 },
    { kind: 'hook', noun: ['hook', 'hooks'], shape: 'file', rank: 70 },
    { kind: 'netplan-file', noun: ['netplan file', 'netplan files'], shape: 'file', rank: 90 },
    { kind: 'timer', noun: ['timer unit', 'timer units'], shape: 'file', rank: 100 },
  ],
  paths: [...MANAGERS.map((m) => ({ path: HOOK_PATHS[m], kind: 'hook' })), ...REPAIR_PATHS.map((path) => ({ path, kind: 'timer' })), { path: NETPLAN_FILE_PATH, kind: 'netplan-file' }],
  facts: [SYSTEMD_FACT],
  undo: persistUndo,
  restore: persistRestore,
  use: (p) => ({
    name: 'persist',
    prerequisite: managerPrerequisite,
    persistence: (ctx) => (p.mode === 'native' ? chooseNative(ctx.host, ctx.manager, ctx.facts, ctx.provisions) : { persistence: SCRIPT_PERSISTENCE, notes: [], blockers: [] }),
    previewPersistence: (manager) => previewPersistence(manager, p),
    installedManager: (facts) => {
      const installed = MANAGERS.filter((m) => facts.files.has(HOOK_PATHS[m]));
      return installed.length === 1 ? installed[0] : undefined;
    },
    files: (ctx) => files(ctx, p),
    notes: (ctx) => (withoutSystemd(ctx, p) ? [NO_SYSTEMD_NOTE] : []),
    statusNotes: (ctx) => (withoutSystemd(ctx, p) ? [NO_SYSTEMD_NOTE] : []),
    preview: (ctx) => preview(ctx, p),
    hostFindings: (ctx, rendered) => ({
      before: profileFindings(ctx.persistence, ctx.facts, formerRoutingOf(ctx.host, ctx.facts)),
      after: [...timerFinding(ctx.facts, rendered), ...staleFindings(ctx.host, ctx.manager, ctx.persistence, ctx.facts, rendered)],
    }),
    apply,
  }),
};
