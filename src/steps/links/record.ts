/**
 * The links record, `/etc/ibfleet/links`: which fabric NICs ibfleet configured and how, kept on the
 * host so that a later run knows them as its own (and keeps them so, where the probe alone would see
 * only a NIC that carries its address) and `rollback` can put each back as it was: a profile
 * ibfleet created is deleted, one it changed gets its earlier properties back, ibfleet's netplan
 * file or stanza goes. A deploy renders it from the record it found and the NICs it takes over
 * now, so it changes only when ibfleet configures another NIC. Read back whole by the step's fact,
 * trusting none of it: every value is checked as it is parsed, and quoted wherever it is used. Pure.
 */
import type { Host, Manager } from '../../inventory/model.js';
import { IFACE_NAME } from '../../inventory/schema.js';
import { renderHeader } from '../../script/header.js';
import { hostFile } from '../../script/host-templates.js';
import type { RenderedFile } from '../../script/rendered-file.js';

export const LINKS_RECORD_PATH = '/etc/ibfleet/links';

/** A connection profile's properties links sets, as they were before it changed them (nmcli's words). */
export interface ProfileBefore {
  readonly method: string;
  readonly addresses: readonly string[];
  readonly mtu: string;
  readonly transportMode: string;
}

export type RecordEntry = (
  | {
      readonly iface: string;
      readonly manager: 'networkmanager';
      readonly uuid: string;
      readonly before: ProfileBefore | 'created';
    }
  | { readonly iface: string; readonly manager: Exclude<Manager, 'networkmanager'> }
) & {
  /** The link was down before ibfleet configured it (a machine as it arrives): rollback takes it down again. */
  readonly down?: boolean;
  /** The link's MTU before ibfleet configured it: rollback sets it again (a profile's `auto` MTU leaves the kernel's as it is). */
  readonly mtu?: number;
};

export interface LinksRecord {
  readonly entries: readonly RecordEntry[];
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** What a property value may be in the record: nmcli's words for methods, addresses, MTUs and modes. */
const VALUE = /^[A-Za-z0-9./:_-]*$/;

/** An entry's words but the link's state before (the record's line without link-mtu= and link=down). */
export function entryWords(e: RecordEntry): string {
  if (e.manager !== 'networkmanager') return `nic ${e.iface} ${e.manager}`;
  if (e.before === 'created') return `nic ${e.iface} networkmanager ${e.uuid} created`;
  const b = e.before;
  return `nic ${e.iface} networkmanager ${e.uuid} modified method=${b.method} addresses=${b.addresses.join(',')} mtu=${b.mtu} transport-mode=${b.transportMode}`;
}

function entryLine(e: RecordEntry): string {
  return `${entryWords(e)}${e.mtu !== undefined ? ` link-mtu=${e.mtu}` : ''}${e.down ? ' link=down' : ''}`;
}

/** host/files/links-record: a line per NIC links configured. */
export function renderLinksRecord(host: Host, playbook: string, record: LinksRecord): string {
  return hostFile('links-record', {
    HEADER: renderHeader(host, playbook, LINKS_RECORD_PATH).split('\n'),
    ENTRIES: record.entries.map(entryLine),
  });
}

export function linksRecordFile(host: Host, playbook: string, record: LinksRecord): RenderedFile {
  return {
    path: LINKS_RECORD_PATH,
    mode: 0o644,
    content: renderLinksRecord(host, playbook, record),
    role: 'record',
    kind: 'links-record',
  };
}

function parseBefore(words: readonly string[]): ProfileBefore | undefined {
  const props = new Map(words.map((w) => [w.slice(0, w.indexOf('=')), w.slice(w.indexOf('=') + 1)] as const));
  const values = ['method', 'addresses', 'mtu', 'transport-mode'].map((k) => props.get(k));
  if (values.some((v) => v === undefined || !VALUE.test(v.replace(/,/g, '')))) return undefined;
  const [method, addresses, mtu, transportMode] = values as string[];
  return {
    method: method!,
    addresses: addresses!.split(',').filter(Boolean),
    mtu: mtu!,
    transportMode: transportMode!,
  };
}

/** The link's state before, at the end of an entry's line: `link-mtu=2044`, `link=down`. */
function parseEntry(line: string): RecordEntry | undefined {
  const words = line.trim().split(/\s+/);
  const down = words.includes('link=down');
  const mtuWord = words.find((w) => /^link-mtu=\d{2,5}$/.test(w));
  const entry = parseWords(words.filter((w) => w !== 'link=down' && w !== mtuWord));
  if (!entry) return undefined;
  return {
    ...entry,
    ...(down ? { down } : {}),
    ...(mtuWord ? { mtu: Number(mtuWord.slice('link-mtu='.length)) } : {}),
  };
}

function parseWords(words: readonly string[]): RecordEntry | undefined {
  const [word, iface, manager, uuid, how, ...rest] = words;
  if (word !== 'nic' || iface === undefined || !IFACE_NAME.test(iface)) return undefined;
  if ((manager === 'netplan' || manager === 'ifupdown') && uuid === undefined) return { iface, manager };
  if (manager !== 'networkmanager' || uuid === undefined || !UUID.test(uuid)) return undefined;
  if (how === 'created' && rest.length === 0) return { iface, manager, uuid, before: 'created' };
  const before = how === 'modified' ? parseBefore(rest) : undefined;
  return before ? { iface, manager, uuid, before } : undefined;
}

/** The record's text as data; lines not in its form are skipped, and an interface listed twice counts once (its first line). */
export function parseLinksRecord(text: string): LinksRecord {
  const entries: RecordEntry[] = [];
  for (const line of text.split('\n')) {
    const entry = parseEntry(line);
    if (entry && !entries.some((e) => e.iface === entry.iface)) entries.push(entry);
  }
  return { entries };
}

export function recordOf(record: LinksRecord | undefined, iface: string): RecordEntry | undefined {
  return record?.entries.find((e) => e.iface === iface);
}
