/**
 * What a deploy tells the network manager, from what the assessment found failing: for native
 * persistence, the profiles to change and the NICs to reapply (NetworkManager) or the netplan
 * configuration to reload and the NICs to reconfigure (netplan); with the routing script, native
 * persistence's configuration taken away first. A rollback takes it away too, and a restore puts
 * back what a failed change told the manager. Pure.
 */
import type { Host, Nic } from '../../inventory/model.js';
import type { HostFacts } from '../../facts/host-facts.js';
import { ROUTING_ASPECTS } from '../policy-routing/routing.js';
import { isAbout, type ApplyInput, type Finding, type HostContext } from '../step.js';
import { NO_NATIVE_STEPS, hasNativeSteps, type NativeSteps, type NicRouting } from './native-apply.js';
import { activeProfile, everOnProfile, ibfleetOnProfile, PERSIST_ASPECTS, staleProfileRules } from './native-assess.js';
import { formerRoutingOf, type FormerRouting } from '../policy-routing/former.js';
import { nmRoutingRule, type NmProfileEdit } from './native-nm.js';
import { NETPLAN_FILE_PATH } from './paths.js';
import { netplanClaims } from '../../facts/netplan-claims.js';
import { generatedFor } from '../../script/header.js';

function routing(nic: Nic): NicRouting {
  return { iface: nic.iface, address: nic.address, table: nic.table, priority: nic.priority };
}

function finish(steps: NativeSteps): NativeSteps | undefined {
  return hasNativeSteps(steps) ? steps : undefined;
}

const fails = (failing: readonly Finding[], nic: Nic, aspect: string) =>
  failing.some((f) => isAbout(f, nic.iface, aspect));

/** NetworkManager native: the profiles that lack ibfleet's properties changed; every NIC whose routing is off reapplied. */
function networkManagerSteps(ctx: HostContext, failing: readonly Finding[]): NativeSteps {
  if (ctx.persistence.kind !== 'networkmanager') return NO_NATIVE_STEPS;
  const nmEdits: NmProfileEdit[] = [];
  const touched: Nic[] = [];
  const former = formerRoutingOf(ctx.host, ctx.facts);
  for (const { nic, profile } of ctx.persistence.profiles) {
    if (fails(failing, nic, PERSIST_ASPECTS.profile)) {
      const on = ibfleetOnProfile(profile, nic);
      // A rule found twice is taken away and added once: nmcli removes every entry equal to it.
      nmEdits.push({
        iface: nic.iface,
        uuid: profile.uuid,
        name: profile.name,
        routeTable: on.table ? undefined : nic.table,
        removeRules: [...staleProfileRules(profile, nic, former), ...(on.rules.length > 1 ? [nmRoutingRule(nic)] : [])],
        addRules: [nmRoutingRule(nic)],
      });
    }
    if (
      [PERSIST_ASPECTS.profile, ROUTING_ASPECTS.table, ROUTING_ASPECTS.rule, ROUTING_ASPECTS.main].some((a) =>
        fails(failing, nic, a),
      )
    )
      touched.push(nic);
  }
  return {
    ...NO_NATIVE_STEPS,
    nmEdits,
    handOver: touched.map(routing),
    nmReapply: touched.map((n) => n.iface),
    await: touched.map(routing),
  };
}

/** netplan native: networkd reloads ibfleet's file when it was written, and configures the NICs whose routing is off again. */
function netplanSteps(ctx: HostContext, { failing, write }: ApplyInput): NativeSteps {
  const written = write.some((f) => f.path === NETPLAN_FILE_PATH);
  const touched = ctx.host.nics.filter(
    (nic) => written || fails(failing, nic, ROUTING_ASPECTS.table) || fails(failing, nic, ROUTING_ASPECTS.rule),
  );
  if (touched.length === 0) return NO_NATIVE_STEPS;
  return {
    ...NO_NATIVE_STEPS,
    handOver: touched.map(routing),
    await: touched.map(routing),
    netplan: { reload: written, reconfigure: touched.map((n) => n.iface) },
  };
}

/**
 * ibfleet's properties taken off the NICs' active profiles (`which` picks the NICs), today's and
 * those an earlier deploy set (its ownership record's); the user's own stay.
 */
function takeOff(host: Host, facts: HostFacts, which: (nic: Nic) => boolean): NmProfileEdit[] {
  const edits: NmProfileEdit[] = [];
  const former: FormerRouting = formerRoutingOf(host, facts);
  for (const nic of host.nics) {
    const profile = activeProfile(facts, nic.iface);
    if (!profile || !which(nic)) continue;
    const on = everOnProfile(profile, nic, former);
    if (!on.table && on.rules.length === 0) continue;
    edits.push({
      iface: nic.iface,
      uuid: profile.uuid,
      name: profile.name,
      routeTable: on.table ? 0 : undefined,
      removeRules: on.rules,
      addRules: [],
    });
  }
  return edits;
}

