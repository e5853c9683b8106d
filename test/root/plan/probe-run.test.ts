/** The python3 prober (host/ibfleet-probe.py) for real, on loopback: raw ICMP sockets need root. */
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { ProbeStream, type ProbeOutcome } from '../../../src/plan/verify-output.js';

describe.skipIf(process.getuid?.() !== 0)('the python3 prober on loopback (needs root)', () => {
  it('replies matched to cells, a refused send said, done at the end', () => {
    const out = execFileSync('python3', ['host/ibfleet-probe.py', '3', '50', '500'], {
      input: '4 127.0.0.1 127.0.0.1\n9 127.0.0.1 127.0.0.2\n11 127.0.0.1 192.0.2.1\n',
      encoding: 'utf8',
    });
    const got: ProbeOutcome[] = [];
    const stream = new ProbeStream(
      (o) => got.push(o),
      () => undefined,
      () => undefined,
    );
    for (const line of out.split('\n')) stream.push(line);
    expect(got.map((o) => [o.id, o.verdict.ok])).toEqual([
      [4, true],
      [9, true],
      [11, false],
    ]);
    expect(got[2]!.verdict.detail).toMatch(/^0\/3 replies — sending failed: E[A-Z]+$/);
    expect(out.trim().split('\n').at(-1)).toBe('done');
  });

  it('a source address the host does not have (a port down took it) fails only its own cells', () => {
    const out = execFileSync('python3', ['host/ibfleet-probe.py', '3', '50', '500'], {
      input: '4 127.0.0.1 127.0.0.1\n5 198.18.255.254 127.0.0.1\n6 127.0.0.1 127.0.0.1\n',
      encoding: 'utf8',
    });
    const got: ProbeOutcome[] = [];
    const stream = new ProbeStream(
      (o) => got.push(o),
      () => undefined,
      () => undefined,
    );
    for (const line of out.split('\n')) stream.push(line);
    expect(got.map((o) => [o.id, o.verdict.ok]).sort()).toEqual([
      [4, true],
      [5, false],
      [6, true],
    ]);
    expect(got.find((o) => o.id === 5)!.verdict.detail).toMatch(/sending failed: EADDRNOTAVAIL$/);
    expect(out.trim().split('\n').at(-1)).toBe('done');
  });
});
