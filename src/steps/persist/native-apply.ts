/**
 * The part of a change script that talks to the network manager for native persistence — or takes
 * native persistence's configuration away again (a switch to the hook, a rollback, a restore):
 * connection profiles changed and reapplied (NetworkManager), the netplan configuration regenerated
 * and reloaded into systemd-networkd, and then a wait, because both
 * managers apply asynchronously and the probe that follows must see what they did. Pure.
 */
import { renderNetplanApply } from './native-netplan.js';
import {
  renderNmEdits,
  renderNmReapply,
  nmRestoreCommand,
  type NmProfileEdit,
  type NmProfileState,
} from './native-nm.js';
import { shellCommand } from '../../script/shell.js';

export interface NicRouting {
  readonly iface: string;
  readonly address: string;
  readonly table: number;
  readonly priority: number;
}

export interface NativeSteps {
  /** Connection profiles changed: ibfleet's properties set, or taken off. */
  readonly nmEdits: readonly NmProfileEdit[];
  /** Connection profiles put back as they were (a restore). */
  readonly nmRestore: readonly NmProfileState[];
  /** NICs NetworkManager applies its profile to again (`nmcli device reapply`). */
  readonly nmReapply: readonly string[];
  /** netplan: regenerate and reload (ibfleet's file written or removed), and reconfigure these NICs. */
  readonly netplan: { readonly reload: boolean; readonly reconfigure: readonly string[] } | undefined;
  /** NICs the manager takes over: their rules and table emptied first, so nothing the hook made stays beside the manager's. */
  readonly handOver: readonly NicRouting[];
  /** Wait until the manager's rule and table route are there on these NICs. */
  readonly await: readonly NicRouting[];
  /** Wait until systemd-networkd has taken these NICs' rules away (ibfleet's netplan file is gone). */
  readonly awaitGone: readonly NicRouting[];
  /**
   * The same, for NICs whose address goes with ibfleet's files too (no netplan file of the host's
   * own configures them): only the rule is waited for.
   */
  readonly awaitRuleGone: readonly NicRouting[];
}

export const NO_NATIVE_STEPS: NativeSteps = {
  nmEdits: [],
  nmRestore: [],
  nmReapply: [],
  netplan: undefined,
  handOver: [],
  await: [],
  awaitGone: [],
  awaitRuleGone: [],
};

export function hasNativeSteps(steps: NativeSteps): boolean {
  return Object.values(steps).some((v) => (Array.isArray(v) ? v.length > 0 : v !== undefined));
}

export function renderNativeSteps(steps: NativeSteps): string[] {
  if (!hasNativeSteps(steps)) return [];
  const lines: string[] = [];
  lines.push(...renderNmEdits(steps.nmEdits));
  for (const state of steps.nmRestore) lines.push(`${nmRestoreCommand(state)} || status=1`);
  if (steps.handOver.length)
    lines.push('# Handed to the manager: what the hook made for these NICs goes, the manager puts its own in place.');
  for (const nic of steps.handOver) lines.push(shellCommand(['hand_over', nic.iface, nic.address, nic.table]));
  lines.push(...renderNmReapply(steps.nmReapply));
  if (steps.netplan) lines.push(...renderNetplanApply(steps.netplan.reload, steps.netplan.reconfigure));
  // The waits are host/functions/persist.sh's.
  const wait = (fn: string, nic: NicRouting) =>
    `${shellCommand([fn, nic.iface, nic.address, nic.table, nic.priority])} || status=1`;
  for (const nic of steps.awaitGone) lines.push(wait('await_gone', nic));
  for (const nic of steps.awaitRuleGone) lines.push(wait('await_rule_gone', nic));
  for (const nic of steps.await) lines.push(wait('await_routing', nic));
  // Neighbour entries learnt under the old routing may point at the other NIC (see the routing script).
  for (const nic of steps.handOver) lines.push(`ip neigh flush dev ${shellCommand([nic.iface])} 2>/dev/null`);
  return lines;
}
