/**
 * Taking links back. Rollback, from the host's record of what ibfleet configured: ifupdown's NICs
 * taken down while ibfleet's stanza is still there to say how, then (ibfleet's files gone) the
 * profiles ibfleet created deleted and those it changed given their earlier properties back,
 * networkd reloaded without ibfleet's netplan file — and the addresses ibfleet put on gone from
 * the kernel: a fresh machine rolled back is fresh again. The restore after a failed verification
 * puts back what the change told the manager, from the probe before it. Pure; what the host printed
 * is quoted in every line.
 */
import { factOf, type HostFacts } from '../../facts/host-facts.js';
import type { Host } from '../../inventory/model.js';
import { renderNetplanApply } from '../../script/netplan.js';
import { shellQuote } from '../../script/shell.js';
import {
  change,
  type FactsContext,
  type Finding,
  type Restore,
  type RollbackContext,
  type Undo,
  type UndoLines,
} from '../step.js';
import type { LinksMemo } from './apply.js';
import { LINKS_FACT, ARPHRD_INFINIBAND } from './facts.js';
import { nmDevice } from './decide.js';
import { hardwareIface } from './hardware.js';
import { profileApplies } from './nm-match.js';
import { deleteCommand, modifyCommand, restoreWords, upCommand } from './networkmanager.js';
import type { RecordEntry } from './record.js';

function addressOf(host: Host, iface: string): { readonly address: string; readonly prefixLength: number } | undefined {
  return host.nics.find((n) => n.iface === iface);
}

function ipoibOf(host: Host, facts: HostFacts, iface: string): boolean {
  const nic = host.nics.find((n) => n.iface === iface);
  return factOf(facts, LINKS_FACT).sys.get(nic ? hardwareIface(nic) : iface)?.type === ARPHRD_INFINIBAND;
}

function entryText(e: RecordEntry): string {
  if (e.manager === 'networkmanager')
    return e.before === 'created'
      ? `connection profile ${e.uuid} ibfleet added`
      : `connection profile ${e.uuid} ibfleet changed`;
  return e.manager === 'netplan' ? "its entry in ibfleet's netplan file" : "its stanza in ibfleet's interfaces.d file";
}

/** The NICs whose whole configuration ibfleet created (no profile, file entry or stanza of the host's own before): their addresses go with it. */
function createdIfaces(facts: HostFacts): string[] {
  const entries = factOf(facts, LINKS_FACT).record?.entries ?? [];
  return entries.filter((e) => e.manager !== 'networkmanager' || e.before === 'created').map((e) => e.iface);
}

/**
 * Said as deploy said it: NetworkManager's profiles (deleted, or back as they were), and the
 * addresses that go with what ibfleet created — netplan's and ifupdown's configuration of a NIC is
 * its address.
 */
function rollbackFindings({ host, facts, withdrawn }: RollbackContext): Finding[] {
  const links = factOf(facts, LINKS_FACT);
  const entries = links.record?.entries ?? [];
  const profiles = entries
    .filter((e) => e.manager === 'networkmanager')
    .map((e): Finding => ({
      id: `link ${e.iface}`,
      subject: { kind: 'nic', iface: e.iface, aspect: 'link' },
      // A profile ibfleet added and someone deleted since has nothing left to remove.
      ok: e.before === 'created' && !(links.nm?.some((p) => p.uuid === e.uuid) ?? false),
      detail: `${e.iface}: configured by ibfleet (${entryText(e)})`,
      fix: change(
        'link-profile',
        e.before === 'created' ? 'remove' : 'set',
        e.iface,
        `${e.iface}: ${e.before === 'created' ? `${entryText(e)} removed` : 'profile back as it was'}`,
      ),
    }));
  const addresses = entries
    .filter((e) => withdrawn.includes(e.iface))
    .map((e): Finding => {
      const nic = addressOf(host, e.iface);
      const carried =
        nic !== undefined && facts.addresses.some((a) => a.iface === e.iface && a.address === nic.address);
      return {
        id: `link address ${e.iface}`,
        subject: { kind: 'nic', iface: e.iface, aspect: 'link address' },
        ok: !carried,
        detail: `${e.iface}: ${nic?.address ?? 'its address'} configured by ibfleet (${entryText(e)})`,
        fix: change(
          'link-address',
          'remove',
          e.iface,
          `${e.iface}: ${nic?.address ?? 'its address'} removed${e.manager === 'networkmanager' ? '' : ` with ${entryText(e)}`}`,
        ),
      };
    });
  return [...profiles, ...addresses];
}

