/**
 * Adding a student's hosts and pair to an inventory file: the new text is the old text plus the
 * added lines — comments, order, spacing and quoting untouched — and it loads to the old data
 * plus the new entries. Re-adding identical data changes nothing; other data is a conflict.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { planInventoryAddition, type InventoryEdit } from '../../src/inventory/edit.js';
import { yamlScalar } from '../../src/inventory/entry-style.js';
import type { HostEntry, InventoryAddition } from '../../src/inventory/entry.js';

const SEEDS = readFileSync(new URL('../../inventory/fleet.yaml', import.meta.url), 'utf8');

/** The lab's style: flow maps without padding, trailing comments, no pairs key. */
const LAB = `# Inventory of ibfleet lab "x"
fabric:
  subnet: 172.16.0.0/16
  nics: 2
  tableBase: 940
defaults:
  user: root
  manager: auto
ssh:
  knownHosts: known_hosts
hosts:
  16: {name: cpuserver16, address: 198.18.0.16, interfaces: [ibs5f0, ibs5f1]} # Ubuntu 20.04, NetworkManager
  34: {name: memserver34, address: 198.18.0.34} # Ubuntu 18.04, netplan + networkd-dispatcher
`;

const BLOCK = `fabric:
  subnet: 172.16.0.0/16
hosts:
    16:
        name: cpuserver16
        address: 10.0.0.16
    # the memory server
    34:
        name: memserver34
        address: 10.0.0.34
pairs:
- owner: alice
  cpu: 16
  mem: 34
`;

const cpu50: HostEntry = {
  id: 50,
  name: 'cpuserver50',
  address: '10.208.130.50',
  role: 'cpu',
  interfaces: ['ibp1s0', 'ibp2s0'],
};
const mem51: HostEntry = {
  id: 51,
  name: 'memserver51',
  address: '10.208.130.51',
  role: 'mem',
  comment: "bob's mem server: Ubuntu 22.04.4 LTS, netplan (detected)",
};
const bob = { owner: 'bob', cpu: 50, mem: 51 };

function plan(text: string, addition: InventoryAddition): InventoryEdit {
  return planInventoryAddition(text, 'inv.yaml', '/nowhere', addition);
}

function added(edit: InventoryEdit): Extract<InventoryEdit, { ok: true }> {
  if (!edit.ok) throw new Error(`expected an edit, got conflicts:\n${edit.conflicts.join('\n')}`);
  return edit;
}

/**
 * Taking exactly the added lines out of the new text gives the old text back, byte for byte
 * (for additions of whole lines: not for `{}` → block or entries added inside brackets).
 */
function expectOnlyLinesAdded(before: string, after: string, addedLines: readonly string[]): void {
  const eol = before.includes('\r\n') ? '\r\n' : '\n';
  const remaining = [...addedLines];
  const kept = after.split(eol).filter((line) => {
    const i = remaining.indexOf(line);
    if (i < 0) return true;
    remaining.splice(i, 1);
    return false;
  });
  expect(remaining).toEqual([]);
  expect(kept.join(eol)).toBe(before.endsWith(eol) ? before : `${before}${eol}`);
}

