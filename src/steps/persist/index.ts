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
 * right), which bounds how long such drift lasts. 0 installs no timer.
 *
 * `monitor: prometheus | nhc` (or both, as a list) makes drift between ibfleet runs visible to
 * node_exporter and to LBNL NHC (monitor.ts); it needs the routing script, so mode: hook. Pure.
 */
import * as z from 'zod';
import { MANAGERS, type Host, type Manager } from '../../inventory/model.js';
import { factOf, type HostFacts } from '../../facts/host-facts.js';
import type { RenderedFile } from '../../script/rendered-file.js';
import {
  SCRIPT_PERSISTENCE,
  type ApplyInput,
  type ApplyPart,
  type HostContext,
  type Persistence,
  type PreviewPart,
  type RenderContext,
  type StepModule,
} from '../step.js';
import { hookPaths, renderHook } from './hooks.js';
import { renderNetworkdConf } from './networkd-conf.js';
import { renderNativeSteps } from './native-apply.js';
import { profileFindings, staleFindings, timerFinding } from './native-assess.js';
import { renderNetplanFile, renderNetplanValidation } from './native-netplan.js';
import { NM_NATIVE_SINCE, nmModifyCommand, nmReapplyCommand, nmRoutingRule } from './native-nm.js';
import { planNativeSteps } from './native-plan.js';
import {
  HOOK_PATHS,
  MANAGER_HOOK_PATHS,
  NETPLAN_FILE_PATH,
  NETWORKD_CONF_PATH,
  REPAIR_DROP_IN_PATH,
  REPAIR_PATHS,
  REPAIR_SERVICE_PATH,
  REPAIR_TIMER_PATH,
} from './paths.js';
import { chooseNative } from './persistence.js';
import { renderRepairDropIn, renderRepairService, renderRepairTimer, REPAIR_TIMER_UNIT } from './repair.js';
import {
  MONITOR_FACT,
  MONITORS,
  monitorApply,
  monitorFiles,
  monitorFindings,
  monitorNotes,
  monitorPrerequisite,
  TEXTFILE_STAT,
  NHC_PATH,
  TEXTFILE_PATH,
  type Monitor,
} from './monitor.js';
import { NO_SYSTEMD_NOTE, repairActivation, SYSTEMD_FACT } from './systemd.js';
import type { Persister } from './persister.js';
import { persistRestore, persistUndo } from './undo.js';
import { needsWatch, WATCH_FACT, WATCH_PATH, WATCH_START, watchFinding } from './watch.js';
import { formerRoutingOf } from '../policy-routing/former.js';

const monitorName = z.enum(MONITORS, { error: `monitor is ${MONITORS.join(' or ')}, or a list of them` });

const params = z
  .strictObject({
    mode: z
      .enum(['hook', 'native'], {
        error: "mode is hook (a hook for the host's network manager, the default) or native (its own configuration)",
      })
      .default('hook'),
    repairEvery: z
      .int({ error: 'repairEvery is whole seconds, 0 (no timer) or 5..3600' })
      .refine((v) => v === 0 || (v >= 5 && v <= 3600), { error: 'repairEvery is 0 (no timer) or 5..3600 seconds' })
      .default(30),
    monitor: z
      .union([monitorName, z.array(monitorName)], { error: `monitor is ${MONITORS.join(' or ')}, or a list of them` })
      .default([])
      .transform((m): Monitor[] => [...new Set(Array.isArray(m) ? m : [m])]),
  })
  .superRefine((p, ctx) => {
    // The monitors run the routing script's check: native persistence has no routing script.
    if (p.monitor.length > 0 && p.mode === 'native')
      ctx.addIssue({
        code: 'custom',
        path: ['monitor'],
        message: 'monitor needs mode: hook: it runs the routing script, which native persistence does not install',
      });
    // Without the timer the textfile would be written only when a NIC comes up: stale for days.
    if (p.monitor.includes('prometheus') && p.repairEvery === 0)
      ctx.addIssue({
        code: 'custom',
        path: ['monitor'],
        message: 'monitor: prometheus needs the repair timer (repairEvery 5..3600): its runs write the textfile',
      });
  });

export type PersistParams = z.infer<typeof params>;

