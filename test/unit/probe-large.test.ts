/**
 * A probe whose output is too long to read is refused (runner/transport.ts requireWhole); the
 * message names what was large — the file or listing in the probe's largest part — from the start
 * and the end of the output ibfleet kept, not a guess at the SSH user's start-up files.
 */
import { describe, expect, it } from 'vitest';
import { largestProbePart, SECTION_MARK } from '../../src/facts/probe-format.js';

const mark = (name: string) => `${SECTION_MARK} ${name}\n`;
const lines = (n: number, text: string) => `|${text}\n`.repeat(n);

/** The output as the transport keeps it: the first `headLength` characters, and the last `tailLength`. */
function kept(output: string, headLength: number, tailLength: number) {
  const tailStart = Math.max(0, output.length - tailLength);
  return [output.slice(0, headLength), output.slice(tailStart), tailStart] as const;
}

describe('largestProbePart', () => {
  it.each([
    [
      'a 3.8 MB os-release, its mark only in the head',
      mark('probe 3') + mark('uid') + '0\n' + mark('os') + lines(100_000, 'NAME="' + 'x'.repeat(30) + '"'),
      '/etc/os-release',
    ],
    [
      '10 000 interfaces: the ip section, after small ones',
      mark('probe 3') +
        mark('os') +
        lines(5, 'ID=debian') +
        mark('ip') +
        '1: lo: <LOOPBACK>\n'.repeat(60_000) +
        mark('files'),
      'the interfaces, addresses, rules and routes `ip` lists',
    ],
    [
      'one of ibfleet’s files read whole',
      mark('probe 3') + mark('content /etc/sysctl.d/90-ibfleet.conf') + lines(60_000, 'x'.repeat(20)) + mark('end'),
      '/etc/sysctl.d/90-ibfleet.conf',
    ],
    [
      'a netplan file among several',
      mark('probe 3') +
        mark('netplan') +
        '#file /etc/netplan/01.yaml\n' +
        lines(3, 'network:') +
        '#file /etc/netplan/99-big.yaml\n' +
        lines(60_000, 'x'.repeat(20)) +
        mark('config'),
      'the netplan file /etc/netplan/99-big.yaml',
    ],
    [
      'a section this table does not know',
      mark('probe 3') + mark('rdma ib0') + lines(60_000, 'x'.repeat(20)),
      'the probe\'s section "rdma ib0"',
    ],
  ])('%s', (_what, output, expected) => {
    expect(largestProbePart(...kept(output, 64 * 1024, 1024 * 1024))?.what).toBe(expected);
  });

  it.each([
    [
      'began in the head: counted from its mark there',
      'os',
      mark('probe 3') + mark('os') + lines(100_000, 'x'.repeat(36)),
    ],
    [
      'all in the tail',
      'ip',
      mark('probe 3') + mark('os') + lines(2_000, 'x'.repeat(36)) + mark('ip') + 'y\n'.repeat(500_000),
    ],
  ])('its size, as far as it was read: %s', (_what, section, output) => {
    expect(largestProbePart(...kept(output, 64 * 1024, 1024 * 1024))?.size).toBe(
      output.length - output.indexOf(mark(section)),
    );
  });

  it.each([
    [
      'noise before the first mark, the probe after it',
      'noise\n'.repeat(200_000) + mark('probe 3') + mark('os') + lines(5, 'ID=debian'),
    ],
    ['noise only', 'x'.repeat(3_000_000)],
  ])('%s: nothing of the probe is named (the start-up files are the likely cause)', (_what, output) => {
    expect(largestProbePart(...kept(output, 64 * 1024, 1024 * 1024))).toBeUndefined();
  });
});
