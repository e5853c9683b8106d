/**
 * Probe output → facts. Pure: takes the text the probe printed and returns what the host looks
 * like. The common facts every decision reads are fields here (what iproute2 printed is read by
 * ip-facts.ts, NetworkManager's answers by nm-facts.ts, the RDMA ports by rdma-facts.ts); the facts
 * a playbook step declares (fact.ts) are parsed by the step's own parser and read with factOf.
 */
import { OS_NAME_MAX, printableLine } from '../host-text.js';
import type { Fact } from './fact.js';
import { parseObstacles, type ObstacleKind } from './obstacles.js';
import { parseNmSection, type NmFacts } from './nm-facts.js';
import {
  parseAddresses,
  parseLinks,
  parseRoute,
  parseRouteGet,
  parseRule,
  splitIpBatch,
  type AddressFact,
  type LinkFact,
  type RouteFact,
  type RouteGetFact,
  type RuleFact,
} from './ip-facts.js';
import { CONTENT_PREFIX, contentLines, splitSections } from './probe-format.js';
import { parseRdmaSection, type RdmaFacts } from './rdma-facts.js';

export interface FileFact {
  readonly mode: number;
  readonly uid: number;
  readonly sha256: string;
  /** A symbolic link stands at the path (sha256 is its target's): an admin's, never ibfleet's own. */
  readonly link?: boolean;
}

export interface HostFacts {
  readonly uid: number | undefined;
  readonly os: Readonly<Record<string, string>>;
  readonly links: ReadonlyMap<string, LinkFact>;
  readonly addresses: readonly AddressFact[];
  readonly rules: readonly RuleFact[];
  /** Table name or number → routes. */
  readonly routes: ReadonlyMap<string, readonly RouteFact[]>;
  /** Interface → result of `ip route get <peer> from <its address>`. */
  readonly routeGet: ReadonlyMap<string, RouteGetFact>;
  /** Path → file facts, for the files of ibfleet's the probe found (a path it did not find is absent). */
  readonly files: ReadonlyMap<string, FileFact>;
  /** Where ibfleet writes, what stands in the way: a directory or device at a file's path, a file at a directory's (obstacles.ts). */
  readonly obstacles: ReadonlyMap<string, ObstacleKind>;
  /** Path → what the probe read of the file: its first lines, or all of it (probe option fileContents). */
  readonly contents: ReadonlyMap<string, { readonly text: string; readonly whole: boolean }>;
  readonly netplan: readonly { readonly file: string; readonly text: string }[];
  /** `interface-name=` lines of NetworkManager keyfiles: file → interface. */
  readonly nmConnections: readonly { readonly file: string; readonly iface: string }[];
  readonly ifcfg: readonly { readonly file: string; readonly iface: string }[];
  /** `auto`/`allow-*`/`iface` stanza lines of ifupdown: keyword and interface. */
  readonly ifupdown: readonly { readonly file: string; readonly keyword: string; readonly iface: string }[];
  readonly dirs: ReadonlySet<string>;
  /** Interfaces ifupdown has recorded as configured in /run/network/ifstate*. */
  readonly ifstate: ReadonlySet<string>;
  readonly tools: ReadonlySet<string>;
  /** The kernel's hostname (/proc/sys/kernel/hostname), as the machine calls itself. */
  readonly hostname: string | undefined;
  /** The fabric's RDMA devices and ports; undefined when the probe did not look (the probe closing a change). */
  readonly rdma: RdmaFacts | undefined;
  /** Where NetworkManager runs and answered: its version and the fabric NICs' active profiles. */
  readonly nm: NmFacts | undefined;
  /** The values of the steps' own facts, by fact name (read them with factOf). */
  readonly extra: ReadonlyMap<string, unknown>;
  /** False when the output stopped before the end marker (connection dropped, probe killed). */
  readonly complete: boolean;
}

/** A step's fact of this host: what its parser made of the probe, or of nothing when the probe did not run it. */
export function factOf<T>(facts: Pick<HostFacts, 'extra'>, fact: Fact<T>): T {
  return facts.extra.has(fact.name) ? (facts.extra.get(fact.name) as T) : fact.parse(new Map());
}

function parseOsRelease(lines: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of lines) {
    // Read whole whatever the value holds (`s`: U+2028 ends no value here); osName() reduces it.
    const match = /^([A-Z_]+)=(.*)$/s.exec(line.trim());
    if (!match) continue;
    const value = match[2]!;
    // Only a value that starts with a quote can lose one (most are unquoted: ID=ubuntu).
    out[match[1]!] =
      value[0] === '"' || value[0] === "'" ? value.replace(/^"(.*)"$/s, '$1').replace(/^'(.*)'$/s, '$1') : value;
  }
  return out;
}