describe('planInventoryAddition: only lines are added, the rest is byte-identical', () => {
  const cases: { name: string; text: string; addition: InventoryAddition; expected: string }[] = [
    {
      name: 'the shipped seeds inventory: padded flow maps, aligned comments, a comment above host 34',
      text: SEEDS,
      addition: { hosts: [cpu50, mem51], pair: bob },
      expected: SEEDS.replace(
        '  34: { name: memserver34, address: 10.208.130.34, role: mem, manager: netplan }\n',
        "  34: { name: memserver34, address: 10.208.130.34, role: mem, manager: netplan }\n  50: { name: cpuserver50, address: 10.208.130.50, role: cpu, interfaces: [ibp1s0, ibp2s0] }\n  51: { name: memserver51, address: 10.208.130.51, role: mem } # bob's mem server: Ubuntu 22.04.4 LTS, netplan (detected)\n",
      ).replace(
        '  - { owner: alice, cpu: 16, mem: 34 }\n',
        '  - { owner: alice, cpu: 16, mem: 34 }\n  - { owner: bob, cpu: 50, mem: 51 }\n',
      ),
    },
    {
      name: 'a host number between existing ones goes in order, above the comment that belongs to the next host',
      text: SEEDS,
      addition: { hosts: [{ id: 20, name: 'cpuserver20', address: '10.208.130.20', role: 'cpu' }] },
      expected: SEEDS.replace(
        '  # Ubuntu 18.04 server',
        '  20: { name: cpuserver20, address: 10.208.130.20, role: cpu }\n  # Ubuntu 18.04 server',
      ),
    },
    {
      name: 'the lab style: no padding inside braces, trailing comments; a pairs key is started at the end',
      text: LAB,
      addition: { hosts: [cpu50, mem51], pair: bob },
      expected: `${LAB.replace(
        '# Ubuntu 18.04, netplan + networkd-dispatcher\n',
        "# Ubuntu 18.04, netplan + networkd-dispatcher\n  50: {name: cpuserver50, address: 10.208.130.50, role: cpu, interfaces: [ibp1s0, ibp2s0]}\n  51: {name: memserver51, address: 10.208.130.51, role: mem} # bob's mem server: Ubuntu 22.04.4 LTS, netplan (detected)\n",
      )}pairs:\n  - {owner: bob, cpu: 50, mem: 51}\n`,
    },
    {
      name: 'block-style hosts and pairs are continued in block style, with their indentation',
      text: BLOCK,
      addition: {
        hosts: [
          { id: 20, name: 'cpuserver20', address: '10.0.0.20', role: 'cpu', interfaces: ['ibs5f0', 'ibs5f1'] },
          mem51,
        ],
        pair: { owner: 'bob', cpu: 20, mem: 51 },
      },
      expected: BLOCK.replace(
        '    # the memory server\n',
        '    20:\n        name: cpuserver20\n        address: 10.0.0.20\n        role: cpu\n        interfaces: [ibs5f0, ibs5f1]\n    # the memory server\n',
      )
        .replace(
          '        address: 10.0.0.34\n',
          "        address: 10.0.0.34\n    51: # bob's mem server: Ubuntu 22.04.4 LTS, netplan (detected)\n        name: memserver51\n        address: 10.208.130.51\n        role: mem\n",
        )
        .replace('  mem: 34\n', '  mem: 34\n- owner: bob\n  cpu: 20\n  mem: 51\n'),
    },
    {
      name: 'empty `hosts: {}` and `pairs: []` (with a comment) become blocks under their keys',
      text: 'fabric: { subnet: 172.16.0.0/16 }\nhosts: {}\npairs: []   # none yet\n',
      addition: { hosts: [cpu50, mem51], pair: bob },
      expected: '',
    },
    {
      name: 'a flow-style hosts map and pairs list are extended inside their brackets',
      text: 'fabric: { subnet: 172.16.0.0/16 }\nhosts: { 16: { name: a16 }, 34: { name: a34 } }\npairs: [ { owner: alice, cpu: 16, mem: 34 } ]\n',
      addition: { hosts: [{ ...cpu50, comment: 'never inside braces' }, mem51], pair: bob },
      expected:
        'fabric: { subnet: 172.16.0.0/16 }\nhosts: { 16: { name: a16 }, 34: { name: a34 }, 50: { name: cpuserver50, address: 10.208.130.50, role: cpu, interfaces: [ ibp1s0, ibp2s0 ] }, 51: { name: memserver51, address: 10.208.130.51, role: mem } }\npairs: [ { owner: alice, cpu: 16, mem: 34 }, { owner: bob, cpu: 50, mem: 51 } ]\n',
    },
    {
      name: 'CRLF line ends and a missing final newline are respected',
      text: 'fabric:\r\n  subnet: 172.16.0.0/16\r\nhosts:\r\n  16: { name: a16 }',
      addition: { hosts: [cpu50] },
      expected:
        'fabric:\r\n  subnet: 172.16.0.0/16\r\nhosts:\r\n  16: { name: a16 }\r\n  50: { name: cpuserver50, address: 10.208.130.50, role: cpu, interfaces: [ibp1s0, ibp2s0] }\r\n',
    },
    {
      name: 'values that YAML would read differently are quoted',
      text: 'fabric: { subnet: 172.16.0.0/16 }\nhosts:\n  16: { name: a16 }\n',
      addition: { hosts: [{ id: 50, name: 'cpuserver50', address: 'fe80::50', user: 'true' }] },
      expected:
        'fabric: { subnet: 172.16.0.0/16 }\nhosts:\n  16: { name: a16 }\n  50: { name: cpuserver50, address: "fe80::50", user: "true" }\n',
    },
  ];

  for (const c of cases) {
    it(c.name, () => {
      const edit = added(plan(c.text, c.addition));
      if (c.expected) expect(edit.text).toBe(c.expected);
      if (!/\{\}|\[\]|: [{[] \d/.test(c.text)) expectOnlyLinesAdded(c.text, edit.text, edit.addedLines);
      for (const h of c.addition.hosts) expect(edit.fleet.hosts.map((x) => x.id)).toContain(h.id);
      if (c.addition.pair) expect(edit.fleet.pairs).toContainEqual(c.addition.pair);
    });
  }

  it('entries added inside brackets are reported too', () => {
    const edit = added(
      plan(
        'fabric: { subnet: 172.16.0.0/16 }\nhosts: { 16: { name: a16 }, 34: { name: a34 } }\npairs: [ { owner: alice, cpu: 16, mem: 34 } ]\n',
        { hosts: [cpu50] },
      ),
    );
    expect(edit.addedLines).toEqual([
      '50: { name: cpuserver50, address: 10.208.130.50, role: cpu, interfaces: [ ibp1s0, ibp2s0 ] }',
    ]);
  });

  it('empty collections: the exact text', () => {
    const edit = added(
      plan('fabric: { subnet: 172.16.0.0/16 }\nhosts: {}\npairs: []   # none yet\n', {
        hosts: [cpu50, mem51],
        pair: bob,
      }),
    );
    expect(edit.text).toBe(
      "fabric: { subnet: 172.16.0.0/16 }\nhosts:\n  50: { name: cpuserver50, address: 10.208.130.50, role: cpu, interfaces: [ibp1s0, ibp2s0] }\n  51: { name: memserver51, address: 10.208.130.51, role: mem } # bob's mem server: Ubuntu 22.04.4 LTS, netplan (detected)\npairs:   # none yet\n  - { owner: bob, cpu: 50, mem: 51 }\n",
    );
  });

  it('a new entry leaves out what it would inherit from defaults: interfaces, user, manager', () => {
    const edit = added(
      plan(SEEDS, {
        hosts: [
          {
            id: 50,
            name: 'cpuserver50',
            address: '10.208.130.50',
            role: 'cpu',
            interfaces: ['ib0', 'ib1'],
            user: 'root',
            manager: 'auto' as never,
          },
          {
            id: 51,
            name: 'memserver51',
            address: '10.208.130.51',
            role: 'mem',
            interfaces: ['ib1', 'ib0'],
            user: 'labadmin',
            manager: 'ifupdown',
          },
        ],
      }),
    );
    expect(edit.addedLines).toEqual([
      '  50: { name: cpuserver50, address: 10.208.130.50, role: cpu }',
      '  51: { name: memserver51, address: 10.208.130.51, role: mem, interfaces: [ib1, ib0], user: labadmin, manager: ifupdown }',
    ]);
    expect(edit.fleet.hosts.find((h) => h.id === 50)!.nics.map((n) => n.iface)).toEqual(['ib0', 'ib1']);
  });

  it('reports the added lines as written', () => {
    const edit = added(plan(SEEDS, { hosts: [cpu50, mem51], pair: bob }));
    expect(edit.addedLines).toEqual([
      '  50: { name: cpuserver50, address: 10.208.130.50, role: cpu, interfaces: [ibp1s0, ibp2s0] }',
      "  51: { name: memserver51, address: 10.208.130.51, role: mem } # bob's mem server: Ubuntu 22.04.4 LTS, netplan (detected)",
      '  - { owner: bob, cpu: 50, mem: 51 }',
    ]);
    expect(edit).toMatchObject({ addedHosts: [50, 51], addedPair: true });
  });

  it.each([
    ['NEL (a line break to YAML 1.1)', 'x\u0085  52: {name: evil}', 'x? 52: {name: evil}'],
    ['U+2028 and U+2029', 'x\u2028  52: {name: evil}\u2029y', 'x? 52: {name: evil}?y'],
    ['CR LF', 'x\r\n  52: {name: evil}', 'x?? 52: {name: evil}'],
    ['8-bit CSI and a bidi override', 'x\u009b2J\u202e', 'x?2J?'],
    ['a comment too long for a line', 'c'.repeat(500), `${'c'.repeat(159)}…`],
  ])('a comment stays one short printable line whatever the caller passes: %s', (_, comment, written) => {
    const edit = added(plan(SEEDS, { hosts: [{ ...mem51, comment }], pair: undefined }));
    expect(edit.addedLines).toEqual([`  51: { name: memserver51, address: 10.208.130.51, role: mem } # ${written}`]);
  });
});

describe('planInventoryAddition: re-runs and conflicts', () => {
  const once = added(plan(SEEDS, { hosts: [cpu50, mem51], pair: bob })).text;

  it('adding the same hosts and pair again changes nothing (an idempotent re-run)', () => {
    const again = added(plan(once, { hosts: [cpu50, mem51], pair: bob }));
    expect(again.text).toBe(once);
    expect(again).toMatchObject({ addedHosts: [], addedPair: false, addedLines: [] });
  });

  it('a host already present with the same data is fine, also when its interfaces come from defaults or it has a manager', () => {
    const edit = added(
      plan(SEEDS, {
        hosts: [
          { id: 16, name: 'cpuserver16', address: '10.208.130.16', role: 'cpu', interfaces: ['ibs5f0', 'ibs5f1'] },
          { id: 34, name: 'memserver34', role: 'mem', interfaces: ['ib0', 'ib1'] },
        ],
        pair: { owner: 'alice', cpu: 16, mem: 34 },
      }),
    );
    expect(edit.text).toBe(SEEDS);
  });

  const conflicts: { name: string; text?: string; addition: InventoryAddition; message: RegExp }[] = [
    {
      name: 'a host number present with another address',
      addition: { hosts: [{ id: 34, name: 'memserver34', address: '10.208.130.99', role: 'mem' }] },
      message:
        /^host 34 is already in inv\.yaml \(line 19\) with other data: address 10\.208\.130\.34 \(onboard would write 10\.208\.130\.99\); correct or remove that entry, or choose another host number$/,
    },
    {
      name: 'a host number present with other interfaces',
      addition: { hosts: [{ id: 34, name: 'memserver34', role: 'mem', interfaces: ['ibp1s0', 'ibp2s0'] }] },
      message: /interfaces ib0, ib1 \(onboard would write ibp1s0, ibp2s0\)/,
    },
    {
      name: 'a host number present under another name and role',
      addition: { hosts: [{ id: 34, name: 'cpuserver34', role: 'cpu' }] },
      message: /name memserver34 \(onboard would write cpuserver34\), role mem \(onboard would write cpu\)/,
    },
    {
      name: 'a host number present with another manager',
      addition: { hosts: [{ id: 34, name: 'memserver34', role: 'mem', manager: 'ifupdown' }] },
      message: /manager netplan \(onboard would write ifupdown\)/,
    },
    {
      name: 'an owner who already has a pair with other hosts',
      text: once,
      addition: { hosts: [], pair: { owner: 'bob', cpu: 16, mem: 51 } },
      message: /^bob already has a pair in inv\.yaml \(cpu 50, mem 51\); an owner has one pair/,
    },
    {
      name: "a machine that is in someone else's pair",
      addition: { hosts: [], pair: { owner: 'bob', cpu: 16, mem: 51 } },
      message: /^host 16 already belongs to alice's pair \(cpu 16, mem 34\)/,
    },
    {
      name: 'a new host whose management address is already another host’s (the result would not load)',
      addition: { hosts: [{ id: 50, name: 'cpuserver50', address: '10.208.130.16' }] },
      message:
        /^with these entries inv\.yaml would not be valid: line \d+: host 50: address 10\.208\.130\.16 is also host 16's/,
    },
  ];

  for (const c of conflicts) {
    it(`refuses ${c.name}`, () => {
      const edit = plan(c.text ?? SEEDS, c.addition);
      expect(edit.ok).toBe(false);
      if (!edit.ok)
        expect(
          edit.conflicts.some((m) => c.message.test(m)),
          edit.conflicts.join('\n'),
        ).toBe(true);
    });
  }

  it('an invalid inventory is reported as such before anything is planned', () => {
    expect(() => plan('fabric: { subnet: 172.16.0.0/16 }\nhosts:\n  999: { name: x }\n', { hosts: [cpu50] })).toThrow(
      /host number "999" is outside 1..254/,
    );
  });
});

describe('yamlScalar', () => {
  it.each([
    ['ibs5f0', 'ibs5f0'],
    ['10.208.130.16', '10.208.130.16'],
    ['cpuserver16.lab.example', 'cpuserver16.lab.example'],
    ['true', '"true"'],
    ['null', '"null"'],
    ['0x10', '"0x10"'],
    ['1e3', '"1e3"'],
    ['fe80::1', '"fe80::1"'],
    ['a, b', '"a, b"'],
    ['#x', '"#x"'],
  ])('%s → %s', (value, written) => expect(yamlScalar(value)).toBe(written));
});
