/**
 * The links step as `ibfleet export ansible` carries it: a program for each host that the exported
 * role runs before the routing. Deploy decides links from its probe; the project has none, so the
 * program decides on the host (host/functions/links-export.sh) — each fabric NIC ibfleet's before
 * (its record), carrying its address already (left as it is), or bare (ibfleet's configuration
 * added) — and refuses, changing nothing, a host where what is in the way is deploy's to weigh (a
 * profile, netplan file or stanza of the host's own; some NICs configured by the host, others
 * bare). What it writes and tells the manager is what deploy writes and tells it for a bare NIC:
 * the same rendered netplan file or stanzas, the same nmcli commands (or keyfile, NetworkManager
 * before 1.42), the same record; where a command fails, what it did is put back. It is rendered
 * only for a playbook whose links asks for the address alone (links' exportRefusal). Pure.
 */
import type { Host, Manager } from '../../inventory/model.js';
import { renderNetplanCheck } from '../../script/netplan.js';
import { shellQuote } from '../../script/shell.js';
import { ifupdownLines, netplanLines, told } from './apply.js';
import { bareNic, LINKS_NETPLAN_PATH, LINKS_STANZA_PATH, type ManagedNic } from './decide.js';
import { profileName, profileUuid } from './own-profile.js';
import { renderLinksStanzas } from './ifupdown.js';
import { renderLinksNetplan } from './netplan.js';
import { deleteCommand, keyfilePath, nmLinkCommands } from './networkmanager.js';
import { entryWords, LINKS_RECORD_PATH, renderLinksRecord } from './record.js';

/** A bare NIC as deploy configures it, nothing asked but the address. */
const bare = (host: Host, manager: Manager, nic: Host['nics'][number], ipoib: boolean): ManagedNic =>
  bareNic(host, manager, nic, {}, ipoib);

const q = shellQuote;
/** Before a line that holds a file's text in single quotes: its backquotes are text, not commands. */
const TEXT = "# shellcheck disable=SC2016 # a file's text, its backquotes and $ signs as they are";
const indent = (lines: readonly string[], tabs = 1) => lines.map((l) => `${'\t'.repeat(tabs)}${l}`);
/** `lx_is IFACE "$list…"`: the NIC is in one of the program's lists. */
const isIn = (iface: string, ...lists: string[]) => `lx_is ${q(iface)} "${lists.map((l) => `$${l}`).join(' ')}"`;

/** NetworkManager: a bare NIC's profile added (IPoIB or Ethernet, as the kernel's type says there) and activated; a recorded one activated again. */
function nmPart(host: Host): { apply: string[]; putBack: string[] } {
  const apply = host.nics.flatMap((nic) => {
    const variant = (ipoib: boolean, keyfile: boolean) =>
      nmLinkCommands(bare(host, 'networkmanager', nic, ipoib), undefined, keyfile).map((c) =>
        told(c.run, c.says, c.does),
      );
    const up = nmLinkCommands(bare(host, 'networkmanager', nic, false), undefined, false).at(-1)!;
    return [
      `# ${nic.iface}: connection profile ${profileName(nic.iface)}`,
      `if ${isIn(nic.iface, 'lx_new')}; then`,
      `\tif [ "$(cat ${q(`/sys/class/net/${nic.iface}/type`)} 2>/dev/null)" = 32 ]; then`,
      '\t\tif lx_nm_keyfile; then',
      ...indent(variant(true, true), 3),
      '\t\telse',
      ...indent(variant(true, false), 3),
      '\t\tfi',
      '\telif lx_nm_keyfile; then',
      ...indent(variant(false, true), 2),
      '\telse',
      ...indent(variant(false, false), 2),
      '\tfi',
      `elif ${isIn(nic.iface, 'lx_redo')}; then`,
      `\t${told(up.run, up.says, up.does)}`,
      'fi',
    ];
  });
  const putBack = host.nics.flatMap((nic) => {
    const m = bare(host, 'networkmanager', nic, false);
    const uuid = m.profile!.uuid;
    return [
      `if ${isIn(nic.iface, 'lx_new')}; then`,
      `\t${deleteCommand(uuid)} >/dev/null 2>&1 || true`,
      `\t! grep -q -x -F ${q(`uuid=${uuid}`)} ${q(keyfilePath(m))} 2>/dev/null || rm -f ${q(keyfilePath(m))}`,
      'fi',
    ];
  });
  return { apply, putBack };
}

/** netplan: ibfleet's file for every fabric NIC, checked by netplan generate before it goes live, then networkd reloaded. */
function netplanPart(host: Host, playbook: string): { apply: string[]; putBack: string[] } {
  const text = renderLinksNetplan(
    host,
    playbook,
    host.nics.map((n) => bare(host, 'netplan', n, false)),
  );
  return {
    apply: [
      TEXT,
      `lx_stage ${LINKS_NETPLAN_PATH} 0600 ${q(text)}`,
      'if [ -n "$lx_staged" ]; then',
      ...indent(renderNetplanCheck('"$lx_staged"', LINKS_NETPLAN_PATH)),
      'fi',
      `lx_install ${LINKS_NETPLAN_PATH}`,
      ...netplanLines(host.nics.map((n) => n.iface)),
    ],
    putBack: [
      'lx_put_back_files',
      'lx_installed=',
      'if netplan generate >/dev/null 2>&1; then networkctl reload >/dev/null 2>&1 || netplan apply >/dev/null 2>&1; fi',
    ],
  };
}

