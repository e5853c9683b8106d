/**
 * What the links step checks on a NIC it configures (deploy's plan, the check after a change,
 * status's drift): the convention address is on it and the link up, the IPoIB mode and MTU are as
 * asked, and — on NetworkManager hosts — its connection profile still holds what ibfleet set (an
 * edited profile is drift). A NIC left as it is says so. Pure.
 */
import { factOf, type HostFacts } from '../../facts/host-facts.js';
import type { Manager, Nic } from '../../inventory/model.js';
import { change, nicFinding, type Finding } from '../step.js';
import { LINKS_NETPLAN_PATH, LINKS_STANZA_PATH, type ManagedNic } from './decide.js';
import { LINKS_FACT, type NmLink } from './facts.js';
import { profileEdits, profileType } from './networkmanager.js';

/** The NIC aspects links checks (Subject.aspect). */
export const LINK_ASPECTS = {
  address: 'link address',
  mode: 'link mode',
  mtu: 'link mtu',
  profile: 'link profile',
} as const;

/** How the change configures the NIC, in the plan's words. */
function how(m: ManagedNic, manager: Manager, found: NmLink | undefined): string {
  switch (manager) {
    case 'networkmanager':
      return found
        ? `nmcli: profile ${found.name} changed, activated`
        : `nmcli: new ${profileType(m).add} profile ${m.profile!.name}, activated`;
    case 'netplan':
      return `${LINKS_NETPLAN_PATH}, networkctl reconfigure`;
    case 'ifupdown':
      return `${LINKS_STANZA_PATH}, ifup`;
  }
}

export function foundProfile(facts: HostFacts, m: ManagedNic): NmLink | undefined {
  return m.profile ? factOf(facts, LINKS_FACT).nm?.find((p) => p.uuid === m.profile!.uuid) : undefined;
}

/**
 * The NIC's address. Not as it should be, it is said in the engine's words for a NIC without its
 * address (plan/assess.ts nicBlockers, and the routing script's --check): status reads the same
 * whether links provides the address or the playbook leaves it to the host.
 */
function addressFinding(facts: HostFacts, hostId: number, m: ManagedNic, text: string): Finding {
  const { nic } = m;
  const link = facts.links.get(nic.iface);
  const has = facts.addresses.some((a) => a.iface === nic.iface && a.address === nic.address);
  const ok = has && link?.up === true;
  const cidr = `${nic.address}/${nic.prefixLength}`;
  const others = facts.addresses
    .filter((a) => a.iface === nic.iface)
    .map((a) => `${a.address}/${a.prefixLength}`)
    .join(', ');
  const detail = ok
    ? `${nic.iface}: ${cidr}, configured by ibfleet`
    : !link
      ? `${nic.iface} is not there (NIC ${nic.index}'s P_Key child, to be created)`
      : has
        ? `${nic.iface} is down (it carries ${nic.address}, but the link is not up)`
        : !link.up
          ? `${nic.iface} is down (no ${nic.address})`
          : `${nic.iface} carries ${others || 'no IPv4 address'}, but the convention gives NIC ${nic.index} of host ${hostId} ${cidr}`;
  return nicFinding(
    nic,
    LINK_ASPECTS.address,
    `link ${nic.iface}`,
    ok,
    detail,
    change('link-address', 'add', nic.iface, `${nic.iface}: ${cidr} (${text})`),
  );
}

function settingFindings(facts: HostFacts, m: ManagedNic, text: string): Finding[] {
  const { nic, want } = m;
  const findings: Finding[] = [];
  if (want.mode !== undefined) {
    const mode = factOf(facts, LINKS_FACT).sys.get(nic.iface)?.mode ?? '';
    findings.push(
      nicFinding(
        nic,
        LINK_ASPECTS.mode,
        `link mode ${nic.iface}`,
        mode === want.mode,
        mode === want.mode
          ? `${nic.iface}: IPoIB mode ${mode}`
          : `${nic.iface}: IPoIB mode is ${mode || 'unknown'}, want ${want.mode}`,
        change('link-setting', 'set', nic.iface, `${nic.iface}: mode ${want.mode} (${text})`),
      ),
    );
  }
  if (want.mtu !== undefined) {
    const mtu = facts.links.get(nic.iface)?.mtu;
    findings.push(
      nicFinding(
        nic,
        LINK_ASPECTS.mtu,
        `link mtu ${nic.iface}`,
        mtu === want.mtu,
        mtu === want.mtu ? `${nic.iface}: MTU ${mtu}` : `${nic.iface}: MTU is ${mtu ?? 'unknown'}, want ${want.mtu}`,
        change('link-setting', 'set', nic.iface, `${nic.iface}: MTU ${want.mtu} (${text})`),
      ),
    );
  }
  return findings;
}

/** NetworkManager: the profile is there and holds what ibfleet set (type, interface, method, address, asked settings). */
function profileFinding(m: ManagedNic, found: NmLink | undefined): Finding {
  const p = m.profile!;
  const { nic } = m;
  const label = `${nic.iface}: connection profile ${found?.name ?? p.name}`;
  const base = (ok: boolean, detail: string, text: string) =>
    nicFinding(
      nic,
      LINK_ASPECTS.profile,
      `link profile ${nic.iface}`,
      ok,
      detail,
      change('link-profile', found ? 'set' : 'add', nic.iface, text),
    );
  if (!found)
    return base(
      false,
      p.existing ? `${label} (${p.uuid}) is gone` : `${nic.iface}: no connection profile (ibfleet adds ${p.name})`,
      `${nic.iface}: nmcli connection add ${profileType(m).add} ${p.name}`,
    );
  const edits = profileEdits(m, found);
  const wrongType = p.own && (found.type !== profileType(m).shown || found.iface !== nic.iface);
  if (edits.length === 0 && !wrongType) return base(true, `${label}: ${found.type}, ${found.addresses.join(', ')}`, '');
  const what = wrongType
    ? `is a ${found.type} profile for ${found.iface || 'any interface'}, not ${profileType(m).shown} for ${nic.iface}`
    : `was changed: nmcli would set ${edits.join(' ')}`;
  return base(false, `${label} ${what}`, `${nic.iface}: nmcli connection modify ${found.name}: ${edits.join(' ')}`);
}

export function managedFindings(facts: HostFacts, hostId: number, manager: Manager, m: ManagedNic): Finding[] {
  const found = manager === 'networkmanager' ? foundProfile(facts, m) : undefined;
  const text = how(m, manager, found);
  return [
    ...(manager === 'networkmanager' ? [profileFinding(m, found)] : []),
    addressFinding(facts, hostId, m, text),
    ...settingFindings(facts, m, text),
  ];
}

/** A NIC links leaves alone: it carries its address, as asked, however it got it. */
export function leftFinding(nic: Nic): Finding {
  return nicFinding(
    nic,
    LINK_ASPECTS.address,
    `link ${nic.iface}`,
    true,
    `${nic.iface}: ${nic.address}/${nic.prefixLength}, configured outside ibfleet (left as it is)`,
  );
}
