/**
 * The `links` step: the fabric NICs themselves, so a machine as it arrives — HCA driver loaded,
 * IPoIB or RoCE interfaces present, nothing configured on them — reaches the convention without
 * hand work. Per fabric NIC the convention address, and what the playbook (or the host's `links:`
 * in the inventory) asks besides: IPoIB `mode` and `mtu`, a partition `pkey` (its child interface
 * carries the address), a RoCE port's `roceMode`. Written in the host manager's own configuration
 * (networkmanager.ts, netplan.ts, ifupdown.ts), never behind its back; checked against the
 * hardware before anything changes (hardware.ts). A NIC that already carries its convention
 * address, as asked, is left as it is, however it got it (decide.ts). The engine learns from
 * `provides` that a NIC without its address is no blocker here, and the persisting step which
 * profile or netplan device will carry it. Pure.
 */
import type { HostFacts } from '../../facts/host-facts.js';
import type { Host, Manager } from '../../inventory/model.js';
import type { RenderedFile } from '../../script/rendered-file.js';
import { renderNetplanCheck } from '../../script/netplan.js';
import type {
  ApplyInput,
  ApplyPart,
  HostContext,
  ManagerBinding,
  NicProvision,
  PreviewPart,
  RenderContext,
  Step,
  StepModule,
} from '../step.js';
import { linksApply } from './apply.js';
import { renderLinksExport } from './export.js';
import {
  bareNic,
  LINKS_NETPLAN_PATH,
  LINKS_STANZA_PATH,
  planLinks,
  type LinksPlan,
  type ManagedNic,
} from './decide.js';
import { LINKS_FACT, LINK_LIMITS } from './facts.js';
import { leftFinding, managedFindings } from './findings.js';
import { linksStanzaFile, renderLinksStanzas } from './ifupdown.js';
import { linksNetplanFile, renderLinksNetplan } from './netplan.js';
import { addCommand, upCommand } from './networkmanager.js';
import { HEX_PARAMS, LINKS_KEY, linksSettings, settingsFor, type LinksParams } from './params.js';
import { linksRecordFile, LINKS_RECORD_PATH } from './record.js';
import { roceFinding } from './roce.js';
import { partitionProblems } from './partition.js';
import { linksRestore, linksUndo } from './undo.js';

/** One plan per probe and host: every part of the step asks the same question of the same facts. */
const plans = new WeakMap<HostFacts, Map<string, LinksPlan>>();

function planFor(ctx: Omit<HostContext, 'persistence' | 'provisions'>, params: LinksParams): LinksPlan {
  const settings = settingsFor(ctx.host, params);
  const key = JSON.stringify([ctx.host.id, ctx.host.nics, ctx.manager, settings]);
  const byHost = plans.get(ctx.facts) ?? new Map<string, LinksPlan>();
  plans.set(ctx.facts, byHost);
  const found = byHost.get(key);
  if (found) return found;
  const plan = planLinks(ctx, settings);
  byHost.set(key, plan);
  return plan;
}

/** What persist binds the NIC's routing to once links configured it (step.ts ManagerBinding). */
function bindingOf(manager: Manager, m: ManagedNic): { binding?: ManagerBinding } {
  if (m.profile)
    return {
      binding: {
        manager: 'networkmanager',
        profile: { uuid: m.profile.uuid, name: m.profile.name, routeTable: '0', rules: [] },
      },
    };
  if (manager === 'netplan' && !m.addressElsewhere)
    return { binding: { manager: 'netplan', device: { iface: m.nic.iface, type: 'ethernets', id: m.nic.iface } } };
  return {};
}

function provides(ctx: Omit<HostContext, 'persistence' | 'provisions'>, params: LinksParams): NicProvision[] {
  const plan = planFor(ctx, params);
  // A NIC links would configure but cannot: its own blocker says why, the engine's would only repeat what it lacks.
  const refused = plan.refused.map((nic) => ({ iface: nic.iface, creates: false }));
  return [
    ...refused,
    ...plan.managed.map((m) => ({
      iface: m.nic.iface,
      creates: !ctx.facts.links.has(m.nic.iface),
      ...bindingOf(ctx.manager, m),
    })),
  ];
}

