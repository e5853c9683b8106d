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
import { deleteRulesLoop, shellQuote } from '../../script/shell.js';

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

/** How long the script waits for a manager, in tenths of a second. */
const WAIT_TENTHS = 200;

const AWAIT_FUNCTION = `# await_routing IFACE ADDR TABLE PRIORITY: until the manager's rule and table route are there,
# with the NIC's address (NetworkManager and networkd apply asynchronously), at most ${WAIT_TENTHS / 10} s.
# Seen twice in a row: networkd, told to reload and then to reconfigure, may put everything in
# place once and take it away again to configure the NIC a second time.
await_routing() {
	n=0
	seen=0
	while [ "$n" -lt ${WAIT_TENTHS / 2} ]; do
		if ip -4 rule show | sed 's/[[:space:]][[:space:]]*/ /g; s/ $//' | grep -q -x -F -e "$4: from $2 lookup $3" -e "$4: from $2 lookup $3 proto static" &&
			ip -4 route show table "$3" 2>/dev/null | grep -q -F " dev $1 " &&
			ip -4 -o addr show dev "$1" 2>/dev/null | grep -q -F " inet $2/"; then
			seen=$((seen + 1))
			[ "$seen" -ge 2 ] && return 0
		else
			seen=0
		fi
		sleep 0.2
		n=$((n + 1))
	done
	echo "ibfleet: $1: the network manager did not put the rule, table $3 and address $2 in place within ${WAIT_TENTHS / 10} s" >&2
	return 1
}
`;

const AWAIT_GONE_FUNCTION = `# await_gone IFACE ADDR TABLE PRIORITY: until systemd-networkd has taken away the rule it made from
# ibfleet's netplan file and carries the NIC's address again (reconfiguring a link, it drops its
# addresses and rules first and adds back what its configuration says), at most ${WAIT_TENTHS / 10} s.
await_gone() {
	n=0
	while [ "$n" -lt ${WAIT_TENTHS / 2} ]; do
		if ! ip -4 rule show | sed 's/[[:space:]][[:space:]]*/ /g; s/ $//' | grep -q -x -F "$4: from $2 lookup $3 proto static" &&
			ip -4 -o addr show dev "$1" 2>/dev/null | grep -q -F " inet $2/"; then
			return 0
		fi
		sleep 0.2
		n=$((n + 1))
	done
	echo "ibfleet: $1: systemd-networkd did not finish configuring it without ibfleet's netplan file within ${WAIT_TENTHS / 10} s" >&2
	return 1
}
`;

const AWAIT_RULE_GONE_FUNCTION = `# await_rule_gone IFACE ADDR TABLE PRIORITY: until systemd-networkd has taken away the rule it
# made from ibfleet's netplan file (the NIC keeps no address: nothing of the host's configures it), at most ${WAIT_TENTHS / 10} s.
await_rule_gone() {
	n=0
	while [ "$n" -lt ${WAIT_TENTHS / 2} ]; do
		ip -4 rule show | sed 's/[[:space:]][[:space:]]*/ /g; s/ $//' | grep -q -x -F "$4: from $2 lookup $3 proto static" || return 0
		sleep 0.2
		n=$((n + 1))
	done
	echo "ibfleet: $1: systemd-networkd did not take its rule away without ibfleet's netplan file within ${WAIT_TENTHS / 10} s" >&2
	return 1
}
`;

export function renderNativeSteps(steps: NativeSteps): string[] {
  if (!hasNativeSteps(steps)) return [];
  const lines: string[] = [];
  if (steps.await.length) lines.push(AWAIT_FUNCTION);
  if (steps.awaitGone.length) lines.push(AWAIT_GONE_FUNCTION);
  if (steps.awaitRuleGone.length) lines.push(AWAIT_RULE_GONE_FUNCTION);
  lines.push(...renderNmEdits(steps.nmEdits));
  for (const state of steps.nmRestore) lines.push(`${nmRestoreCommand(state)} || status=1`);
  if (steps.handOver.length)
    lines.push('# Handed to the manager: what the hook made for these NICs goes, the manager puts its own in place.');
  for (const nic of steps.handOver) {
    lines.push(deleteRulesLoop(['from', nic.address]), deleteRulesLoop(['lookup', nic.table]));
    lines.push(`ip -4 route flush table ${shellQuote(nic.table)} 2>/dev/null`);
  }
  lines.push(...renderNmReapply(steps.nmReapply));
  if (steps.netplan) lines.push(...renderNetplanApply(steps.netplan.reload, steps.netplan.reconfigure));
  for (const nic of steps.awaitGone)
    lines.push(`await_gone ${[nic.iface, nic.address, nic.table, nic.priority].map(shellQuote).join(' ')} || status=1`);
  for (const nic of steps.awaitRuleGone)
    lines.push(
      `await_rule_gone ${[nic.iface, nic.address, nic.table, nic.priority].map(shellQuote).join(' ')} || status=1`,
    );
  for (const nic of steps.await)
    lines.push(
      `await_routing ${[nic.iface, nic.address, nic.table, nic.priority].map(shellQuote).join(' ')} || status=1`,
    );
  // Neighbour entries learnt under the old routing may point at the other NIC (see the routing script).
  for (const nic of steps.handOver) lines.push(`ip neigh flush dev ${shellQuote(nic.iface)} 2>/dev/null`);
  return lines;
}