/** The netplan files the probe printed: a `#file PATH` mark, then the file's lines behind the content prefix. */
function parseNetplan(lines: readonly string[]): { file: string; text: string }[] {
  const out: { file: string; text: string }[] = [];
  let current: { file: string; lines: string[] } | undefined;
  const files: { file: string; lines: string[] }[] = [];
  for (const line of lines) {
    const mark = /^#file (.+)$/.exec(line);
    if (mark) files.push((current = { file: mark[1]!, lines: [] }));
    else if (current && line.startsWith(CONTENT_PREFIX)) current.lines.push(line.slice(CONTENT_PREFIX.length));
  }
  for (const { file, lines: text } of files) out.push({ file, text: text.map((l) => `${l}\n`).join('') });
  return out;
}

/** The `files` section: `stat -c '%a %u %F|%n'` and `sha256sum` lines for ibfleet's files that exist. */
function parseFileSection(lines: readonly string[]): Map<string, FileFact> {
  const stats = new Map<string, { mode: number; uid: number; link?: boolean }>();
  const sums = new Map<string, string>();
  for (const line of lines) {
    // `%F|` (the file's type) is there since links are told apart; a probe without it reads as files.
    const sum = /^([0-9a-f]{64}) [ *](\/.*)$/.exec(line);
    const stat = sum ? null : /^([0-7]+) (\d+) (?:([a-z ]+)\|)?(\/.*)$/.exec(line);
    if (sum) sums.set(sum[2]!, sum[1]!);
    else if (stat)
      stats.set(stat[4]!, {
        mode: parseInt(stat[1]!, 8),
        uid: Number(stat[2]),
        ...(stat[3] === 'symbolic link' ? { link: true } : {}),
      });
  }
  const files = new Map<string, FileFact>();
  for (const [path, stat] of stats) {
    const sha256 = sums.get(path);
    if (sha256) files.set(path, { ...stat, sha256 });
  }
  return files;
}