/**
 * ibfleet's netplan file is gone: networkd reloads without it, and is waited for before anything
 * else touches the NICs. `allGone`: every file ibfleet generated goes (a rollback), so a NIC that no
 * netplan file of the host's own configures keeps no address, and only its rule is waited for.
 */
function netplanTakeOff(
  host: Host,
  facts: HostFacts,
  allGone = false,
): Pick<NativeSteps, 'netplan' | 'awaitGone' | 'awaitRuleGone'> {
  const own = netplanClaims(facts.netplan.filter((f) => !generatedFor(f.text)));
  const keeps = (nic: Nic) => !allGone || own.some((c) => c.iface === nic.iface);
  return {
    netplan: { reload: true, reconfigure: host.nics.map((n) => n.iface) },
    awaitGone: host.nics.filter(keeps).map(routing),
    awaitRuleGone: host.nics.filter((n) => !keeps(n)).map(routing),
  };
}

/** The routing script persists: native persistence's configuration, wherever a failing finding found it, taken away. */
function takeOffSteps(ctx: HostContext, { failing, remove }: ApplyInput): NativeSteps {
  const nmEdits = takeOff(ctx.host, ctx.facts, (nic) => fails(failing, nic, PERSIST_ASPECTS.staleProfile));
  const steps = { ...NO_NATIVE_STEPS, nmEdits, nmReapply: nmEdits.map((e) => e.iface) };
  return remove.includes(NETPLAN_FILE_PATH) ? { ...steps, ...netplanTakeOff(ctx.host, ctx.facts) } : steps;
}

/** Undefined when the manager need not be told anything. */
export function planNativeSteps(ctx: HostContext, input: ApplyInput): NativeSteps | undefined {
  switch (ctx.persistence.kind) {
    case 'networkmanager':
      return finish(networkManagerSteps(ctx, input.failing));
    case 'netplan':
      return finish(netplanSteps(ctx, input));
    case 'script':
      return finish(takeOffSteps(ctx, input));
  }
}

/**
 * Rollback: every trace of native persistence taken away (ibfleet's properties off the NICs'
 * active profiles and reapplied; networkd reloaded once ibfleet's netplan file is gone) before the
 * rules and tables are removed.
 */
export function planNativeRollback(host: Host, facts: HostFacts): NativeSteps | undefined {
  const nmEdits = takeOff(host, facts, () => true);
  const netplan = facts.files.has(NETPLAN_FILE_PATH) ? netplanTakeOff(host, facts, true) : {};
  return finish({ ...NO_NATIVE_STEPS, nmEdits, nmReapply: nmEdits.map((e) => e.iface), ...netplan });
}

/**
 * After a change that did not verify: the connection profiles it changed set back to their
 * properties before, and reapplied; a netplan file it wrote or removed reloaded into networkd as
 * it was, and waited for (networkd's rules back when the file was there, gone when it was not).
 */
export function planNativeRestore(
  host: Host,
  before: HostFacts,
  told: NativeSteps | undefined,
): NativeSteps | undefined {
  if (!told) return undefined;
  const nmRestore = told.nmEdits.flatMap((edit) => {
    const profile = before.nm?.profiles.get(edit.uuid);
    return profile
      ? [{ iface: edit.iface, uuid: edit.uuid, routeTable: profile.routeTable, rules: profile.rules }]
      : [];
  });
  const netplan = told.netplan?.reload ? { reload: true, reconfigure: host.nics.map((n) => n.iface) } : undefined;
  const hadFile = before.files.has(NETPLAN_FILE_PATH);
  const nics = netplan ? host.nics : [];
  if (nmRestore.length === 0 && !netplan) return undefined;
  // A NIC that carried no address before the change (a machine as it arrives) has none to wait for.
  const hadAddress = (nic: Nic) => before.addresses.some((a) => a.iface === nic.iface && a.address === nic.address);
  return {
    ...NO_NATIVE_STEPS,
    nmRestore,
    nmReapply: nmRestore.map((r) => r.iface),
    netplan,
    await: hadFile ? nics.map(routing) : [],
    awaitGone: hadFile ? [] : nics.filter(hadAddress).map(routing),
    awaitRuleGone: hadFile ? [] : nics.filter((n) => !hadAddress(n)).map(routing),
  };
}
