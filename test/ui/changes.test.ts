/** A host's changes by kind, and the dry-run plan folded across hosts: tables of input → text. */
import { describe, expect, it } from 'vitest';
import { summarizeChanges } from '../../src/ui/text/changes.js';
import { foldPlans, formatPlanLines } from '../../src/ui/text/plan.js';
import type { Change, ChangeAction, ChangeKind, HostRef } from '../../src/vocabulary.js';
import { host, result } from './fixtures.js';

const c = (kind: ChangeKind, action: ChangeAction, subject = 'ib0', text = `${subject}: ${kind}`): Change => ({
  kind,
  action,
  subject,
  text,
});

/** The changes the seeds' broken host needs: what deploy plans for it. */
function deployChanges(h: HostRef): Change[] {
  return h
    .nics!.flatMap((n): Change[] => [
      c('sysctl', 'set', n.iface, `${n.iface}: arp_ignore 1 → 2`),
      c('sysctl', 'set', n.iface, `${n.iface}: rp_filter 1 → 2`),
      c('table-route', 'add', n.iface, `${n.iface}: table ${940 + n.index} ← 172.16.0.0/16 src ${n.address}`),
      c('rule', 'add', n.iface, `${n.iface}: rule ${940 + n.index}: from ${n.address} lookup ${940 + n.index}`),
      c('main-route', 'remove', n.iface, `${n.iface}: remove main-table route 172.16.0.0/16 dev ${n.iface}`),
    ])
    .concat([
      c('script', 'install', '/etc/ibfleet/ibfleet-routes', 'install /etc/ibfleet/ibfleet-routes (755)'),
      c('hook', 'install', '/etc/hook', 'install /etc/hook (755)'),
    ]);
}

describe('summarizeChanges', () => {
  it.each<[string, Change[], string]>([
    ['nothing', [], ''],
    [
      'the fix, signed, rules first',
      [
        c('main-route', 'remove'),
        c('table-route', 'add'),
        c('rule', 'add'),
        c('rule', 'add', 'ib1'),
        c('table-route', 'add', 'ib1'),
        c('main-route', 'remove', 'ib1'),
      ],
      '+2 rules +2 table routes −2 main routes',
    ],
    [
      "the issue's example",
      [
        c('rule', 'add'),
        c('rule', 'add', 'ib1'),
        c('table-route', 'add'),
        c('table-route', 'add', 'ib1'),
        c('main-route', 'remove'),
        c('main-route', 'remove', 'ib1'),
        c('hook', 'install', '/h'),
      ],
      '+2 rules +2 table routes −2 main routes, hook installed',
    ],
    [
      'sysctls are counted, not signed',
      [c('sysctl', 'set'), c('sysctl', 'set'), c('sysctl', 'set', 'ib1')],
      '3 sysctls set',
    ],
    [
      'files of one action share a phrase, in the order the playbook runs their steps',
      [c('hook', 'install', '/h'), c('sysctl-file', 'install', '/c'), c('script', 'install', '/s')],
      'script, sysctl file and hook installed',
    ],
    [
      'files of different actions do not',
      [c('script', 'replace', '/s'), c('hook', 'remove', '/h')],
      'script replaced, hook removed',
    ],
    [
      'rollback',
      [
        c('rule', 'remove'),
        c('table-route', 'remove'),
        c('main-route', 'add'),
        c('sysctl', 'reset'),
        c('script', 'remove', '/s'),
      ],
      '−1 rule −1 table route +1 main route, 1 sysctl reset, script removed',
    ],
    ['a replaced rule is not an addition', [c('rule', 'replace')], '1 rule replaced'],
    [
      'timer units (the periodic repair)',
      [c('timer', 'install', '/a'), c('timer', 'install', '/b'), c('timer', 'start', 'unit')],
      '2 timer units installed, timer unit started',
    ],
    [
      'native persistence: profiles with the fix, the netplan file with the other files',
      [
        c('sysctl-file', 'install', '/c'),
        c('nm-profile', 'set'),
        c('nm-profile', 'set', 'ib1'),
        c('netplan-file', 'install', '/n'),
        c('rule', 'add'),
      ],
      '+1 rule, 2 connection profiles set, sysctl file and netplan file installed',
    ],
    [
      'a kind this table does not know is still counted',
      [c('rule', 'add'), { kind: 'nmcli-connection' as ChangeKind, action: 'set', subject: 'ib0', text: 'x' }],
      '+1 rule, 1 nmcli-connection change',
    ],
  ])('%s', (_name, changes, text) => {
    expect(summarizeChanges(changes)).toBe(text);
  });
});

