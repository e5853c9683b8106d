/** Minimal IPv4 arithmetic for the fabric convention; pure. */

export interface Cidr {
  /** Network address as an unsigned 32-bit integer. */
  readonly network: number;
  readonly prefixLength: number;
}

const OCTET = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$/;

export function parseIpv4(text: string): number | undefined {
  const parts = text.split('.');
  if (parts.length !== 4 || !parts.every((p) => OCTET.test(p))) return undefined;
  return parts.reduce((acc, p) => acc * 256 + Number(p), 0);
}

export function formatIpv4(value: number): string {
  return [24, 16, 8, 0].map((shift) => Math.floor(value / 2 ** shift) % 256).join('.');
}

export function maskOf(prefixLength: number): number {
  return prefixLength === 0 ? 0 : (0xffffffff << (32 - prefixLength)) >>> 0;
}

/** Parses `a.b.c.d/n`; undefined when malformed. `strict` also refuses host bits set. */
export function parseCidr(text: string): { cidr: Cidr; hostBitsSet: boolean } | undefined {
  const match = /^([0-9.]+)\/(\d{1,2})$/.exec(text);
  if (!match) return undefined;
  const address = parseIpv4(match[1]!);
  const prefixLength = Number(match[2]);
  if (address === undefined || prefixLength > 32) return undefined;
  const network = (address & maskOf(prefixLength)) >>> 0;
  return { cidr: { network, prefixLength }, hostBitsSet: network !== address };
}

export function formatCidr(cidr: Cidr): string {
  return `${formatIpv4(cidr.network)}/${cidr.prefixLength}`;
}

export function cidrContains(cidr: Cidr, address: number): boolean {
  return (address & maskOf(cidr.prefixLength)) >>> 0 === cidr.network;
}