/** A profile of ibfleet's deleted, or a changed one given its earlier properties back (and activated again when it is active now). */
function nmUndo(host: Host, facts: HostFacts, e: Extract<RecordEntry, { manager: 'networkmanager' }>): string[] {
  const exists = factOf(facts, LINKS_FACT).nm?.some((p) => p.uuid === e.uuid) ?? false;
  if (!exists) return [];
  if (e.before === 'created')
    return [
      `if ${deleteCommand(e.uuid)} >/dev/null; then echo ${shellQuote(`ibfleet: ${e.iface}: connection profile ${e.uuid} deleted`)}; else status=1; fi`,
    ];
  const active = facts.nm?.active.get(e.iface) === e.uuid;
  return [
    `if ${modifyCommand(e.uuid, restoreWords({ ipoib: ipoibOf(host, facts, e.iface) }, e.before))}; then echo ${shellQuote(`ibfleet: ${e.iface}: connection profile ${e.uuid} as it was`)}; else status=1; fi`,
    ...(active ? [`${upCommand(e.uuid)} >/dev/null || status=1`] : []),
  ];
}

/** The addresses ibfleet put on NICs it configured, gone from the kernel once no manager holds them. */
function dropAddresses(host: Host, ifaces: readonly string[]): string[] {
  return ifaces.flatMap((iface) => {
    const nic = addressOf(host, iface);
    return nic
      ? [
          `ip -4 addr del ${shellQuote(`${nic.address}/${nic.prefixLength}`)} dev ${shellQuote(iface)} 2>/dev/null && echo ${shellQuote(`ibfleet: ${iface}: ${nic.address} removed`)}`,
        ]
      : [];
  });
}

function rollbackLines({ host, facts }: FactsContext): UndoLines {
  const entries = factOf(facts, LINKS_FACT).record?.entries ?? [];
  const nm = entries.filter(
    (e): e is Extract<RecordEntry, { manager: 'networkmanager' }> => e.manager === 'networkmanager',
  );
  const netplan = entries.filter((e) => e.manager === 'netplan').map((e) => e.iface);
  const ifupdown = entries.filter((e) => e.manager === 'ifupdown').map((e) => e.iface);
  const created = createdIfaces(facts);
  return {
    beforeFiles: ifupdown.map((iface) => `ifdown --force ${shellQuote(iface)} >/dev/null 2>&1 || true`),
    manager: [
      ...(entries.length
        ? ['# The fabric NICs ibfleet configured: each as it was before (its record, /etc/ibfleet/links).']
        : []),
      ...nm.flatMap((e) => nmUndo(host, facts, e)),
      ...(netplan.length ? renderNetplanApply(true, netplan) : []),
      // A link that was up before ibfleet configured it is up again: ifupdown's ifdown above took it down.
      ...entries.filter((e) => !e.down).map((e) => `ip link set dev ${shellQuote(e.iface)} up 2>/dev/null`),
    ],
    // A link that was down before ibfleet configured it goes down again (with it the IPv6 link-local address the kernel gave it).
    kernel: [
      ...dropAddresses(host, created),
      ...entries.flatMap((e) =>
        e.mtu !== undefined ? [`ip link set dev ${shellQuote(e.iface)} mtu ${e.mtu} 2>/dev/null`] : [],
      ),
      ...entries.filter((e) => e.down).map((e) => `ip link set dev ${shellQuote(e.iface)} down 2>/dev/null`),
    ],
  };
}

export const linksUndo: Undo = {
  findings: rollbackFindings,
  lines: rollbackLines,
  withdraws: ({ facts }) => createdIfaces(facts),
};

function snapshot({ host, facts }: FactsContext): [string, string][] {
  const links = factOf(facts, LINKS_FACT);
  return host.nics.map((nic): [string, string] => {
    const addresses = facts.addresses.filter((a) => a.iface === nic.iface).map((a) => `${a.address}/${a.prefixLength}`);
    const link = facts.links.get(nic.iface);
    const profiles = (links.nm ?? [])
      .filter((p) => profileApplies(p, nmDevice(facts, links, nic)))
      .map(
        (p) =>
          `${p.uuid} ${p.method} ${p.addresses.join(',')} mtu ${p.mtu}${p.transportMode ? ` ${p.transportMode}` : ''}`,
      );
    const mode = links.sys.get(nic.iface)?.mode;
    return [
      `${nic.iface} link`,
      `${link ? `${link.up ? 'up' : 'down'} mtu ${link.mtu}${mode ? ` ${mode}` : ''}` : 'absent'}, ${addresses.join(' ') || 'no address'}${links.nm ? `, profiles ${profiles.join('; ') || '(none)'}` : ''}`,
    ];
  });
}

