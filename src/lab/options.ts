/**
 * The lab's own option syntax, parsed purely: `--hosts 16,34,40-47` (plain numbers — lab hosts need
 * not be in the inventory), `--manager 40-47=ifupdown`, `--interfaces 40=eth0,eth1`, `--nics 8` or
 * `--nics 16=8` and `--mgmt-subnet 198.18.0.0/24`. Errors name the offending fragment (exit 2).
 */
import { UsageError } from '../errors.js';
import { MAX_HOST, MAX_NICS, MIN_HOST } from '../inventory/derive.js';
import { formatCidr, parseCidr, parseIpv4, type Cidr } from '../inventory/ipv4.js';
import { MANAGERS, type Manager } from '../inventory/model.js';
import { IFACE_NAME, IFACE_RULE } from '../inventory/schema.js';
import { LINK_LAYERS, MGMT_IFACE, type LabLinkLayer } from './names.js';

export function parseLabHosts(expression: string, what = '--hosts'): number[] {
  const ids = new Set<number>();
  const fragments = expression.split(',').map((f) => f.trim());
  if (fragments.every((f) => f === ''))
    throw new UsageError(`${what} is empty; give host numbers and ranges, e.g. 16,34 or 1-50`);
  for (const fragment of fragments) {
    const match = /^(\d+)(?:-(\d+))?$/.exec(fragment);
    if (!match) {
      throw new UsageError(
        `${what} ${JSON.stringify(fragment)}: lab hosts are host numbers and ranges (16,34,40-47), ${MIN_HOST}..${MAX_HOST}`,
      );
    }
    const from = Number(match[1]);
    const to = match[2] === undefined ? from : Number(match[2]);
    if (from > to) throw new UsageError(`${what} range ${fragment} runs backwards; write ${to}-${from}`);
    if (from < MIN_HOST || to > MAX_HOST) {
      throw new UsageError(
        `${what} ${fragment}: host numbers are ${MIN_HOST}..${MAX_HOST} (the third octet of the fabric addresses)`,
      );
    }
    for (let id = from; id <= to; id++) ids.add(id);
  }
  return [...ids].sort((a, b) => a - b);
}

function splitAssignment(value: string, option: string, example: string): [string, string] {
  const at = value.indexOf('=');
  if (at <= 0 || at === value.length - 1)
    throw new UsageError(`${option} ${JSON.stringify(value)}: write HOSTS=VALUE, e.g. ${option} ${example}`);
  return [value.slice(0, at), value.slice(at + 1)];
}

/** `["40-47=ifupdown", "16=networkmanager"]` → host → manager; later flags win. */
export function parseManagerAssignments(values: readonly string[]): Map<number, Manager> {
  const out = new Map<number, Manager>();
  for (const value of values) {
    const [hosts, manager] = splitAssignment(value, '--manager', '40=ifupdown');
    if (!(MANAGERS as readonly string[]).includes(manager)) {
      throw new UsageError(
        `--manager ${value}: unknown manager ${JSON.stringify(manager)} (allowed: ${MANAGERS.join(', ')})`,
      );
    }
    for (const id of parseLabHosts(hosts, '--manager')) out.set(id, manager as Manager);
  }
  return out;
}

/** `["40=eth0,eth1"]` → host → interface names, NIC 1 first. The count is checked against the fabric later. */
export function parseInterfaceAssignments(values: readonly string[]): Map<number, string[]> {
  const out = new Map<number, string[]>();
  for (const value of values) {
    const [hosts, list] = splitAssignment(value, '--interfaces', '40=ib0,ib1');
    const names = list.split(',');
    for (const name of names) {
      if (!IFACE_NAME.test(name) || name === '.' || name === '..')
        throw new UsageError(
          `--interfaces ${value}: ${JSON.stringify(name)} is not a valid Linux interface name (${IFACE_RULE})`,
        );
      if (name === MGMT_IFACE || name === 'lo')
        throw new UsageError(`--interfaces ${value}: ${name} is taken by the lab (management interface / loopback)`);
    }
    const dup = names.find((n, i) => names.indexOf(n) !== i);
    if (dup !== undefined)
      throw new UsageError(`--interfaces ${value}: ${dup} is listed twice; each NIC has its own interface`);
    for (const id of parseLabHosts(hosts, '--interfaces')) out.set(id, names);
  }
  return out;
}

/**
 * `["8"]` → every host 8 NICs; `["16-17=8", "34=2"]` → those hosts; a bare count and HOSTS=N
 * together: the hosts named take theirs, the others the bare one. Later flags win.
 */
export function parseNicCounts(values: readonly string[]): { all?: number; hosts: Map<number, number> } {
  let all: number | undefined;
  const hosts = new Map<number, number>();
  const count = (text: string, value: string): number => {
    if (!/^\d+$/.test(text) || Number(text) < 1 || Number(text) > MAX_NICS)
      throw new UsageError(`--nics ${value}: ${JSON.stringify(text)} is not a NIC count 1..${MAX_NICS}`);
    return Number(text);
  };
  for (const value of values) {
    if (!value.includes('=')) {
      all = count(value, value);
      continue;
    }
    const [ids, n] = splitAssignment(value, '--nics', '16=8');
    for (const id of parseLabHosts(ids, '--nics')) hosts.set(id, count(n, value));
  }
  return { ...(all !== undefined ? { all } : {}), hosts };
}

export const DEFAULT_MGMT_SUBNET = '198.18.0.0/24';
/** From RFC 2544's benchmarking range, outside every default management subnet. */
export const DEFAULT_CONTROLLER_ADDRESS = '198.19.255.254';

export function parseMgmtSubnet(text: string): Cidr {
  const parsed = parseCidr(text);
  if (!parsed)
    throw new UsageError(
      `--mgmt-subnet ${JSON.stringify(text)} is not an IPv4 network; write it like ${DEFAULT_MGMT_SUBNET}`,
    );
  if (parsed.hostBitsSet)
    throw new UsageError(`--mgmt-subnet ${text} has host bits set; did you mean ${formatCidr(parsed.cidr)}?`);
  if (parsed.cidr.prefixLength > 24 || parsed.cidr.prefixLength < 8) {
    throw new UsageError(
      `--mgmt-subnet ${text}: use a prefix between /8 and /24, so host H can be <network>+H for every host 1..254`,
    );
  }
  return parsed.cidr;
}

export function parseControllerAddress(text: string): number {
  const value = parseIpv4(text);
  if (value === undefined) throw new UsageError(`controller address ${JSON.stringify(text)} is not an IPv4 address`);
  return value;
}

/** `["ethernet"]` → every host RoCE; `["34=ethernet"]` → that host; later flags win. */
export function parseLinkLayers(values: readonly string[]): { all?: LabLinkLayer; hosts: Map<number, LabLinkLayer> } {
  let all: LabLinkLayer | undefined;
  const hosts = new Map<number, LabLinkLayer>();
  const layer = (text: string, value: string): LabLinkLayer => {
    if (!(LINK_LAYERS as readonly string[]).includes(text))
      throw new UsageError(
        `--link-layer ${value}: ${JSON.stringify(text)} is not a link layer (allowed: ${LINK_LAYERS.join(', ')})`,
      );
    return text as LabLinkLayer;
  };
  for (const value of values) {
    if (!value.includes('=')) {
      all = layer(value, value);
      continue;
    }
    const [ids, text] = splitAssignment(value, '--link-layer', '34=ethernet');
    for (const id of parseLabHosts(ids, '--link-layer')) hosts.set(id, layer(text, value));
  }
  return { ...(all !== undefined ? { all } : {}), hosts };
}
