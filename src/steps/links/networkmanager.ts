/**
 * The links step on NetworkManager hosts: one connection profile per fabric NIC, through nmcli
 * (NetworkManager writes its keyfiles; ibfleet never edits one). An IPoIB NIC (kernel type 32)
 * gets an `infiniband` profile — `infiniband.transport-mode`, `infiniband.mtu`, and for a
 * partition `infiniband.parent` + `infiniband.p-key`, from which NetworkManager creates the child
 * interface itself — an Ethernet/RoCE NIC an `ethernet` one. A profile already bound to the NIC is
 * changed (only the properties asked for); otherwise ibfleet adds its own, with a uuid derived from
 * the host and interface so every later run finds it. Then the profile is activated and the
 * address awaited: NetworkManager applies asynchronously. Pure string builders.
 */
import { hostFile } from '../../script/host-templates.js';
import { shellQuote } from '../../script/shell.js';
import type { ManagedNic } from './decide.js';
import { partitionOf } from './decide.js';
import type { NmLink } from './facts.js';
import type { ProfileBefore } from './record.js';

/** The profile's type, as nmcli names it when adding one and prints it back. */
export function profileType(m: ManagedNic): { readonly add: string; readonly shown: string; readonly mtu: string } {
  return m.ipoib
    ? { add: 'infiniband', shown: 'infiniband', mtu: 'infiniband.mtu' }
    : { add: 'ethernet', shown: '802-3-ethernet', mtu: '802-3-ethernet.mtu' };
}

function cidr(m: ManagedNic): string {
  return `${m.nic.address}/${m.nic.prefixLength}`;
}

/** The properties the NIC's settings ask for (MTU, mode, partition), as nmcli words. */
function settingWords(m: ManagedNic): string[] {
  const words: string[] = [];
  if (m.want.mtu !== undefined) words.push(profileType(m).mtu, String(m.want.mtu));
  if (m.ipoib && m.want.mode !== undefined) words.push('infiniband.transport-mode', m.want.mode);
  const partition = partitionOf(m);
  if (m.ipoib && partition) words.push('infiniband.parent', partition.parent, 'infiniband.p-key', partition.pkey);
  return words;
}

/**
 * nmcli gives a profile it adds the uuid asked only from NetworkManager 1.42 (its NEWS: "support
 * setting the UUID when creating a connection"); before, `connection.uuid` on `add` is refused
 * ("the property can't be changed"). There ibfleet writes the profile's keyfile itself, root's
 * alone as NetworkManager requires, and has NetworkManager read it (`nmcli connection load`, in
 * every version ibfleet supports): the same profile, under the same uuid, whatever the version.
 */
export const NM_ADD_UUID_SINCE = '1.42';
/** Where NetworkManager keeps the profiles it writes (its keyfile plugin's directory). */
export const KEYFILE_DIR = '/etc/NetworkManager/system-connections';

export function keyfilePath(m: ManagedNic): string {
  return `${KEYFILE_DIR}/${m.profile!.name}.nmconnection`;
}

/** The keyfile of ibfleet's profile (host/files/nm-keyfile.nmconnection): what `addCommand` gives nmcli, in NetworkManager's keyfile words. */
export function keyfileText(m: ManagedNic): string {
  const p = m.profile!;
  const partition = partitionOf(m);
  return hostFile('nm-keyfile.nmconnection', {
    NAME: p.name,
    UUID: p.uuid,
    TYPE: profileType(m).shown,
    IFACE: m.nic.iface,
    SETTINGS: [
      ...(m.want.mtu !== undefined ? [`mtu=${m.want.mtu}`] : []),
      ...(m.ipoib && m.want.mode !== undefined ? [`transport-mode=${m.want.mode}`] : []),
      ...(m.ipoib && partition ? [`parent=${partition.parent}`, `p-key=${Number(partition.pkey)}`] : []),
    ],
    CIDR: cidr(m),
  });
}

/** `nmcli connection add …`: ibfleet's profile for a NIC that has none. */
export function addCommand(m: ManagedNic): string {
  const p = m.profile!;
  const words = [
    'nmcli',
    'connection',
    'add',
    'type',
    profileType(m).add,
    'con-name',
    p.name,
    'ifname',
    m.nic.iface,
    'connection.uuid',
    p.uuid,
    'connection.autoconnect',
    'yes',
    'ipv4.method',
    'manual',
    'ipv4.addresses',
    cidr(m),
    'ipv6.method',
    'ignore',
    ...settingWords(m),
  ];
  return words.map(shellQuote).join(' ');
}