function files(ctx: RenderContext, params: LinksParams): RenderedFile[] {
  // Without a probe (`ibfleet render`) only the host can say which NICs lack their address: preview shows what they would get.
  if (!ctx.facts) return [];
  const plan = planFor({ ...ctx, facts: ctx.facts }, params);
  const out: RenderedFile[] = [];
  if (plan.managed.length && ctx.manager === 'netplan')
    out.push(linksNetplanFile(ctx.host, ctx.playbook, plan.managed));
  if (plan.managed.length && ctx.manager === 'ifupdown')
    out.push(linksStanzaFile(ctx.host, ctx.playbook, plan.managed));
  if (plan.record.entries.length) out.push(linksRecordFile(ctx.host, ctx.playbook, plan.record));
  return out;
}

/**
 * A file that asks an IPoIB mode (`infiniband-mode`) goes live only where netplan and networkd can
 * set one (host/functions/links.sh netplan_ipoib_mode: netplan 0.105+, systemd 250+): an older
 * netplan refuses the key, an older networkd ignores it and leaves the mode as it was.
 */
function netplanModeGuard(plan: LinksPlan): string[] {
  return plan.managed.some((m) => m.ipoib && m.want.mode !== undefined)
    ? ['[ "$status" -ne 0 ] || netplan_ipoib_mode || status=1']
    : [];
}

function apply(ctx: HostContext, params: LinksParams, input: ApplyInput): ApplyPart {
  const plan = planFor(ctx, params);
  return {
    // ibfleet's netplan file goes live only once netplan generate takes it with the host's own files.
    validate: [
      {
        path: LINKS_NETPLAN_PATH,
        lines: (staged) => [...netplanModeGuard(plan), ...renderNetplanCheck(staged, LINKS_NETPLAN_PATH)],
      },
    ],
    ...linksApply(ctx, plan, input),
  };
}

/** What `ibfleet render` shows: what a NIC without its address would get (only the host can say which lack it). */
function preview(ctx: RenderContext, params: LinksParams): PreviewPart {
  const want = settingsFor(ctx.host, params);
  const managed = ctx.host.nics.map((nic) => bareNic(ctx.host, ctx.manager, nic, want, true));
  const where =
    'for each fabric NIC that does not carry its convention address yet (a NIC that does is left as it is; deploy --dry-run --show-scripts shows what a host gets)';
  switch (ctx.manager) {
    case 'networkmanager':
      return {
        commands: [
          {
            title: `links: nmcli, ${where}; an IPoIB NIC gets an infiniband profile as here, an Ethernet/RoCE NIC an ethernet one, and a profile already bound to the NIC is changed instead`,
            lines: managed.flatMap((m) => [addCommand(m), upCommand(m.profile!.uuid)]),
          },
        ],
      };
    case 'netplan':
      return {
        commands: [
          {
            title: `links: ${LINKS_NETPLAN_PATH}, ${where}`,
            lines: renderLinksNetplan(ctx.host, ctx.playbook, managed).trimEnd().split('\n'),
          },
        ],
      };
    case 'ifupdown':
      return {
        commands: [
          {
            title: `links: ${LINKS_STANZA_PATH} (where /etc/network/interfaces sources interfaces.d), ${where}`,
            lines: renderLinksStanzas(ctx.host, ctx.playbook, managed).trimEnd().split('\n'),
          },
        ],
      };
  }
}

function nicFindings(ctx: HostContext, params: LinksParams, nic: Host['nics'][number]) {
  const plan = planFor(ctx, params);
  const managed = plan.managed.find((m) => m.nic.iface === nic.iface);
  const settings = settingsFor(ctx.host, params);
  const roce = settings.roceMode !== undefined ? roceFinding(ctx.facts, nic, settings.roceMode) : [];
  if (managed) return [...managedFindings(ctx.facts, ctx.host.id, ctx.manager, managed), ...roce];
  const carries = ctx.facts.addresses.some((a) => a.iface === nic.iface && a.address === nic.address);
  return [...(carries ? [leftFinding(nic)] : []), ...roce];
}

