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
import { isAbout, type ApplyInput, type ApplyPart, type HostContext } from '../step.js';
import { LINKS_NETPLAN_PATH, LINKS_STANZA_PATH, type LinksPlan, type ManagedNic } from './decide.js';
import { foundProfile, LINK_ASPECTS } from './findings.js';
import { versionAtLeast } from '../../facts/nm-facts.js';
import { keyfilePath, nmLinkCommands, NM_ADD_UUID_SINCE } from './networkmanager.js';

/**
 * Each command that tells the manager something goes through `tell`, and the change waits for each
 * NIC's address with `await_address`: both host/functions/links.sh's.
 */

/** What a change told the host, for the restore after a failed verification. */
export interface LinksMemo {
  readonly manager: Manager;
  /** `keyfile`: the keyfile the change writes for a profile it adds (NetworkManager before 1.42), gone with the profile. */
  readonly nics: readonly {
    readonly iface: string;
    readonly address: string;
    readonly prefixLength: number;
    readonly uuid: string | undefined;
    readonly ipoib: boolean;
    readonly keyfile?: string;
  }[];
}

/** `command`: shell words, quoted where needed; `failed`: what was being done, for the message when it fails. */
export function told(command: string, done: string, failed: string): string {
  return `tell ${shellQuote(done)} ${shellQuote(failed)} ${command}`;
}

/** NetworkManager before 1.42: ibfleet's new profiles go in as keyfiles (networkmanager.ts NM_ADD_UUID_SINCE). */
function viaKeyfile(ctx: HostContext): boolean {
  return ctx.facts.nm !== undefined && !versionAtLeast(ctx.facts.nm.version, NM_ADD_UUID_SINCE);
}

function nmLines(ctx: HostContext, touched: readonly ManagedNic[]): string[] {
  const keyfile = viaKeyfile(ctx);
  return [
    ...(keyfile
      ? [
          `# NetworkManager ${ctx.facts.nm!.version.replace(/[^0-9A-Za-z.~+-]/g, '?')}: before ${NM_ADD_UUID_SINCE} nmcli gives no new profile its uuid; ibfleet writes the keyfile and has it loaded.`,
        ]
      : []),
    ...touched.flatMap((m) => {
      const found = foundProfile(ctx.facts, m);
      return [
        `# ${m.nic.iface}: connection profile ${(found?.name ?? m.profile!.name).replace(/[\r\n]/g, ' ')}`,
        ...nmLinkCommands(m, found, keyfile).map((c) => told(c.run, c.says, c.does)),
      ];
    }),
  ];
}

export function ifupdownLines(touched: readonly ManagedNic[]): string[] {
  // Down first where it is up: ifup does nothing for an interface ifupdown thinks configured.
  return touched.flatMap((m) => [
    `[ "$status" -ne 0 ] || ifdown --force ${shellQuote(m.nic.iface)} >/dev/null 2>&1`,
    told(`ifup ${shellQuote(m.nic.iface)}`, `${m.nic.iface}: ifup`, `${m.nic.iface}: ifup`),
  ]);
}

/**
 * netplan: ibfleet's file regenerated into networkd's configuration, then networkd reloaded and
 * only the NICs the reload did not configure reconfigured (host/functions/links.sh netplan_reload;
 * networkd before 244, no reload: netplan apply), each command's failure in its own words.
 */
export function netplanLines(nics: readonly string[]): string[] {
  const quoted = nics.map(shellQuote).join(' ');
  return [
    "# netplan: ibfleet's file for the fabric NICs, regenerated and reloaded into systemd-networkd.",
    told('netplan generate', 'netplan generate', 'netplan generate'),
    'if [ "$status" -ne 0 ]; then :',
    `elif netplan_reload ${quoted}; then :`,
    `else ${told('netplan apply', 'netplan apply', 'netplan apply')}`,
    'fi',
  ];
}

/** The NICs the change configures: those whose checks failed; every NIC of ibfleet's file when the file is rewritten. */
export function touchedNics(plan: LinksPlan, input: ApplyInput): ManagedNic[] {
  const failing = plan.managed.filter((m) =>
    Object.values(LINK_ASPECTS).some((a) => input.failing.some((f) => isAbout(f, m.nic.iface, a))),
  );
  const rewritten = input.write.some((f) => f.path === LINKS_NETPLAN_PATH || f.path === LINKS_STANZA_PATH);
  return failing.length === 0 && rewritten ? [...plan.managed] : failing;
}

export function linksApply(ctx: HostContext, plan: LinksPlan, input: ApplyInput): ApplyPart {
  const touched = touchedNics(plan, input);
  if (touched.length === 0) return {};
  const nics = touched.map((m) => m.nic.iface);
  const manager = {
    networkmanager: () => nmLines(ctx, touched),
    netplan: () => netplanLines(nics),
    ifupdown: () => ifupdownLines(touched),
  }[ctx.manager]();
  const keyfile = ctx.manager === 'networkmanager' && viaKeyfile(ctx);
  const memo: LinksMemo = {
    manager: ctx.manager,
    nics: touched.map((m) => ({
      iface: m.nic.iface,
      address: m.nic.address,
      prefixLength: m.nic.prefixLength,
      uuid: m.profile?.uuid,
      ipoib: m.ipoib,
      ...(keyfile && m.profile ? { keyfile: keyfilePath(m) } : {}),
    })),
  };
  const lines = [
    "# The fabric NICs, in the manager's own configuration, before the routing needs their addresses.",
    ...manager,
    // An address is awaited only from a manager that took every command: after a failed one none will come.
    ...touched.map(
      (m) => `[ "$status" -ne 0 ] || await_address ${shellQuote(m.nic.iface)} ${shellQuote(m.nic.address)} || status=1`,
    ),
  ];
  // ifup runs if-up.d (ibfleet's hook among them) before it returns: it must not wait on the routing lock.
  return ctx.manager === 'ifupdown' ? { unlocked: lines, memo } : { manager: lines, memo };
}
