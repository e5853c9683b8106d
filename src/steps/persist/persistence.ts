/**
 * How a host's routing persists: the hook for its network manager, or — when the playbook asks for
 * native persistence — the manager's own configuration, where the manager can hold it. Pure: decided
 * from the probe, the same way for deploy and status, with the reasons said in the plan.
 *
 * - NetworkManager 1.18+: each fabric NIC's active connection profile (ipv4.route-table,
 *   ipv4.routing-rules). Older versions have no routing-rules: the hook, with that reason. A NIC
 *   without an active profile, or a profile already routing into another table, stops the deploy
 *   before anything changes.
 * - netplan: ibfleet's netplan file, when each fabric NIC has a netplan definition of its own that
 *   systemd-networkd renders, and `netplan` and `networkctl` are there; else the hook, with the reason.
 * - ifupdown: its if-up.d hook is ifupdown's own mechanism for this (docs/native-persistence.md).
 */
import type { Host, Manager } from '../../inventory/model.js';
import type { HostFacts } from '../../facts/host-facts.js';
import { netplanClaims } from '../../facts/netplan-claims.js';
import { versionAtLeast } from '../../facts/nm-facts.js';
import { SCRIPT_PERSISTENCE, type NetplanDevice, type NicProfile, type NicProvision } from '../step.js';
import type { PersistenceChoice } from './persister.js';
import { NM_NATIVE_SINCE } from './native-nm.js';
import { formerRoutingOf } from '../policy-routing/former.js';
import { NETPLAN_FILE_PATH } from './paths.js';

export const IFUPDOWN_NATIVE_NOTE =
  "ifupdown: native persistence is ifupdown's own if-up.d hook, which ifup runs itself as it brings each NIC up (ifupdown has no setting for a rule or a table)";

/** Native persistence for a host: in its manager's configuration where the manager can hold it, else the routing script with the reason. */
/**
 * `provisions`: what the playbook's steps give the NICs before the routing applies — the profile
 * that will bring a NIC up, the netplan device that will define it (the links step, on a machine
 * whose NICs nothing configured yet).
 */
export function chooseNative(
  host: Host,
  manager: Manager,
  facts: HostFacts,
  provisions: readonly NicProvision[] = [],
): PersistenceChoice {
  switch (manager) {
    case 'ifupdown':
      return { persistence: SCRIPT_PERSISTENCE, notes: [IFUPDOWN_NATIVE_NOTE], blockers: [] };
    case 'networkmanager':
      return networkManagerNative(host, facts, provisions);
    case 'netplan':
      return netplanNative(host, facts, provisions);
  }
}

function networkManagerNative(host: Host, facts: HostFacts, provisions: readonly NicProvision[]): PersistenceChoice {
  const nm = facts.nm;
  if (!nm) {
    const why = facts.tools.has('nmcli')
      ? 'NetworkManager did not answer nmcli (is it running?)'
      : 'nmcli is not installed';
    return {
      persistence: { kind: 'networkmanager', profiles: [] },
      notes: [],
      blockers: [
        `${why}: native persistence reads and changes the NICs' connection profiles; start NetworkManager, or deploy the hook playbook`,
      ],
    };
  }
  if (!versionAtLeast(nm.version, NM_NATIVE_SINCE)) {
    return {
      persistence: SCRIPT_PERSISTENCE,
      notes: [
        `NetworkManager ${nm.version} has no ipv4.routing-rules (they came with ${NM_NATIVE_SINCE}): the routing persists with the dispatcher hook instead`,
      ],
      blockers: [],
    };
  }
  const blockers: string[] = [];
  const profiles: NicProfile[] = [];
  // A table an earlier deploy of ibfleet's set (its ownership record says so) is ibfleet's to move.
  const former = formerRoutingOf(host, facts);
  const earlierTable = (iface: string, table: string) =>
    former.nics.some((n) => n.iface === iface && String(n.table) === table);
  for (const nic of host.nics) {
    const binding = provisions.find((p) => p.iface === nic.iface)?.binding;
    const provided = binding?.manager === 'networkmanager' ? binding.profile : undefined;
    const uuid = nm.active.get(nic.iface) ?? provided?.uuid;
    const profile =
      uuid === undefined ? undefined : (nm.profiles.get(uuid) ?? (uuid === provided?.uuid ? provided : undefined));
    if (uuid === undefined) {
      blockers.push(
        `${nic.iface} has no active NetworkManager connection profile; native persistence sets ipv4.route-table and ipv4.routing-rules on the profile that brings the NIC up: activate it (nmcli connection up <profile>), or deploy the hook playbook`,
      );
    } else if (!profile) {
      blockers.push(`NetworkManager did not show ${nic.iface}'s active connection profile ${uuid}`);
    } else if (
      profile.routeTable !== '0' &&
      profile.routeTable !== String(nic.table) &&
      !earlierTable(nic.iface, profile.routeTable)
    ) {
      blockers.push(
        `${nic.iface}'s connection profile ${profile.name} already routes into table ${profile.routeTable} (ipv4.route-table); ibfleet would move its routes to table ${nic.table}: set it to 0 (nmcli connection modify uuid ${uuid} ipv4.route-table 0), or deploy the hook playbook`,
      );
    } else profiles.push({ nic, profile });
  }
  // With blockers a deploy stops before any change; status still checks what it can of the rest.
  return { persistence: { kind: 'networkmanager', profiles }, notes: [], blockers };
}

function netplanNative(host: Host, facts: HostFacts, provisions: readonly NicProvision[]): PersistenceChoice {
  const hook = (why: string): PersistenceChoice => ({
    persistence: SCRIPT_PERSISTENCE,
    notes: [`${why}: the routing persists with the networkd-dispatcher hook instead`],
    blockers: [],
  });
  for (const tool of ['netplan', 'networkctl']) if (!facts.tools.has(tool)) return hook(`${tool} is not installed`);
  const claims = netplanClaims(facts.netplan.filter((f) => f.file !== NETPLAN_FILE_PATH));
  const devices: NetplanDevice[] = [];
  for (const nic of host.nics) {
    // Its own definition: one that names this interface exactly (a glob or shared id would carry the
    // other NIC's routes too), rendered by networkd.
    const binding = provisions.find((p) => p.iface === nic.iface)?.binding;
    const provided = binding?.manager === 'netplan' ? binding.device : undefined;
    const own = [
      ...claims.filter((c) => c.iface === nic.iface),
      ...(provided ? [{ ...provided, renderer: 'networkd' }] : []),
    ];
    const claim = own.find((c) => c.renderer === 'networkd');
    if (!claim)
      return hook(
        own.length
          ? `netplan hands ${nic.iface} to ${own[0]!.renderer}, not systemd-networkd`
          : `${nic.iface} has no netplan definition of its own, so a netplan file cannot add its routing`,
      );
    if (
      claims.some((c) => c.type === claim.type && c.id === claim.id && c.iface !== nic.iface) ||
      devices.some((d) => d.type === claim.type && d.id === claim.id)
    ) {
      return hook(
        `netplan's ${claim.type}.${claim.id} configures ${nic.iface} together with another interface, so it cannot carry ${nic.iface}'s own routes`,
      );
    }
    devices.push({ iface: nic.iface, type: claim.type, id: claim.id });
  }
  return { persistence: { kind: 'netplan', devices }, notes: [], blockers: [] };
}