function use(params: LinksParams): Step {
  return {
    name: 'links',
    // The drivers' and ports' MTU limits cost the host two processes: read only where an MTU is asked.
    probeWants: (host) => (settingsFor(host, params).mtu !== undefined ? [LINK_LIMITS] : []),
    provides: (ctx) => provides(ctx, params),
    blockers: (ctx) => {
      const settings = settingsFor(ctx.host, params);
      // The routing script re-applies the RoCE mode at every up; native persistence has none.
      const roce =
        settings.roceMode !== undefined && ctx.persistence.kind !== 'script'
          ? [
              {
                kind: 'step' as const,
                message: `roceMode ${settings.roceMode} is re-applied at every boot by ibfleet's hook, which native persistence (${ctx.persistence.kind}) does not install; deploy the hook playbook for RoCE ports`,
              },
            ]
          : [];
      return [...planFor(ctx, params).blockers, ...roce];
    },
    files: (ctx) => files(ctx, params),
    routesData: (ctx) => {
      const { roceMode } = settingsFor(ctx.host, params);
      return roceMode ? [`roce-mode ${roceMode}`] : [];
    },
    preview: (ctx) => preview(ctx, params),
    nicFindings: (ctx, nic) => nicFindings(ctx, params, nic),
    status: (ctx) => ({ problems: partitionProblems(ctx, settingsFor(ctx.host, params)) }),
    apply: (ctx, input) => apply(ctx, params, input),
    exportRefusal: (host) => exportRefusal(host, params),
    exportProgram: (host, manager, playbook) => renderLinksExport(host, manager, playbook),
  };
}

/**
 * The exported role carries links for the address alone (export.ts: its program adds ibfleet's
 * configuration to each bare NIC, decided on the host). Whatever more is asked — a mode, an MTU, a
 * partition, a RoCE mode — depends per NIC on what the HCA can take and on the profile or file bound
 * to it, which deploy weighs from its probe and the program does not: refused at export, naming it.
 */
function exportRefusal(host: Host, params: LinksParams): string | undefined {
  const settings = settingsFor(host, params);
  const asked = (['mode', 'mtu', 'pkey', 'roceMode'] as const)
    .filter((k) => settings[k] !== undefined)
    .map((k) => `${k} ${settings[k]}`);
  if (asked.length === 0) return undefined;
  return `step links asks ${host.name} for ${asked.join(', ')} (the playbook's or the inventory's links:): which NICs get it, through which profile or file, and whether the HCA can take it, deploy decides from each host's probe, which an exported project does not have; deploy it with ibfleet deploy, or export a playbook whose links asks only for the address (the role gives each bare NIC its address)`;
}

export const links: StepModule<LinksParams> = {
  name: 'links',
  summary:
    "the fabric NICs themselves: each one's convention address (and IPoIB mode, MTU, partition, RoCE mode when asked) in the host manager's own configuration",
  params: linksSettings,
  hostOverride: { key: LINKS_KEY, schema: linksSettings, keys: Object.keys(linksSettings.shape), hex: HEX_PARAMS },
  kinds: [
    { kind: 'link-profile', noun: ['link profile', 'link profiles'], shape: 'counted' },
    { kind: 'link-address', noun: ['address', 'addresses'], shape: 'counted' },
    { kind: 'link-setting', noun: ['link setting', 'link settings'], shape: 'counted' },
    { kind: 'roce-mode', noun: ['RoCE mode', 'RoCE modes'], shape: 'counted' },
    { kind: 'links-file', noun: ['links file', 'links files'], shape: 'file' },
    { kind: 'links-record', noun: ['links record', 'links records'], shape: 'file' },
  ],
  paths: [
    { path: LINKS_NETPLAN_PATH, kind: 'links-file' },
    { path: LINKS_STANZA_PATH, kind: 'links-file' },
    { path: LINKS_RECORD_PATH, kind: 'links-record' },
  ],
  facts: [LINKS_FACT],
  decidedOnHost: true,
  undo: linksUndo,
  restore: linksRestore,
  use,
};
