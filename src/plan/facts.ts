/**
 * Probe output → facts. Pure: takes the text the probe printed and returns what the host looks
 * like; what iproute2 printed is read by ip-facts.ts.
 */
import { OS_NAME_MAX, printableLine } from '../host-text.js';
import { CONTENT_PREFIX, SECTION_MARK, TRACKED_PATHS } from '../render/probe-script.js';
import { parseNmSection, type NmFacts } from './nm-facts.js';
import { parseAddresses, parseLinks, parseRoute, parseRouteGet, parseRule, splitIpBatch, type AddressFact, type LinkFact, type RouteFact, type RouteGetFact, type RuleFact } from './ip-facts.js';
import { parseRdmaSection, type RdmaFacts } from './rdma-facts.js';

export interface FileFact {
  readonly mode: number;
  readonly uid: number;
  readonly sha256: string;
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
  /** Interface (or `all`) → key → value ('' when unreadable). */
  readonly sysctl: ReadonlyMap<string, Readonly<Record<string, string>>>;
  /** Path → file facts, or null when missing. */
  readonly files: ReadonlyMap<string, FileFact | null>;
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
  /** `systemctl is-active` of the repair timer (`active`, `inactive`, ...); undefined where systemd does not run. */
  readonly repairTimer: string | undefined;
  readonly tools: ReadonlySet<string>;
  /** The kernel's hostname (/proc/sys/kernel/hostname), as the machine calls itself. */
  readonly hostname: string | undefined;
  /** The fabric's RDMA devices and ports; undefined when the probe did not look (older probe, closing probe). */
  readonly rdma: RdmaFacts | undefined;
  /** net.ipv4.neigh.default.gc_thresh1..3; empty when the probe did not look. */
  readonly neigh: Readonly<Record<string, string>>;
  /** Where NetworkManager runs and answered: its version and the fabric NICs' active profiles. */
  readonly nm: NmFacts | undefined;
  /** False when the output stopped before the end marker (connection dropped, probe killed). */
  readonly complete: boolean;
}

/** Splits probe output into sections keyed by the text after the marker ("route 941"). */
export function splitSections(output: string): { sections: Map<string, string[]>; before: string[] } {
  const sections = new Map<string, string[]>();
  const before: string[] = [];
  let current: string[] | undefined;
  for (const line of output.split('\n')) {
    if (line.startsWith(`${SECTION_MARK} `)) {
      const key = line.slice(SECTION_MARK.length + 1).trim();
      current = [];
      sections.set(key, current);
    } else if (current) {
      current.push(line);
    } else {
      before.push(line);
    }
  }
  for (const lines of sections.values()) while (lines.length && lines[lines.length - 1]!.trim() === '') lines.pop();
  return { sections, before };
}

function parseOsRelease(lines: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of lines) {
    // Read whole whatever the value holds (`s`: U+2028 ends no value here); osName() reduces it.
    const match = /^([A-Z_]+)=(.*)$/s.exec(line.trim());
    if (match) out[match[1]!] = match[2]!.replace(/^"(.*)"$/s, '$1').replace(/^'(.*)'$/s, '$1');
  }
  return out;
}

function parseFile(lines: readonly string[]): FileFact | null {
  const match = /^([0-7]+) (\d+) ([0-9a-f]{64})$/.exec((lines[0] ?? '').trim());
  return match ? { mode: parseInt(match[1]!, 8), uid: Number(match[2]), sha256: match[3]! } : null;
}

/**
 * The probe prints files (os-release, netplan) line by line; from probe version 3 each content line
 * comes behind CONTENT_PREFIX, so that a file's line can never pass for one of the probe's own
 * (`#file` marks, section marks). Earlier probes printed content bare.
 */
function contentLine(line: string, version: number): string | undefined {
  if (version < 3) return line;
  return line.startsWith(CONTENT_PREFIX) ? line.slice(CONTENT_PREFIX.length) : undefined;
}

