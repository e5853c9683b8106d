/** offboard's inventory edit: entries out line by line, every other byte kept; a layout it cannot edit refused. */
import { describe, expect, it } from 'vitest';
import { planInventoryRemoval } from '../../src/inventory/remove.js';
import { withoutKnownHosts, knownHostsName } from '../../src/runner/known-hosts.js';
import { createHmac } from 'node:crypto';

const INVENTORY = `# the lab fleet
fabric:
  subnet: 172.16.0.0/16
  nics: 2
hosts:
  # alice's machines
  16: {name: cpuserver16, address: 10.0.0.16, role: cpu} # Ubuntu 20.04
  34:
    name: memserver34   # block style
    address: 10.0.0.34
  40: {name: node40, address: 10.0.0.40}
pairs:
  - {owner: alice, cpu: 16, mem: 34}   # since May
  - owner: bob
    cpu: 40
    mem: 16
`;

const plan = (hosts: number[], text = INVENTORY) =>
  planInventoryRemoval(text, 'inv.yaml', '/tmp', { hosts, owners: [] });

describe('planInventoryRemoval', () => {
  it('a flow entry goes with its comment; the pairs naming it go too; the rest is byte for byte', () => {
    const r = plan([16]);
    if (!r.ok) throw new Error(r.problems.join('; '));
    expect(r.text).toBe(
      INVENTORY.replace('  16: {name: cpuserver16, address: 10.0.0.16, role: cpu} # Ubuntu 20.04\n', '')
        .replace('  - {owner: alice, cpu: 16, mem: 34}   # since May\n', '')
        .replace('  - owner: bob\n    cpu: 40\n    mem: 16\n', '')
        .replace('pairs:\n', ''),
    );
    expect(r.removedHosts).toEqual([16]);
    expect(r.removedPairs.map((p) => p.owner)).toEqual(['alice', 'bob']);
    expect(r.fleet.hosts.map((h) => h.id)).toEqual([34, 40]);
  });

  it('a block entry goes whole; a pair that stays keeps its line and comment', () => {
    const r = plan([34]);
    if (!r.ok) throw new Error(r.problems.join('; '));
    expect(r.text).toBe(
      INVENTORY.replace('  34:\n    name: memserver34   # block style\n    address: 10.0.0.34\n', '').replace(
        '  - {owner: alice, cpu: 16, mem: 34}   # since May\n',
        '',
      ),
    );
    expect(r.text).toContain("# alice's machines");
    expect(r.fleet.pairs.map((p) => p.owner)).toEqual(['bob']);
  });

  it('hosts written on one line with others are refused, nothing edited', () => {
    const r = plan(
      [40],
      'fabric: {subnet: 172.16.0.0/16, nics: 2}\nhosts: {16: {address: 10.0.0.16}, 40: {address: 10.0.0.40}}\n',
    );
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.problems.join()).toMatch(/host 40 shares its line/);
  });
});

describe('withoutKnownHosts', () => {
  const salt = Buffer.from('0123456789abcdefghij');
  const hashed = `|1|${salt.toString('base64')}|${createHmac('sha1', salt).update('10.0.0.40').digest('base64')}`;
  it.each([
    [
      'plain address',
      '10.0.0.40 ssh-ed25519 AAAA\n10.0.0.16 ssh-ed25519 BBBB\n',
      ['10.0.0.40'],
      '10.0.0.16 ssh-ed25519 BBBB\n',
      1,
    ],
    [
      '[address]:port',
      '[10.0.0.40]:2222 ssh-ed25519 AAAA\n10.0.0.40 ssh-ed25519 CCCC\n',
      [knownHostsName('10.0.0.40', 2222)],
      '10.0.0.40 ssh-ed25519 CCCC\n',
      1,
    ],
    ['one name of a list', 'node40,10.0.0.40 ssh-ed25519 AAAA\n', ['10.0.0.40'], 'node40 ssh-ed25519 AAAA\n', 1],
    ['hashed', `${hashed} ssh-ed25519 AAAA\n# kept\n`, ['10.0.0.40'], '# kept\n', 1],
    [
      'wildcards and other hosts untouched',
      '10.0.0.* ssh-ed25519 AAAA\n10.0.0.400 ssh-ed25519 BBBB\n',
      ['10.0.0.40'],
      '10.0.0.* ssh-ed25519 AAAA\n10.0.0.400 ssh-ed25519 BBBB\n',
      0,
    ],
  ])('%s', (_what, text, names, expected, removed) => {
    expect(withoutKnownHosts(text, names)).toEqual({ text: expected, removed });
  });
});