/** What the chosen manager needs on the host for its hook to ever run. */
function managerPrerequisite(manager: Manager, facts: HostFacts): string | undefined {
  switch (manager) {
    case 'netplan':
      return facts.dirs.has('/etc/networkd-dispatcher') || facts.tools.has('networkd-dispatcher')
        ? undefined
        : "networkd-dispatcher is not installed, so a routable.d hook would never run; install it (apt install networkd-dispatcher) or set the host's manager";
    case 'networkmanager':
      return facts.dirs.has('/etc/NetworkManager/dispatcher.d') || facts.tools.has('NetworkManager')
        ? undefined
        : "NetworkManager's dispatcher directory /etc/NetworkManager/dispatcher.d is missing; is NetworkManager installed?";
    case 'ifupdown':
      return facts.dirs.has('/etc/network/if-up.d') || facts.tools.has('ifup')
        ? undefined
        : '/etc/network/if-up.d is missing; is ifupdown installed?';
  }
}

/** Where the routing script persists, the playbook wants the periodic repair and the probe found no systemd to time it. */
function withoutSystemd(ctx: RenderContext, { repairEvery }: PersistParams): boolean {
  return (
    repairEvery > 0 &&
    ctx.persistence.kind === 'script' &&
    ctx.facts !== undefined &&
    factOf(ctx.facts, SYSTEMD_FACT).runs === false
  );
}

function files(ctx: RenderContext, p: PersistParams): RenderedFile[] {
  const { repairEvery, monitor } = p;
  const { host, playbook, manager, persistence } = ctx;
  if (persistence.kind === 'netplan')
    return [
      {
        path: NETPLAN_FILE_PATH,
        mode: 0o600,
        content: renderNetplanFile(host, ctx.fleet, playbook, persistence.devices),
        role: 'netplan',
        manager,
        kind: 'netplan-file',
        routing: true,
      },
    ];
  if (persistence.kind === 'networkmanager') return [];
  const out: RenderedFile[] = hookPaths(manager).map((path) => ({
    path,
    mode: 0o755,
    content: renderHook(manager, host, playbook, path),
    role: 'hook',
    manager,
    kind: 'hook',
    label: `hook ${path}`,
    stageOutside: true,
  }));
  // networkd.conf.d/: networkd keeps ibfleet's rules and routes when it restarts (networkd-conf.ts).
  if (manager === 'netplan')
    out.push({
      path: NETWORKD_CONF_PATH,
      mode: 0o644,
      content: renderNetworkdConf(host, playbook),
      role: 'networkd-conf',
      manager,
      kind: 'networkd-conf',
      label: `networkd setting ${NETWORKD_CONF_PATH}`,
      checkGroup: 'hook',
    });
  // A host without systemd has no timers (a container, a chroot-like host): the hooks alone persist the routing.
  if (repairEvery > 0 && !withoutSystemd(ctx, p)) {
    const unit = (path: string, content: string): RenderedFile => ({
      path,
      mode: 0o644,
      content,
      role: 'repair',
      kind: 'timer',
      label: `repair unit ${path}`,
      checkWhere: 'systemd',
    });
    out.push(
      unit(REPAIR_SERVICE_PATH, renderRepairService(host, playbook)),
      unit(REPAIR_TIMER_PATH, renderRepairTimer(host, playbook, repairEvery)),
      unit(REPAIR_DROP_IN_PATH, renderRepairDropIn(host, playbook)),
    );
  }
  // NetworkManager before 1.42 without systemd also gets the route watcher (watch.ts): the program is
  // a file of the package, added where the routing program is (render/host-files.ts), so this pure
  // step reads no file.
  return [...out, ...monitorFiles(host, playbook, monitor)];
}

/**
 * The persist step's part of the routing program's data (host/ibfleet-routes): `persist` (a
 * snapshot puts the repair units back, systemd told last), the repair timer its --check asks for
 * where systemd runs (the same program on every host: where systemd does not run, it asks
 * nothing), and the prometheus monitor's textfile, which every run that is not a check writes.
 */
function routesData({ repairEvery, monitor }: PersistParams): string[] {
  return [
    'persist',
    ...(repairEvery > 0 ? [`repair-timer ${REPAIR_TIMER_UNIT}`] : []),
    ...(monitor.includes('prometheus') ? ['monitor prometheus'] : []),
  ];
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
      nmModifyCommand({
        iface: nic.iface,
        uuid: profilePlaceholder(nic.iface),
        name: nic.iface,
        routeTable: nic.table,
        removeRules: [],
        addRules: [nmRoutingRule(nic)],
      }),
      nmReapplyCommand(nic.iface),
    ]),
  };
}

function preview(ctx: RenderContext, { mode, monitor }: PersistParams): PreviewPart {
  if (mode === 'hook') return { notes: monitorNotes(monitor) };
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
      return {
        notes: ["native persistence on ifupdown is ifupdown's own if-up.d hook: the files are the hook playbook's"],
      };
  }
}