function parseNetplan(lines: readonly string[], version: number): { file: string; text: string }[] {
  const out: { file: string; text: string }[] = [];
  for (const line of lines) {
    const content = contentLine(line, version);
    const mark = version < 3 || content === undefined ? /^#file (.+)$/.exec(line) : null;
    if (mark) out.push({ file: mark[1]!, text: '' });
    else if (content !== undefined && out.length) out[out.length - 1] = { file: out[out.length - 1]!.file, text: `${out[out.length - 1]!.text}${content}\n` };
  }
  return out;
}

/** The `files` section: `stat -c '%a %u %n'` and `sha256sum` lines for the tracked files that exist. */
function parseFileSection(lines: readonly string[]): Map<string, FileFact | null> {
  const stats = new Map<string, { mode: number; uid: number }>();
  const sums = new Map<string, string>();
  for (const line of lines) {
    const stat = /^([0-7]+) (\d+) (\/.*)$/.exec(line);
    const sum = /^([0-9a-f]{64}) [ *](\/.*)$/.exec(line);
    if (sum) sums.set(sum[2]!, sum[1]!);
    else if (stat) stats.set(stat[3]!, { mode: parseInt(stat[1]!, 8), uid: Number(stat[2]) });
  }
  const files = new Map<string, FileFact | null>();
  for (const path of TRACKED_PATHS) {
    const stat = stats.get(path);
    const sha256 = sums.get(path);
    files.set(path, stat && sha256 ? { ...stat, sha256 } : null);
  }
  return files;
}