/** ifupdown: ibfleet's stanzas for every fabric NIC, each bare or recorded NIC brought (down and) up. */
function ifupdownPart(host: Host, playbook: string): { apply: string[]; putBack: string[] } {
  const text = renderLinksStanzas(
    host,
    playbook,
    host.nics.map((n) => bare(host, 'ifupdown', n, false)),
  );
  return {
    apply: [
      TEXT,
      `lx_stage ${LINKS_STANZA_PATH} 0644 ${q(text)}`,
      `lx_install ${LINKS_STANZA_PATH}`,
      ...host.nics.flatMap((nic) => [
        `if ${isIn(nic.iface, 'lx_new', 'lx_redo')}; then`,
        ...indent(ifupdownLines([bare(host, 'ifupdown', nic, false)])),
        'fi',
      ]),
    ],
    // Down while ibfleet's stanza is still there to say how.
    putBack: host.nics.map(
      (nic) => `! ${isIn(nic.iface, 'lx_new')} || ifdown --force ${q(nic.iface)} >/dev/null 2>&1 || true`,
    ),
  };
}

/** The record's line for a bare NIC, before anything changes (the link as it was: rollback puts it back). */
function recordLines(host: Host, manager: Manager): string[] {
  return host.nics.map((nic) => {
    const words =
      manager === 'networkmanager'
        ? entryWords({ iface: nic.iface, manager, uuid: profileUuid(host, nic.iface), before: 'created' })
        : entryWords({ iface: nic.iface, manager });
    return `! ${isIn(nic.iface, 'lx_new')} || { lx_note_down ${q(nic.iface)}; lx_entries="$lx_entries"${q(words)}"$(lx_was ${q(nic.iface)})$lx_nl"; }`;
  });
}

/**
 * The program: its exit says what happened — 0 nothing to do, or done ("ibfleet: links: configured"
 * said it changed the host); 1 a command failed and what it did is put back; 3 refused, the
 * reasons printed, nothing changed. With --check: 1 where it would configure, changing nothing.
 */
export function renderLinksExport(host: Host, manager: Manager, playbook: string): string {
  const part = {
    networkmanager: nmPart(host),
    netplan: netplanPart(host, playbook),
    ifupdown: ifupdownPart(host, playbook),
  }[manager];
  const record = renderLinksRecord(host, playbook, { entries: [] });
  return [
    `# The links step for host ${host.id} (${host.name}), ${manager}, playbook ${playbook}: the program \`ibfleet export ansible\``,
    '# renders for its role (src/steps/links/export.ts). Exit 0: nothing to do, or done; 1: failed, put back; 3: refused.',
    'set -u',
    "lx_nl='\n'",
    `status=0 lx_refusals='' lx_kept='' lx_redo='' lx_left='' lx_new='' lx_installed='' lx_entries='' lx_down='' lx_manager=${manager}`,
    ...host.nics.map((nic) => `lx_nic ${q(nic.iface)} ${q(nic.address)} lx_in_the_way_${manager}`),
    'lx_decide',
    'lx_rc=$?',
    '[ "$lx_rc" -eq 10 ] || exit "$lx_rc"',
    'if [ "${1:-}" = --check ]; then',
    '\techo "ibfleet: links: would configure${lx_new}${lx_redo} in ${lx_manager}\'s configuration"',
    '\texit 1',
    'fi',
    ...recordLines(host, manager),
    "# The fabric NICs, in the manager's own configuration, before the routing needs their addresses.",
    ...part.apply,
    ...host.nics.map(
      (nic) =>
        `! ${isIn(nic.iface, 'lx_new', 'lx_redo')} || [ "$status" -ne 0 ] || await_address ${q(nic.iface)} ${q(nic.address)} || status=1`,
    ),
    '# The record: what rollback takes back.',
    'lx_old=',
    `[ ! -f ${LINKS_RECORD_PATH} ] || lx_old=$(grep '^nic ' ${LINKS_RECORD_PATH})`,
    '[ -z "$lx_old" ] || lx_old="$lx_old$lx_nl"',
    `[ "$status" -ne 0 ] || mkdir -p ${LINKS_RECORD_PATH.slice(0, LINKS_RECORD_PATH.lastIndexOf('/'))} || status=1`,
    TEXT,
    `[ "$status" -ne 0 ] || lx_stage ${LINKS_RECORD_PATH} 0644 ${q(record)}"$lx_old$lx_entries"`,
    `lx_install ${LINKS_RECORD_PATH}`,
    'if [ "$status" -eq 0 ]; then',
    '\tlx_done',
    '\techo "ibfleet: links: configured${lx_new}${lx_redo}"',
    '\texit 0',
    'fi',
    '# A command failed: what this run did is put back, and the links as they were.',
    ...part.putBack,
    'lx_put_back_files',
    ...host.nics.map(
      (nic) =>
        `! ${isIn(nic.iface, 'lx_new')} || { ip -4 addr flush dev ${q(nic.iface)}; ! ${isIn(nic.iface, 'lx_down')} || ip link set dev ${q(nic.iface)} down; } 2>/dev/null`,
    ),
    'echo "ibfleet: links: put back as it was" >&2',
    'exit 1',
    '',
  ].join('\n');
}
