/**
 * The links step's part of a change: what the host's manager is told for the NICs whose checks
 * failed — NetworkManager's profiles added or changed and activated, netplan's configuration
 * regenerated and the NICs reconfigured, ifupdown's NICs brought (down and) up — then a bounded
 * wait until each carries its address with the link up, as the managers apply asynchronously and
 * the routing that follows needs the address. Runs before the other steps' manager lines and the
 * routing script (the playbook puts links first). What it told the host is kept for the restore.
 * Pure string builders.
 */
import type { Manager } from '../../inventory/model.js';
import { shellQuote } from '../../script/shell.js';
import { renderNetplanApply } from '../../script/netplan.js';
import { isAbout, type ApplyInput, type ApplyPart, type HostContext } from '../step.js';
import { LINKS_NETPLAN_PATH, LINKS_STANZA_PATH, type LinksPlan, type ManagedNic } from './decide.js';
import { foundProfile, LINK_ASPECTS } from './findings.js';
import { nmLinkCommands } from './networkmanager.js';

/** How long the change waits for a manager to put a NIC's address on it, in tenths of a second. */
const WAIT_TENTHS = 300;

export const AWAIT_ADDRESS_FUNCTION = `# await_address IFACE ADDR: until the network manager has put ADDR on IFACE and the link is up
# (NetworkManager, networkd and ifupdown's hooks apply asynchronously), at most ${WAIT_TENTHS / 10} s.
await_address() {
	n=0
	while [ "$n" -lt ${WAIT_TENTHS / 2} ]; do
		if ip -4 -o addr show dev "$1" 2>/dev/null | grep -q -F " inet $2/" &&
			ip -o link show dev "$1" 2>/dev/null | grep -q -E '[<,]UP[,>]'; then
			return 0
		fi
		sleep 0.2
		n=$((n + 1))
	done
	echo "ibfleet: $1: the network manager did not put $2 on it within ${WAIT_TENTHS / 10} s" >&2
	return 1
}
`;

/** What a change told the host, for the restore after a failed verification. */
export interface LinksMemo {
  readonly manager: Manager;
  readonly nics: readonly { readonly iface: string; readonly address: string; readonly prefixLength: number; readonly uuid: string | undefined; readonly ipoib: boolean }[];
}

function guarded(command: string, done: string): string {
  return `if ${command}; then echo ${shellQuote(`ibfleet: ${done}`)}; else status=1; fi`;
}

function nmLines(ctx: HostContext, touched: readonly ManagedNic[]): string[] {
  return touched.flatMap((m) => {
    const found = foundProfile(ctx.facts, m);
    return [`# ${m.nic.iface}: connection profile ${(found?.name ?? m.profile!.name).replace(/[\r\n]/g, ' ')}`, ...nmLinkCommands(m, found).map((c) => guarded(c.run, c.says))];
  });
}

function ifupdownLines(touched: readonly ManagedNic[]): string[] {
  // Down first where it is up: ifup does nothing for an interface ifupdown thinks configured.
  return touched.flatMap((m) => [`ifdown --force ${shellQuote(m.nic.iface)} >/dev/null 2>&1`, guarded(`ifup ${shellQuote(m.nic.iface)}`, `${m.nic.iface}: ifup`)]);
}

/** The NICs the change configures: those whose checks failed; every NIC of ibfleet's file when the file is rewritten. */
export function touchedNics(plan: LinksPlan, input: ApplyInput): ManagedNic[] {
  const failing = plan.managed.filter((m) => Object.values(LINK_ASPECTS).some((a) => input.failing.some((f) => isAbout(f, m.nic.iface, a))));
  const rewritten = input.write.some((f) => f.path === LINKS_NETPLAN_PATH || f.path === LINKS_STANZA_PATH);
  return failing.length === 0 && rewritten ? [...plan.managed] : failing;
}

export function linksApply(ctx: HostContext, plan: LinksPlan, input: ApplyInput): ApplyPart {
  const touched = touchedNics(plan, input);
  if (touched.length === 0) return {};
  const nics = touched.map((m) => m.nic.iface);
  const manager = { networkmanager: () => nmLines(ctx, touched), netplan: () => ['# netplan: ibfleet\'s file for the fabric NICs, into systemd-networkd.', ...renderNetplanApply(true, nics)], ifupdown: () => ifupdownLines(touched) }[ctx.manager]();
  const memo: LinksMemo = { manager: ctx.manager, nics: touched.map((m) => ({ iface: m.nic.iface, address: m.nic.address, prefixLength: m.nic.prefixLength, uuid: m.profile?.uuid, ipoib: m.ipoib })) };
  const lines = [
    AWAIT_ADDRESS_FUNCTION,
    "# The fabric NICs, in the manager's own configuration, before the routing needs their addresses.",
    ...manager,
    ...touched.map((m) => `await_address ${shellQuote(m.nic.iface)} ${shellQuote(m.nic.address)} || status=1`),
  ];
  // ifup runs if-up.d (ibfleet's hook among them) before it returns: it must not wait on the routing lock.
  return ctx.manager === 'ifupdown' ? { unlocked: lines, memo } : { manager: lines, memo };
}
