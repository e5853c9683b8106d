/**
 * What a deploy tells the network manager, from what the assessment found failing: for native
 * persistence, the profiles to change and the NICs to reapply (NetworkManager) or the netplan
 * configuration to reload and the NICs to reconfigure (netplan), and the sysctls to write; for the
 * hook, native persistence's configuration to take away first. A rollback takes it away too. Pure.
 */
import type { Fleet, Host, Nic } from '../inventory/model.js';
import { NO_NATIVE_STEPS, hasNativeSteps, type NativeSteps, type NicRouting } from '../render/native-apply.js';
import type { NmProfileEdit } from '../render/native-nm.js';
import { nmRoutingRule } from '../render/native-nm.js';
import type { RenderedFile } from '../render/files.js';
import { raisedNeighThresholds } from '../render/neigh.js';
import { NETPLAN_FILE_PATH } from '../render/paths.js';
import { SYSCTL_KEYS } from '../render/routing-script.js';
import type { Playbook } from '../playbook/playbook.js';
import { failingFindings, type Assessment } from './assess.js';
import type { HostFacts } from './facts.js';
import { everOnProfile, ibfleetOnProfile, staleProfileRules } from './native-assess.js';
import { NO_FORMER_ROUTING, type FormerRouting } from './owned.js';
import type { Persistence } from './persistence.js';

function routing(nic: Nic): NicRouting {
  return { iface: nic.iface, address: nic.address, table: nic.table, priority: nic.priority };
}

export interface NativePlanInput {
  readonly host: Host;
  readonly fleet: Fleet;
  readonly playbook: Playbook;
  readonly persistence: Persistence;
  readonly assessment: Assessment;
  readonly facts: HostFacts;
  readonly write: readonly RenderedFile[];
  readonly remove: readonly string[];
  /** What an earlier deploy set and the inventory no longer gives the host: taken off the profiles too. */
  readonly former?: FormerRouting;
}

/** Undefined when the manager need not be told anything. */
export function planNativeSteps(input: NativePlanInput): NativeSteps | undefined {
  const { host, playbook, persistence, assessment, facts } = input;
  const former = input.former ?? NO_FORMER_ROUTING;
  const neigh = playbook.fabricSysctl && persistence.kind !== 'hook' ? neighToRaise(input.fleet, facts) : [];
  const failing = new Set(failingFindings(assessment).map((f) => f.id));
  const fails = (kind: string, nic: Nic) => failing.has(`${kind} ${nic.iface}`);
  const nmEdits: NmProfileEdit[] = [];
  const steps = { ...NO_NATIVE_STEPS, neigh, nmEdits, nmReapply: [] as string[], handOver: [] as NicRouting[], removeMain: [] as string[], await: [] as NicRouting[] };

  if (persistence.kind === 'networkmanager') {
    for (const { nic, profile } of persistence.profiles) {
      if (fails('nm', nic)) {
        const on = ibfleetOnProfile(profile, nic);
        // A rule found twice is taken away and added once: nmcli removes every entry equal to it.
        nmEdits.push({ iface: nic.iface, uuid: profile.uuid, name: profile.name, routeTable: on.table ? undefined : nic.table, removeRules: [...staleProfileRules(profile, nic, former), ...(on.rules.length > 1 ? [nmRoutingRule(nic)] : [])], addRules: [nmRoutingRule(nic)] });
      }
      if (['nm', 'table', 'rule', 'main'].some((k) => fails(k, nic))) {
        steps.handOver.push(routing(nic));
        steps.nmReapply.push(nic.iface);
        steps.await.push(routing(nic));
      }
      if (fails('main', nic)) steps.removeMain.push(nic.iface);
    }
  } else if (persistence.kind === 'netplan') {
    const written = input.write.some((f) => f.path === NETPLAN_FILE_PATH);
    const touched = host.nics.filter((nic) => written || fails('table', nic) || fails('rule', nic));
    if (touched.length) {
      steps.handOver.push(...touched.map(routing));
      steps.await.push(...touched.map(routing));
      return finish({ ...steps, netplan: { reload: written, reconfigure: touched.map((n) => n.iface) }, sysctls: sysctlsToSet(host, playbook, failing) });
    }
  } else {
    nmEdits.push(...takeOff(host, facts, former, (nic) => failing.has(`stale nm ${nic.iface}`)));
    steps.nmReapply.push(...nmEdits.map((e) => e.iface));
    if (input.remove.includes(NETPLAN_FILE_PATH)) return finish({ ...steps, ...netplanTakeOff(host) });
    return finish(steps);
  }
  return finish({ ...steps, sysctls: sysctlsToSet(host, playbook, failing) });
}

