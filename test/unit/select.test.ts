import { describe, expect, it } from 'vitest';
import { UsageError } from '../../src/errors.js';
import { loadInventory } from '../../src/inventory/load.js';
import { editDistance } from '../../src/inventory/did-you-mean.js';
import { foldHosts, parseHostSelection, readsAsSelection } from '../../src/inventory/select.js';

/** Hosts 16-20 and 34: two CPU servers, three memory servers, one GPU box; two pairs. */
const fleet = loadInventory(
  [
    'fabric:',
    '  subnet: 172.16.0.0/16',
    'hosts:',
    '  16: { name: cpuserver16, role: cpu }',
    '  17: { name: cpuserver17, role: cpu }',
    '  18: { name: memserver18, role: mem }',
    '  19: { name: memserver19, role: mem }',
    '  20: { name: gpuserver20, role: gpu }',
    '  34: { name: memserver34, role: mem }',
    'pairs:',
    '  - { owner: alice, cpu: 16, mem: 34 }',
    '  - { owner: bob, cpu: 17, mem: 18 }',
    '  - { owner: alice, cpu: 17, mem: 19 }',
    '',
  ].join('\n'),
  'lab/fleet.yaml',
);

const select = (expression: string) => parseHostSelection(expression, fleet);

describe('parseHostSelection: an expression becomes a sorted set of host numbers', () => {
  it.each([
    ['16', [16]],
    ['16,34', [16, 34]],
    ['34,16', [16, 34]],
    ['16-20', [16, 17, 18, 19, 20]],
    ['18-18', [18]],
    ['16-18,34', [16, 17, 18, 34]],
    ['016', [16]],
    ['memserver34', [34]],
    ['cpuserver16,memserver34', [16, 34]],
    ['@cpu', [16, 17]],
    ['@mem', [18, 19, 34]],
    ['@cpu,@gpu', [16, 17, 20]],
    ['pair:bob', [17, 18]],
    ['pair:alice', [16, 17, 19, 34]],
    ['all', [16, 17, 18, 19, 20, 34]],
    ['all,16', [16, 17, 18, 19, 20, 34]],
    ['16,16,16-17,cpuserver16,@cpu', [16, 17]],
    [' 16 , 34 ', [16, 34]],
    ['\t16,\t@gpu ', [16, 20]],
  ] as const)('%j → %j', (expression, expected) => {
    expect(select(expression)).toEqual(expected);
  });
});