/** Which parser a `config` line (grep -H output over every manager's files) belongs to, by its file. */
function configKind(line: string): 'nm-connections' | 'ifcfg' | 'ifupdown' | undefined {
  if (/^\/(etc|run)\/NetworkManager\/system-connections\//.test(line)) return 'nm-connections';
  if (line.startsWith('/etc/sysconfig/network-scripts/ifcfg-')) return 'ifcfg';
  if (/^\/etc\/network\/interfaces(\.d\/[^:]*)?:/.test(line)) return 'ifupdown';
  return undefined;
}

export function parseProbe(output: string): HostFacts {
  const { sections } = splitSections(output);
  const ip = sections.has('ip') ? splitIpBatch(sections.get('ip')!) : undefined;
  const config = sections.get('config') ?? [];
  const get = (key: string): string[] => {
    const legacy = sections.get(key);
    if (legacy) return legacy;
    if (ip && key === 'links') return ip.links;
    if (ip && key === 'addrs') return ip.addrs;
    if (ip && key === 'rules') return ip.rules;
    if (key === 'nm-connections' || key === 'ifcfg' || key === 'ifupdown') return config.filter((l) => configKind(l) === key);
    return [];
  };
  const routes = new Map<string, RouteFact[]>();
  const routeGet = new Map<string, RouteGetFact>();
  const sysctl = new Map<string, Record<string, string>>();
  const files = new Map<string, FileFact | null>(sections.has('files') ? parseFileSection(sections.get('files')!) : []);
  const contents = new Map<string, { text: string; whole: boolean }>();
  if (ip) {
    // The kernel's own `local` table (addresses of this host, broadcasts) says nothing ibfleet uses.
    for (const [table, lines] of ip.routes) if (table !== 'local') routes.set(table, lines.map(parseRoute));
    // `route-get-from` names the NIC each `route get PEER from ADDR` was run for.
    for (const line of sections.get('route-get-from') ?? []) {
      const [iface, peer, from] = line.trim().split(/\s+/);
      const found = ip.routeGets.find((l) => l.startsWith(`${peer} from ${from} `));
      if (iface && found) routeGet.set(iface, parseRouteGet([found]));
    }
  }
  for (const [key, lines] of sections) {
    const [kind, ...rest] = key.split(' ');
    const arg = rest.join(' ');
    if (kind === 'route') routes.set(arg, lines.filter((l) => l.trim() !== '').map(parseRoute));
    else if (kind === 'route-get') routeGet.set(arg, parseRouteGet(lines));
    else if (kind === 'sysctl') {
      const values: Record<string, string> = {};
      for (const l of lines) {
        const m = /^([a-z_]+)=(.*)$/.exec(l.trim());
        if (m) values[m[1]!] = m[2]!;
      }
      sysctl.set(arg, values);
    } else if (kind === 'file') files.set(arg, parseFile(lines));
    else if (kind === 'head' || kind === 'content') {
      const text = lines.flatMap((l) => (l.startsWith(CONTENT_PREFIX) ? [`${l.slice(CONTENT_PREFIX.length)}\n`] : [])).join('');
      contents.set(arg, { text, whole: kind === 'content' });
    }
  }
  const versionKey = [...sections.keys()].find((k) => k.startsWith('probe '));
  const version = versionKey ? Number(versionKey.slice('probe '.length)) || 1 : 1;
  const uidText = get('uid')[0]?.trim();
  const runtime = get('runtime');
  return {
    uid: uidText && /^\d+$/.test(uidText) ? Number(uidText) : undefined,
    os: parseOsRelease(get('os').flatMap((l) => contentLine(l, version) ?? [])),
    links: parseLinks(get('links')),
    addresses: parseAddresses(get('addrs')),
    rules: get('rules').map(parseRule).filter((r): r is RuleFact => r !== undefined),
    routes,
    routeGet,
    sysctl,
    files,
    contents,
    netplan: parseNetplan(get('netplan'), version),
    nmConnections: get('nm-connections').flatMap((l) => {
      const m = /^([^:]+):\s*interface-name\s*=\s*(\S+)\s*$/.exec(l);
      return m ? [{ file: m[1]!, iface: m[2]! }] : [];
    }),
    ifcfg: get('ifcfg').flatMap((l) => {
      const m = /^([^:]+):DEVICE=["']?([^"'\s]+)/.exec(l);
      return m ? [{ file: m[1]!, iface: m[2]! }] : [];
    }),
    ifupdown: get('ifupdown').flatMap((l) => {
      const m = /^([^:]+):\s*(auto|allow-[a-z-]+|iface)\s+(.+)$/.exec(l);
      if (!m) return [];
      const [, file, keyword, rest] = m as unknown as [string, string, string, string];
      // `auto ib0 ib1` names several interfaces; `iface ib0 inet static` names one.
      const names = keyword === 'iface' ? [rest.split(/\s+/)[0]!] : rest.split(/\s+/);
      return names.map((iface) => ({ file, keyword, iface }));
    }),
    dirs: new Set(runtime.flatMap((l) => (l.startsWith('dir ') ? [l.slice(4).trim()] : []))),
    ifstate: new Set(
      runtime.flatMap((l) => {
        const m = /^ifstate (\S+) ?(.*)$/.exec(l);
        if (!m) return [];
        // ifupdown 0.8: /run/network/ifstate.<iface> holding "<iface>"; older: one file of "iface=iface" lines.
        const fromName = /ifstate\.(.+)$/.exec(m[1]!)?.[1];
        const fromContent = m[2]!.split(/\s+/).filter(Boolean).map((e) => e.split('=')[0]!);
        return fromName ? [fromName] : fromContent;
      }),
    ),
    repairTimer: runtime.flatMap((l) => (l.startsWith('repair-timer') ? [l.slice('repair-timer'.length).trim() || 'unknown'] : []))[0],
    tools: new Set(get('tools').map((l) => l.trim()).filter(Boolean)),
    hostname: get('hostname').flatMap((l) => contentLine(l, version) ?? [])[0]?.trim() || undefined,
    rdma: sections.has('rdma') ? parseRdmaSection(sections.get('rdma')!) : undefined,
    neigh: Object.fromEntries(
      get('neigh').flatMap((l) => {
        const m = /\/(gc_thresh\d):(\d*)\s*$/.exec(l);
        return m ? [[m[1]!, m[2]!]] : [];
      }),
    ),
    nm: parseNmSection(get('nm')),
    complete: sections.has('end'),
  };
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