/** Neighbour limits the fleet needs beyond the kernel's defaults that this host has below them (the hook raises them otherwise). */
function neighToRaise(fleet: Fleet, facts: HostFacts): NativeSteps['neigh'] {
  const want = raisedNeighThresholds(fleet);
  if (!want) return [];
  return (['gc_thresh3', 'gc_thresh2', 'gc_thresh1'] as const).flatMap((key) => {
    const have = facts.neigh[key];
    return have !== undefined && have !== '' && Number(have) < want[key] ? [{ key, value: want[key] }] : [];
  });
}

function finish(steps: NativeSteps): NativeSteps | undefined {
  return hasNativeSteps(steps) ? steps : undefined;
}

/** Native persistence writes the NICs' sysctls itself: there is no routing script to do it. */
function sysctlsToSet(host: Host, playbook: Playbook, failing: ReadonlySet<string>): NativeSteps['sysctls'] {
  const params = playbook.fabricSysctl;
  if (!params) return [];
  return host.nics.flatMap((nic) => SYSCTL_KEYS.filter((k) => failing.has(`sysctl ${nic.iface} ${k}`)).map((key) => ({ iface: nic.iface, key, value: String(params[key]) })));
}

/**
 * ibfleet's properties taken off the NICs' active profiles (`which` picks the NICs), today's and
 * those an earlier deploy set (`former`); the user's own stay.
 */
function takeOff(host: Host, facts: HostFacts, former: FormerRouting, which: (nic: Nic) => boolean): NmProfileEdit[] {
  const edits: NmProfileEdit[] = [];
  for (const nic of host.nics) {
    const uuid = facts.nm?.active.get(nic.iface);
    const profile = uuid === undefined ? undefined : facts.nm?.profiles.get(uuid);
    if (!profile || !which(nic)) continue;
    const on = everOnProfile(profile, nic, former);
    if (!on.table && on.rules.length === 0) continue;
    edits.push({ iface: nic.iface, uuid: profile.uuid, name: profile.name, routeTable: on.table ? 0 : undefined, removeRules: on.rules, addRules: [] });
  }
  return edits;
}

/** ibfleet's netplan file is gone: networkd reloads without it, and is waited for before anything else touches the NICs. */
function netplanTakeOff(host: Host): Pick<NativeSteps, 'netplan' | 'awaitGone'> {
  return { netplan: { reload: true, reconfigure: host.nics.map((n) => n.iface) }, awaitGone: host.nics.map(routing) };
}

/**
 * Rollback: every trace of native persistence taken away (ibfleet's properties off the NICs'
 * active profiles and reapplied; networkd reloaded once ibfleet's netplan file is gone) before the
 * rules and tables are removed.
 */
export function planNativeRollback(host: Host, facts: HostFacts, former: FormerRouting = NO_FORMER_ROUTING): NativeSteps | undefined {
  const nmEdits = takeOff(host, facts, former, () => true);
  const netplan = facts.files.get(NETPLAN_FILE_PATH) ? netplanTakeOff(host) : {};
  return finish({ ...NO_NATIVE_STEPS, nmEdits, nmReapply: nmEdits.map((e) => e.iface), ...netplan });
}