function apply(ctx: HostContext, input: ApplyInput): ApplyPart {
  const native = planNativeSteps(ctx, input);
  return {
    // A netplan file is renamed into place only once netplan generate accepts it with the host's own.
    validate: [{ path: NETPLAN_FILE_PATH, lines: renderNetplanValidation }],
    manager: native ? renderNativeSteps(native) : [],
    // systemd told about changed units first: what the engine's files changed, before the units start.
    after: [
      ...repairActivation(
        input.write.map((f) => f.path),
        input.remove,
      ),
      ...monitorApply(input.failing),
      ...(needsWatch(ctx) ? [WATCH_START] : []),
    ],
    memo: native,
  };
}

export const persist: StepModule<PersistParams> = {
  name: 'persist',
  summary:
    "makes the routing last: the hook for the host's network manager and a repair timer, or (mode: native) the manager's own configuration",
  params,
  kinds: [
    { kind: 'nm-profile', noun: ['connection profile', 'connection profiles'], shape: 'counted' },
    { kind: 'hook', noun: ['hook', 'hooks'], shape: 'file' },
    { kind: 'networkd-conf', noun: ['networkd setting', 'networkd settings'], shape: 'file' },
    { kind: 'netplan-file', noun: ['netplan file', 'netplan files'], shape: 'file' },
    { kind: 'timer', noun: ['timer unit', 'timer units'], shape: 'file' },
    { kind: 'monitor', noun: ['monitor file', 'monitor files'], shape: 'file' },
  ],
  paths: [
    ...MANAGERS.flatMap((m) => MANAGER_HOOK_PATHS[m].map((path) => ({ path, kind: 'hook' }))),
    { path: NETWORKD_CONF_PATH, kind: 'networkd-conf' },
    ...REPAIR_PATHS.map((path) => ({ path, kind: 'timer' })),
    { path: NETPLAN_FILE_PATH, kind: 'netplan-file' },
    { path: NHC_PATH, kind: 'monitor' },
    // Only where the probe finds NetworkManager before 1.42 and no systemd; removing the file would
    // leave the watcher running without its program.
    { path: WATCH_PATH, kind: 'hook', decidedOnHost: true },
  ],
  facts: [SYSTEMD_FACT, MONITOR_FACT, WATCH_FACT],
  undo: persistUndo,
  restore: persistRestore,
  use: (p) => ({
    name: 'persist',
    probeWants: () => (p.monitor.includes('prometheus') ? [TEXTFILE_STAT] : []),
    files: (ctx) => files(ctx, p),
    notes: (ctx) => (withoutSystemd(ctx, p) ? [NO_SYSTEMD_NOTE] : []),
    routesData: () => routesData(p),
    preview: (ctx) => preview(ctx, p),
    hostFindings: (ctx, rendered) => ({
      before: profileFindings(ctx.persistence, ctx.facts, formerRoutingOf(ctx.host, ctx.facts)),
      after: [
        ...timerFinding(ctx.facts, rendered),
        ...watchFinding(ctx.facts, rendered),
        ...monitorFindings(ctx.facts, p.monitor, ctx.persistence.kind === 'script'),
        ...staleFindings(ctx.host, ctx.manager, ctx.persistence, ctx.facts, rendered),
      ],
    }),
    apply,
  }),
};

/** What the engine asks of persist alone (persister.ts): how the routing lasts on a host, with these parameters. */
export function persisterFor(p: PersistParams): Persister {
  return {
    prerequisite: (manager, facts) => managerPrerequisite(manager, facts) ?? monitorPrerequisite(facts, p.monitor),
    choose: (ctx) =>
      p.mode === 'native'
        ? chooseNative(ctx.host, ctx.manager, ctx.facts, ctx.provisions)
        : { persistence: SCRIPT_PERSISTENCE, notes: [], blockers: [] },
    preview: (manager) => previewPersistence(manager, p),
    installedManager: (facts) => {
      const installed = MANAGERS.filter((m) => facts.files.has(HOOK_PATHS[m]));
      return installed.length === 1 ? installed[0] : undefined;
    },
    statusNotes: (ctx) => (withoutSystemd(ctx, p) ? [NO_SYSTEMD_NOTE] : []),
    afterFiles: repairActivation,
    // The textfile is the routing script's to write, and only with monitor: prometheus.
    unwantedFiles: () => (p.monitor.includes('prometheus') ? [] : [TEXTFILE_PATH]),
  };
}