/** What an existing profile lacks of what is asked, as nmcli words ([] when it has it all). */
export function profileEdits(m: ManagedNic, p: NmLink): string[] {
  const words: string[] = [];
  if (p.method !== 'manual') words.push('ipv4.method', 'manual');
  if (!p.addresses.includes(cidr(m))) words.push('+ipv4.addresses', cidr(m));
  if (m.want.mtu !== undefined && p.mtu !== String(m.want.mtu)) words.push(profileType(m).mtu, String(m.want.mtu));
  if (m.ipoib && m.want.mode !== undefined && p.transportMode !== m.want.mode)
    words.push('infiniband.transport-mode', m.want.mode);
  const partition = partitionOf(m);
  if (m.ipoib && partition && (p.parent !== partition.parent || !pkeyEquals(p.pkey, partition.pkey)))
    words.push('infiniband.parent', partition.parent, 'infiniband.p-key', partition.pkey);
  return words;
}

function pkeyEquals(shown: string, want: string): boolean {
  const value = Number(shown);
  return Number.isInteger(value) && value === Number(want);
}

export function modifyCommand(uuid: string, words: readonly string[]): string {
  return ['nmcli', 'connection', 'modify', 'uuid', uuid, ...words].map(shellQuote).join(' ');
}

/** Activate (again): a changed MTU or transport mode needs a new activation, not a reapply. */
export function upCommand(uuid: string): string {
  return `nmcli --wait 30 connection up uuid ${shellQuote(uuid)}`;
}

/** A command of the change, what it says when it succeeded, and what it was doing (for when it failed). */
export interface NmStep {
  readonly run: string;
  readonly says: string;
  readonly does: string;
}

/**
 * The commands that make the NIC as asked: its profile added or changed, then activated. ibfleet's
 * own profile found with another type (edited by hand) is made anew: a type cannot be changed.
 */
export function nmLinkCommands(m: ManagedNic, found: NmLink | undefined, keyfile: boolean): NmStep[] {
  const p = m.profile!;
  const iface = m.nic.iface;
  const up = {
    run: upCommand(p.uuid),
    says: `${iface}: profile ${p.name} activated`,
    does: `${iface}: nmcli connection up (profile ${p.name})`,
  };
  const path = keyfilePath(m);
  const add = keyfile
    ? [
        {
          run: `new_keyfile ${shellQuote(path)} ${shellQuote(keyfileText(m))}`,
          says: `${iface}: profile ${p.name} written (${path})`,
          does: `${iface}: writing ${path}`,
        },
        {
          run: `nmcli connection load ${shellQuote(path)}`,
          says: `${iface}: profile ${p.name} loaded`,
          does: `${iface}: nmcli connection load (profile ${p.name})`,
        },
      ]
    : [
        {
          run: addCommand(m),
          says: `${iface}: profile ${p.name} added`,
          does: `${iface}: nmcli connection add (profile ${p.name})`,
        },
      ];
  if (!found) return [...add, up];
  if (p.own && found.type !== profileType(m).shown)
    return [
      {
        run: deleteCommand(p.uuid),
        says: `${iface}: profile ${p.name} of type ${found.type} deleted`,
        does: `${iface}: nmcli connection delete (profile ${p.name})`,
      },
      ...add,
      up,
    ];
  const edits = profileEdits(m, found);
  return [
    ...(edits.length
      ? [
          {
            run: modifyCommand(p.uuid, edits),
            says: `${iface}: profile ${found.name} changed`,
            does: `${iface}: nmcli connection modify (profile ${found.name})`,
          },
        ]
      : []),
    up,
  ];
}

/** A changed profile's properties as they were (rollback, restore): nmcli's words, each quoted. */
export function restoreWords(m: { readonly ipoib: boolean }, before: ProfileBefore): string[] {
  const mtu = m.ipoib ? 'infiniband.mtu' : '802-3-ethernet.mtu';
  const words = [
    'ipv4.method',
    before.method || 'auto',
    'ipv4.addresses',
    before.addresses.join(', '),
    mtu,
    before.mtu || 'auto',
  ];
  if (m.ipoib && before.transportMode) words.push('infiniband.transport-mode', before.transportMode);
  return words;
}

export function deleteCommand(uuid: string): string {
  return `nmcli connection delete uuid ${shellQuote(uuid)}`;
}
