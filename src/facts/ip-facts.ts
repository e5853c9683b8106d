/**
 * What iproute2 says, as facts: addresses, links, rules, routes and `route get` answers, from the
 * probe's one `ip -o -4 -batch` run. Pure, and tolerant of iproute2 differences (trailing blanks,
 * tabs, extra flags such as linkdown).
 */

export interface AddressFact {
  readonly iface: string;
  readonly address: string;
  readonly prefixLength: number;
}

export interface RuleFact {
  readonly priority: number;
  /** `all` or an address / prefix. */
  readonly from: string;
  /** The table named after lookup/table, if any. */
  readonly table: string | undefined;
  /** Normalised text after the priority, e.g. `from 172.16.34.1 lookup 941`. */
  readonly text: string;
}

export interface RouteFact {
  readonly dst: string;
  readonly dev: string | undefined;
  readonly src: string | undefined;
  readonly proto: string | undefined;
  readonly scope: string | undefined;
  /** Normalised line. */
  readonly text: string;
}

export interface RouteGetFact {
  readonly dev: string | undefined;
  readonly table: string | undefined;
  readonly text: string;
}

/** Whitespace normalizeLine changes: any but a single space between words (a tab, a run, an end). */
const UNNORMAL_SPACE = /[^\S ]| {2}|^ | $/;

/** The line's words separated by single spaces. */
export function normalizeLine(line: string): string {
  // Most lines are normal already (a route is normalised once to split, again by parseRoute): one test, no copy.
  return UNNORMAL_SPACE.test(line) ? line.replace(/\s+/g, ' ').trim() : line;
}

function after(tokens: readonly string[], key: string): string | undefined {
  const i = tokens.indexOf(key);
  return i >= 0 ? tokens[i + 1] : undefined;
}

export function parseRoute(line: string): RouteFact {
  const text = normalizeLine(line);
  const tokens = text.split(' ');
  return {
    dst: tokens[0] ?? '',
    dev: after(tokens, 'dev'),
    src: after(tokens, 'src'),
    proto: after(tokens, 'proto'),
    scope: after(tokens, 'scope'),
    text,
  };
}

export function parseRule(line: string): RuleFact | undefined {
  const match = /^(\d+):\s*(.*)$/.exec(line.trim());
  if (!match) return undefined;
  const text = normalizeLine(match[2]!);
  const tokens = text.split(' ');
  return {
    priority: Number(match[1]),
    from: after(tokens, 'from') ?? 'all',
    table: after(tokens, 'lookup') ?? after(tokens, 'table'),
    text,
  };
}

export function parseAddresses(lines: readonly string[]): AddressFact[] {
  // `2: ib0    inet 172.16.34.1/16 brd 172.16.255.255 scope global ib0\       valid_lft ...`
  const out: AddressFact[] = [];
  for (const line of lines) {
    const match = /^\d+:\s+(\S+)\s+inet\s+([\d.]+)\/(\d+)/.exec(line);
    if (match) out.push({ iface: match[1]!.replace(/@.*$/, ''), address: match[2]!, prefixLength: Number(match[3]) });
  }
  return out;
}

export interface LinkFact {
  /** Administratively up (the UP flag). */
  readonly up: boolean;
  /** Carrier (LOWER_UP): an IPoIB interface has it only while its port is ACTIVE. */
  readonly lowerUp: boolean;
  readonly mtu: number | undefined;
  /** The kernel's hardware address (`link/ether`, `link/infiniband`), lower case, where `ip` printed one. */
  readonly hwaddr?: string;
}

export function parseLinks(lines: readonly string[]): Map<string, LinkFact> {
  // `3: ib0@if4: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 ... state UP ...`
  const out = new Map<string, LinkFact>();
  for (const line of lines) {
    const match = /^\d+:\s+([^:@\s]+)(?:@\S+)?:\s+<([^>]*)>(?:\s+mtu\s+(\d+))?/.exec(line);
    if (!match) continue;
    const flags = match[2]!.split(',');
    const hwaddr = /\slink\/(?:ether|infiniband)\s+([0-9a-fA-F]{2}(?::[0-9a-fA-F]{2})+)(?:\s|$)/
      .exec(line)?.[1]
      ?.toLowerCase();
    out.set(match[1]!, {
      up: flags.includes('UP'),
      lowerUp: flags.includes('LOWER_UP'),
      mtu: match[3] ? Number(match[3]) : undefined,
      ...(hwaddr ? { hwaddr } : {}),
    });
  }
  return out;
}

export function parseRouteGet(lines: readonly string[]): RouteGetFact {
  // `ip -o` folds the `cache` line onto the first with a backslash.
  const text = normalizeLine(lines.join(' ').replace(/\\(?=\s)/g, ' '));
  const tokens = text.split(' ');
  return { dev: after(tokens, 'dev'), table: after(tokens, 'table'), text };
}

/**
 * The `ip` section: one `ip -o -4 -batch` run of `link show`, `addr show`, `rule show`,
 * `route show table all` and one `route get` per NIC, told apart by the shape of each line.
 * Routes carry `table T` except main-table ones; the table is taken out of the text, so a route
 * reads as `ip route show table T` prints it.
 */
export function splitIpBatch(lines: readonly string[]): {
  links: string[];
  addrs: string[];
  rules: string[];
  routes: Map<string, string[]>;
  routeGets: string[];
} {
  const out = {
    links: [] as string[],
    addrs: [] as string[],
    rules: [] as string[],
    routes: new Map<string, string[]>(),
    routeGets: [] as string[],
  };
  for (const line of lines) {
    if (line.trim() === '') continue;
    if (/^\d+:\s+[^\s:]+:\s+</.test(line)) out.links.push(line);
    else if (/^\d+:\s+\S+\s+inet6?\s/.test(line)) out.addrs.push(line);
    else if (/^\d+:\s/.test(line)) out.rules.push(line);
    else if (/^\S+ from \S+ .*\bcache\b/.test(line)) out.routeGets.push(line);
    else {
      const tokens = normalizeLine(line).split(' ');
      const at = tokens.indexOf('table');
      const table = at >= 0 ? (tokens[at + 1] ?? 'main') : 'main';
      if (at >= 0) tokens.splice(at, 2);
      const routes = out.routes.get(table);
      if (routes) routes.push(tokens.join(' '));
      else out.routes.set(table, [tokens.join(' ')]);
    }
  }
  return out;
}