/**
 * Each fabric NIC's link (and a P_Key child's parent's) as the probe before the change found it,
 * up or down: a manager's commands change it on the way (ifupdown's `ifdown --force` before `ifup`
 * takes a NIC down that was up, `ifup` and networkd bring up one that was down), and the restore's
 * own `ifdown` does too. Up before the kernel's state is put back (a route needs its NIC up), down
 * after (the addresses it carried gone first).
 */
function linkStates(host: Host, facts: HostFacts): { readonly up: string[]; readonly down: string[] } {
  const ifaces = [...new Set(host.nics.flatMap((n) => [hardwareIface(n), n.iface]))];
  const known = ifaces.flatMap((iface) => {
    const link = facts.links.get(iface);
    return link ? [{ iface, up: link.up }] : [];
  });
  const set = (state: 'up' | 'down') =>
    known
      .filter((l) => l.up === (state === 'up'))
      .map((l) => `ip link set dev ${shellQuote(l.iface)} ${state} 2>/dev/null`);
  return { up: set('up'), down: set('down') };
}

/** The restore: each NIC the change configured back as the probe before it found it, and every fabric NIC's link up or down as it was. */
function restoreLines({ host, facts }: FactsContext, memo: unknown): UndoLines {
  const told = (memo as LinksMemo | undefined)?.nics ?? [];
  if (told.length === 0) return {};
  const before = factOf(facts, LINKS_FACT);
  const nm = told
    .filter((n) => n.uuid !== undefined)
    .flatMap((n) => {
      const was = before.nm?.find((p) => p.uuid === n.uuid);
      // A keyfile the change wrote that NetworkManager did not load is no profile to delete: the file goes itself (only ibfleet's: it names the uuid).
      if (!was)
        return [
          `${deleteCommand(n.uuid!)} >/dev/null 2>&1 || true`,
          ...(n.keyfile
            ? [
                `! grep -q -x -F ${shellQuote(`uuid=${n.uuid!}`)} ${shellQuote(n.keyfile)} 2>/dev/null || rm -f ${shellQuote(n.keyfile)}`,
              ]
            : []),
        ];
      const active = facts.nm?.active.get(n.iface) === n.uuid;
      return [
        `${modifyCommand(n.uuid!, restoreWords(n, was))} || status=1`,
        ...(active ? [`${upCommand(n.uuid!)} >/dev/null || status=1`] : []),
      ];
    });
  const { manager } = memo as LinksMemo;
  const links = linkStates(host, facts);
  const kernel = told.flatMap((n) => {
    const had = facts.addresses.some((a) => a.iface === n.iface && a.address === n.address);
    const link = facts.links.get(n.iface);
    return [
      ...(had
        ? []
        : [`ip -4 addr del ${shellQuote(`${n.address}/${n.prefixLength}`)} dev ${shellQuote(n.iface)} 2>/dev/null`]),
      ...(link?.mtu !== undefined ? [`ip link set dev ${shellQuote(n.iface)} mtu ${link.mtu} 2>/dev/null`] : []),
    ];
  });
  const ifaces = told.map((n) => n.iface);
  // ifupdown: down while the change's stanza is still there to say how; up again where a stanza of ibfleet's configured it before.
  const upAgain = told.filter((n) =>
    before.record?.entries.some((e) => e.iface === n.iface && e.manager === 'ifupdown'),
  );
  return {
    beforeFiles:
      manager === 'ifupdown'
        ? ifaces.map((iface) => `ifdown --force ${shellQuote(iface)} >/dev/null 2>&1 || true`)
        : [],
    manager: [
      '',
      '# The fabric NICs the change configured, as they were.',
      ...nm,
      ...(manager === 'netplan' ? renderNetplanApply(true, ifaces) : []),
      ...(manager === 'ifupdown' ? upAgain.map((n) => `ifup ${shellQuote(n.iface)} || status=1`) : []),
      '# Each fabric NIC up or down, as it was.',
      ...links.up,
    ],
    kernel: [...kernel, ...links.down],
  };
}

export const linksRestore: Restore = { snapshot, lines: restoreLines };