describe('parseHostSelection: a selection naming something unknown is a usage error that points at the fix', () => {
  it.each(
    [
      {
        expression: '99',
        says: ['--hosts 99: host 99 is not in lab/fleet.yaml', 'closest: 20 (gpuserver20), 34 (memserver34)'],
      },
      { expression: '21', says: ['host 21 is not in lab/fleet.yaml', 'closest: 19 (memserver19), 20 (gpuserver20)'] },
      { expression: '1', says: ['host 1 is not in', 'closest: 16 (cpuserver16), 17 (cpuserver17)'] },
      { expression: '16,35', says: ['--hosts 35: host 35 is not in', 'closest: 20 (gpuserver20), 34 (memserver34)'] },
      {
        expression: 'memserver3',
        says: ['--hosts memserver3: no such host in lab/fleet.yaml', 'did you mean memserver34?', '(known: 16-20,34)'],
      },
      { expression: 'cpuservr16', says: ['no such host', 'did you mean cpuserver16?'] },
      { expression: 'storage', says: ['--hosts storage: no such host', '(known: 16-20,34)'] },
      {
        expression: '@cpus',
        says: ['--hosts @cpus: no host has role cpus', 'did you mean @cpu?', '(roles: @cpu, @gpu, @mem)'],
      },
      { expression: '@storage', says: ['no host has role storage', '(roles: @cpu, @gpu, @mem)'] },
      {
        expression: 'pair:alcie',
        says: ['--hosts pair:alcie: no pair belongs to alcie', 'did you mean pair:alice?', '(owners: alice, bob)'],
      },
      { expression: 'pair:carol', says: ['no pair belongs to carol', '(owners: alice, bob)'] },
      { expression: '20-16', says: ['--hosts range 20-16 runs backwards', 'write 16-20'] },
      {
        expression: '16-40',
        says: ['range 16-40 includes hosts 21-33,35-40 not in lab/fleet.yaml', '(known: 16-20,34)'],
      },
      { expression: '33-34', says: ['range 33-34 includes host 33 not in'] },
      {
        expression: '16-300',
        says: ['--hosts range 16-300 goes outside 1..254, the possible host numbers', '(known: 16-20,34)'],
      },
      { expression: '16-4000000000', says: ['goes outside 1..254'] },
      { expression: '0-16', says: ['--hosts range 0-16 goes outside 1..254'] },
      { expression: '16,,34', says: ['--hosts "16,,34" has an empty item', 'single commas'] },
      { expression: '34,', says: ['has an empty item'] },
      { expression: ',16', says: ['has an empty item'] },
      // An item that is no host's name but plainly meant another form: the message is the fix.
      { expression: 'cpu', says: ['--hosts "cpu": no host is named cpu, but it is a role: write @cpu'] },
      { expression: '16,mem', says: ['--hosts "mem": no host is named mem, but it is a role: write @mem'] },
      { expression: 'bob', says: ['--hosts "bob": no host is named bob, but pairs belong to bob: write pair:bob'] },
      { expression: '16 34', says: ['--hosts "16 34": items are separated by commas, not spaces: write 16,34'] },
      { expression: '16  34 @gpu', says: ['write 16,34,@gpu'] },
      { expression: '16 - 20', says: ['--hosts "16 - 20": a range is written without spaces: write 16-20'] },
      {
        expression: '16-',
        says: ['--hosts "16-": a range is written FROM-TO with both ends, e.g. 16-20 (known: 16-20,34)'],
      },
      { expression: '34,-20', says: ['--hosts "-20": a range is written FROM-TO'] },
      { expression: '16-18-20', says: ['--hosts "16-18-20": a range is written FROM-TO'] },
      { expression: '16--20', says: ['a range is written FROM-TO'] },
      { expression: '', says: ['--hosts is empty', 'host numbers, ranges, names, @role, pair:OWNER or all'] },
      { expression: ' , ', says: ['--hosts is empty'] },
    ].map((c) => [JSON.stringify(c.expression), c] as const),
  )('%s', (_, { expression, says }) => {
    let error: unknown;
    try {
      select(expression);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(UsageError);
    for (const words of says) expect((error as Error).message).toContain(words);
  });

  it('suggests nothing when no name is close', () => {
    expect(() => select('storage')).toThrow(/^--hosts storage: no such host in lab\/fleet.yaml \(known: 16-20,34\)$/);
  });

  it('a host named like a role is that host: the name wins over the hint', () => {
    const named = loadInventory(
      'fabric: { subnet: 172.16.0.0/16 }\nhosts:\n  16: { name: cpu, role: mem }\n  17: { name: b, role: cpu }\n',
      'x.yaml',
    );
    expect(parseHostSelection('cpu', named)).toEqual([16]);
    expect(() => parseHostSelection('mem', named)).toThrow('write @mem');
  });

  it('a range without an end in an empty inventory says there are no hosts', () => {
    const empty = loadInventory('fabric:\n  subnet: 172.16.0.0/16\nhosts: {}\n', 'empty.yaml');
    expect(() => parseHostSelection('16-', empty)).toThrow('e.g. 16-20 (it has no hosts)');
  });

  it('in an inventory without hosts, says so', () => {
    const empty = loadInventory('fabric:\n  subnet: 172.16.0.0/16\nhosts: {}\n', 'empty.yaml');
    expect(() => parseHostSelection('16', empty)).toThrow('--hosts 16: host 16 is not in empty.yaml');
    expect(() => parseHostSelection('16-17', empty)).toThrow('(it has no hosts)');
    expect(parseHostSelection('all', empty)).toEqual([]);
  });
});

describe('foldHosts: a set of host numbers folds ClusterShell-style', () => {
  it.each([
    [[16, 17, 18, 19, 20, 34], '16-20,34'],
    [[34, 20, 16, 19, 17, 18], '16-20,34'],
    [[16, 16, 17, 17, 34, 34], '16-17,34'],
    [[16], '16'],
    [[16, 17], '16-17'],
    [[16, 18], '16,18'],
    [[1, 2, 3, 5, 7, 8, 9, 254], '1-3,5,7-9,254'],
    [[], ''],
  ])('%j → %j', (ids, folded) => {
    expect(foldHosts(ids)).toBe(folded);
  });

  it('accepts any iterable (a Set)', () => {
    expect(foldHosts(new Set([34, 16, 17]))).toBe('16-17,34');
  });

  it('round-trips through parseHostSelection', () => {
    const ids = select('16,17,18,20,34');
    expect(select(foldHosts(ids))).toEqual(ids);
  });
});

describe('editDistance (for "did you mean")', () => {
  it.each([
    ['memserver3', 'memserver34', 1],
    ['cpuservr16', 'cpuserver16', 1],
    ['alcie', 'alice', 2],
    ['', 'abc', 3],
    ['same', 'same', 0],
  ])('%s ↔ %s is %i', (a, b, distance) => {
    expect(editDistance(a, b)).toBe(distance);
    expect(editDistance(b, a)).toBe(distance);
  });
});

describe('readsAsSelection: names --hosts would read as something else (onboard does not take them from a machine)', () => {
  it.each([
    ['16', true],
    ['0', true],
    ['007', true],
    ['16-20', true],
    ['34-34', true],
    ['all', true],
    ['@cpu', true],
    ['pair:alice', true],
    ['a,b', true],
    [' node1', true],
    ['node1 ', true],
    ['', true],
    ['node16', false],
    ['16a', false],
    ['16-20a', false],
    ['16-', false],
    ['-16', false],
    ['All', false],
    ['allx', false],
    ['cpu-16-20', false],
    ['pairx', false],
    ['gpu.lab.example', false],
  ])('%j → %s', (name, reads) => expect(readsAsSelection(name)).toBe(reads));

  it('agrees with parseHostSelection: a host named so could not be selected by that name, so the inventory refuses the name', () => {
    const named = (name: string) =>
      loadInventory(
        `fabric: { subnet: 172.16.0.0/16 }\nhosts:\n  16: { name: cpuserver16 }\n  34: { name: '${name}' }\n`,
        'x.yaml',
      );
    const fleet = named('cpuserver34');
    for (const name of ['16', 'all', '16-16']) {
      expect(parseHostSelection(name, fleet)).not.toEqual([34]);
      expect(() => named(name)).toThrow(
        `x.yaml:4:15: hosts.34.name = "${name}": a host name --hosts can select by name: not a number, a range (16-20) or all`,
      );
    }
    expect(parseHostSelection('node7', named('node7'))).toEqual([34]);
  });
});