/** Which manager's configuration a `config` line (grep -H output over every manager's files) is from. */
function configKind(line: string): 'nm' | 'ifcfg' | 'ifupdown' | undefined {
  if (/^\/(etc|run)\/NetworkManager\/system-connections\//.test(line)) return 'nm';
  if (line.startsWith('/etc/sysconfig/network-scripts/ifcfg-')) return 'ifcfg';
  if (/^\/etc\/network\/interfaces(\.d\/[^:]*)?:/.test(line)) return 'ifupdown';
  return undefined;
}

/** The managers' configuration for the NICs: NetworkManager keyfiles, ifcfg files, ifupdown stanzas. */
function parseConfig(lines: readonly string[]): Pick<HostFacts, 'nmConnections' | 'ifcfg' | 'ifupdown'> {
  const of = (kind: ReturnType<typeof configKind>) => lines.filter((l) => configKind(l) === kind);
  return {
    nmConnections: of('nm').flatMap((l) => {
      const m = /^([^:]+):\s*interface-name\s*=\s*(\S+)\s*$/.exec(l);
      return m ? [{ file: m[1]!, iface: m[2]! }] : [];
    }),
    ifcfg: of('ifcfg').flatMap((l) => {
      const m = /^([^:]+):DEVICE=["']?([^"'\s]+)/.exec(l);
      return m ? [{ file: m[1]!, iface: m[2]! }] : [];
    }),
    ifupdown: of('ifupdown').flatMap((l) => {
      const m = /^([^:]+):\s*(auto|allow-[a-z-]+|iface)\s+(.+)$/.exec(l);
      if (!m) return [];
      const [, file, keyword, rest] = m as unknown as [string, string, string, string];
      // `auto ib0 ib1` names several interfaces; `iface ib0 inet static` names one.
      const names = keyword === 'iface' ? [rest.split(/\s+/)[0]!] : rest.split(/\s+/);
      return names.map((iface) => ({ file, keyword, iface }));
    }),
  };
}

/** The `runtime` section: which managers' directories exist, what ifupdown brought up. */
function parseRuntime(lines: readonly string[]): Pick<HostFacts, 'dirs' | 'ifstate'> {
  return {
    dirs: new Set(lines.flatMap((l) => (l.startsWith('dir ') ? [l.slice(4).trim()] : []))),
    ifstate: new Set(
      lines.flatMap((l) => {
        const m = /^ifstate (\S+) ?(.*)$/.exec(l);
        if (!m) return [];
        // ifupdown 0.8: /run/network/ifstate.<iface> holding "<iface>"; older: one file of "iface=iface" lines.
        const fromName = /ifstate\.(.+)$/.exec(m[1]!)?.[1];
        return fromName
          ? [fromName]
          : m[2]!
              .split(/\s+/)
              .filter(Boolean)
              .map((e) => e.split('=')[0]!);
      }),
    ),
  };
}

/** The `ip` batch: links, addresses, rules, every table's routes, and each NIC's `route get`. */
function parseIp(
  sections: ReadonlyMap<string, readonly string[]>,
): Pick<HostFacts, 'links' | 'addresses' | 'rules' | 'routes' | 'routeGet'> {
  const ip = splitIpBatch(sections.get('ip') ?? []);
  const routes = new Map<string, RouteFact[]>();
  // The kernel's own `local` table (addresses of this host, broadcasts) says nothing ibfleet uses.
  for (const [table, lines] of ip.routes) if (table !== 'local') routes.set(table, lines.map(parseRoute));
  const routeGet = new Map<string, RouteGetFact>();
  // `route-get-from` names the NIC each `route get PEER from ADDR` was run for; a failed batch asks
  // each again on its own, in a `route-get IFACE` section that says why it failed.
  for (const line of sections.get('route-get-from') ?? []) {
    const [iface, peer, from] = line.trim().split(/\s+/);
    const found = ip.routeGets.find((l) => l.startsWith(`${peer} from ${from} `));
    if (iface && found) routeGet.set(iface, parseRouteGet([found]));
  }
  for (const [key, lines] of sections)
    if (key.startsWith('route-get ')) routeGet.set(key.slice('route-get '.length), parseRouteGet(lines));
  return {
    links: parseLinks(ip.links),
    addresses: parseAddresses(ip.addrs),
    rules: ip.rules.map(parseRule).filter((r): r is RuleFact => r !== undefined),
    routes,
    routeGet,
  };
}

/** A file's text from the probe's lines: each content line behind CONTENT_PREFIX, with its line break. */
function contentText(lines: readonly string[]): string {
  let text = '';
  for (const l of lines) if (l.startsWith(CONTENT_PREFIX)) text += `${l.slice(CONTENT_PREFIX.length)}\n`;
  return text;
}

/** What the probe read of ibfleet's files: a few header lines each (`head PATH`), or all (`content PATH`). */
function parseContents(
  sections: ReadonlyMap<string, readonly string[]>,
): Map<string, { text: string; whole: boolean }> {
  const contents = new Map<string, { text: string; whole: boolean }>();
  for (const [key, lines] of sections) {
    const [kind, ...rest] = key.split(' ');
    if (kind === 'head' || kind === 'content')
      contents.set(rest.join(' '), { text: contentText(lines), whole: kind === 'content' });
  }
  return contents;
}

/** The steps' facts, each from the sections that carry its name. */
function parseExtra(
  sections: ReadonlyMap<string, readonly string[]>,
  facts: readonly Fact<unknown>[],
): Map<string, unknown> {
  // Each section to the fact whose name is its first word, in one pass over the sections.
  const own = new Map<string, Map<string, readonly string[]>>(facts.map((fact) => [fact.name, new Map()]));
  for (const [key, lines] of sections) {
    const space = key.indexOf(' ');
    own.get(space < 0 ? key : key.slice(0, space))?.set(key, lines);
  }
  return new Map(facts.map((fact) => [fact.name, fact.parse(own.get(fact.name)!)]));
}

/** `facts`: the steps' facts the probe ran (render/probe-script.ts), parsed from their own sections. */
export function parseProbe(output: string, facts: readonly Fact<unknown>[] = []): HostFacts {
  const sections = splitSections(output);
  const get = (key: string): readonly string[] => sections.get(key) ?? [];
  const uidText = get('uid')[0]?.trim();
  return {
    uid: uidText && /^\d+$/.test(uidText) ? Number(uidText) : undefined,
    os: parseOsRelease(contentLines(get('os'))),
    ...parseIp(sections),
    files: parseFileSection(get('files')),
    obstacles: parseObstacles(get('in-the-way')),
    contents: parseContents(sections),
    netplan: parseNetplan(get('netplan')),
    ...parseConfig(get('config')),
    ...parseRuntime(get('runtime')),
    tools: new Set(
      get('tools')
        .map((l) => l.trim())
        .filter(Boolean),
    ),
    hostname: contentLines(get('hostname'))[0]?.trim() || undefined,
    rdma: sections.has('rdma') ? parseRdmaSection(get('rdma')) : undefined,
    nm: parseNmSection(get('nm')),
    extra: parseExtra(sections, facts),
    complete: sections.has('end'),
  };
}

/**
 * The facts after a change, from the probe that closed it (ProbeOptions.closing) and the one that
 * opened it: what no change alters is the opening probe's, everything else is read from the host
 * again — verification never assumes the change did what it was to do.
 */
export function withOpening(closing: HostFacts, opening: HostFacts): HostFacts {
  const { uid, os, hostname, tools, obstacles } = opening;
  return { ...closing, uid, os, hostname, tools, obstacles };
}

/**
 * "Ubuntu 18.04.6 LTS" from os-release, or undefined. The host's own words, so reduced before they
 * go anywhere (an inventory comment, every display, --json): printable, one line, at most
 * OS_NAME_MAX characters (src/host-text.ts).
 */
export function osName(facts: HostFacts): string | undefined {
  const name = facts.os.PRETTY_NAME ?? (facts.os.NAME ? `${facts.os.NAME} ${facts.os.VERSION ?? ''}` : undefined);
  const reduced = name === undefined ? '' : printableLine(name, OS_NAME_MAX);
  return reduced === '' ? undefined : reduced;
}