describe('foldPlans: hosts whose plans differ only in their own addresses and names fold together', () => {
  const nm16 = host(16, 'cpuserver16', ['ibs5f0', 'ibs5f1']);
  const others = [34, 40, 41, 42, 57].map((id) => host(id, `node${id}`, ['ib0', 'ib1']));
  const planned = (h: HostRef, manager: 'netplan' | 'networkmanager', changes = deployChanges(h)) =>
    result(h, 'planned', { manager, changes, reasons: changes.map((x) => x.text) });

  it('groups by identical plan and manager, in host order; a lone host keeps its real values', () => {
    const groups = foldPlans([...others.map((h) => planned(h, 'netplan')), planned(nm16, 'networkmanager')]);
    expect(groups.map((g) => [g.hostSet, g.manager])).toEqual([
      ['16', 'networkmanager'],
      ['34,40-42,57', 'netplan'],
    ]);
    expect(groups[0]!.lines).toContain('+ ibs5f1: rule 942: from 172.16.16.2 lookup 942');
    expect(groups[1]!.lines).toEqual([
      '+ ib0: rule 941: from 172.16.H.1 lookup 941',
      '+ ib1: rule 942: from 172.16.H.2 lookup 942',
      '+ ib0: table 941 ← 172.16.0.0/16 src 172.16.H.1',
      '+ ib1: table 942 ← 172.16.0.0/16 src 172.16.H.2',
      '− ib0: remove main-table route 172.16.0.0/16 dev ib0',
      '− ib1: remove main-table route 172.16.0.0/16 dev ib1',
      '~ ib0: arp_ignore 1→2, rp_filter 1→2',
      '~ ib1: arp_ignore 1→2, rp_filter 1→2',
      '+ install /etc/ibfleet/ibfleet-routes (755)',
      '+ install /etc/hook (755)',
    ]);
  });

  it('hosts with other interface names fold when the plan is the same: the names read NIC n', () => {
    const odd = host(50, 'odd50', ['eth2', 'eth3']);
    const groups = foldPlans([planned(others[0]!, 'netplan'), planned(odd, 'netplan')]);
    expect(groups).toHaveLength(1);
    expect(groups[0]!.lines[0]).toBe('+ NIC 1: rule 941: from 172.16.H.1 lookup 941');
  });

  it('a host that needs something more is its own group', () => {
    const extra = [
      ...deployChanges(others[1]!),
      c('hook', 'remove', '/old', 'remove /old (hook for ifupdown; this host uses netplan)'),
    ];
    const groups = foldPlans([
      planned(others[0]!, 'netplan'),
      planned(others[1]!, 'netplan', extra),
      planned(others[2]!, 'netplan'),
    ]);
    expect(groups.map((g) => g.hostSet)).toEqual(['34,41', '40']);
  });

  it('the plan text: a heading, each group with its summary, hosts with nothing to do on one line', () => {
    const lines = formatPlanLines(
      [
        planned(others[0]!, 'netplan'),
        planned(others[1]!, 'netplan'),
        result(others[2]!, 'unchanged'),
        result(others[3]!, 'failed'),
      ],
      { scriptsHint: 'the exact scripts: --show-scripts' },
    );
    expect(lines[0]).toBe('plan: 2 hosts to change, all alike (the exact scripts: --show-scripts)');
    expect(lines[1]).toBe(
      '34,40 (2 hosts, netplan): +2 rules +2 table routes −2 main routes, 4 sysctls set, script and hook installed',
    );
    expect(lines.at(-1)).toBe('41: nothing to change');
  });

  it("what a plan says besides its changes (native persistence's limits) is told once per group, with the hosts' own values folded", () => {
    const note = (h: HostRef) =>
      `netplan cannot keep the kernel's subnet route out of the main table; the source rules (priority 941, 942) come before main, ${h.nics![0]!.address} included`;
    const withNote = (h: HostRef) =>
      result(h, 'planned', {
        manager: 'netplan',
        changes: deployChanges(h),
        reasons: [note(h), ...deployChanges(h).map((x) => x.text)],
      });
    const lines = formatPlanLines([withNote(others[0]!), withNote(others[1]!), planned(others[2]!, 'netplan')]);
    expect(lines.filter((l) => l.includes('note:'))).toEqual([
      `  note: netplan cannot keep the kernel's subnet route out of the main table; the source rules (priority 941, 942) come before main, 172.16.H.1 included`,
    ]);
    expect(lines.filter((l) => /^\S/.test(l)).map((l) => l.split(':')[0])).toEqual([
      'plan',
      '34,40 (2 hosts, netplan)',
      '41 node41 (netplan)',
    ]);
  });

  it('20 hosts in 2 plans take 2 headings and 10 change lines each, whatever the fleet size', () => {
    const fleet = Array.from({ length: 19 }, (_, i) => host(40 + i, `node${40 + i}`, ['ib0', 'ib1']));
    const lines = formatPlanLines([planned(nm16, 'networkmanager'), ...fleet.map((h) => planned(h, 'netplan'))]);
    expect(lines).toHaveLength(1 + 2 * 11);
  });
});
