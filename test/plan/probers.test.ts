/**
 * verify's probers, read as data: each prober's output (python3's `r` lines, fping's frames,
 * ping's `@@cell` frames) gives the same cell verdicts; host text that is not exactly one of them is
 * ignored; the neighbour table names ARP flux, a foreign MAC, an address that never resolved; and
 * the three scripts pass shellcheck (test/root/plan/probe-run.test.ts runs the python3 prober).
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseProbe, type HostFacts } from '../../src/facts/host-facts.js';
import { loadInventory } from '../../src/inventory/load.js';
import { cellCauses, corroborate, replyCauses, wrongPathCauses } from '../../src/plan/cell-causes.js';
import {
  ProbeStream,
  chooseProber,
  parseCapabilities,
  parseNeighbour,
  type NeighbourEntry,
  type ProbeOutcome,
} from '../../src/plan/verify-output.js';
import { renderPingScript } from '../../src/render/verify-scripts.js';
import { SYSCTL_PATH } from '../../src/steps/fabric-sysctl/sysctl-file.js';
import type { CellEnd, CellSpec, ProberKind } from '../../src/vocabulary.js';

const fleet = loadInventory(
  'fabric: { subnet: 172.16.0.0/16 }\nhosts:\n  16: { name: cpu16, address: a16 }\n  34: { name: mem34, address: a34 }\n',
  't.yaml',
);
const PROGRAM = readFileSync('host/ibfleet-probe.py', 'utf8');
const MAC = { 'ib0@34': '02:00:00:00:34:01', 'ib1@34': '02:00:00:00:34:02' };

function end(host: number, nic: number): CellEnd {
  const h = fleet.hosts.find((x) => x.id === host)!;
  const n = h.nics.find((x) => x.index === nic)!;
  return { host, name: h.name, nic, iface: n.iface, ip: n.address };
}
const cell = (fromNic: number, toNic: number): CellSpec => ({
  from: end(16, fromNic),
  to: end(34, toNic),
  method: 'ping',
});

/** A deployed host's facts: links with their MACs, and traffic from each address leaving by its own NIC unless `leaves` says. */
function facts(id: number, leaves: Readonly<Record<string, string>> = {}, deployed = true): HostFacts {
  const host = fleet.hosts.find((h) => h.id === id)!;
  return {
    ...parseProbe('@@ibfleet probe 3\n@@ibfleet end\n'),
    files: new Map(deployed ? [[SYSCTL_PATH, { mode: 0o644, uid: 0, sha256: '' }]] : []),
    links: new Map(
      host.nics.map((n) => [n.iface, { up: true, lowerUp: true, mtu: 2044, hwaddr: `02:00:00:00:${id}:0${n.index}` }]),
    ),
    rules: host.nics.map((n) => ({ priority: n.priority, from: n.address, table: String(n.table), text: '' })),
    routes: new Map(host.nics.map((n) => [String(n.table), [{ dst: '172.16.0.0/16', dev: n.iface, text: '' }]])),
    routeGet: new Map(
      host.nics.map((n) => [n.iface, { dev: leaves[n.iface] ?? n.iface, table: String(n.table), text: '' }]),
    ),
    complete: true,
  } as unknown as HostFacts;
}

function outcomes(lines: string, cellOf: (s: string, d: string) => number | undefined = () => undefined) {
  const got: ProbeOutcome[] = [];
  const neighbours: (readonly NeighbourEntry[])[] = [];
  const stream = new ProbeStream(
    (o) => got.push(o),
    (n) => neighbours.push(n),
    cellOf,
  );
  for (const line of lines.split('\n')) stream.push(line);
  return { got: got.map((o) => [o.id, o.verdict.ok, o.verdict.detail]), neighbours };
}

describe('which prober a host runs', () => {
  it.each([
    ['python3=yes\nfping=/usr/bin/fping\n', 'python3'],
    ['python3=\nfping=/usr/bin/fping\n', 'fping'],
    ['python3=\nfping=\n', 'ping'],
    // A python3 that printed anything but "yes" could not open a raw socket.
    ['python3=Traceback\nfping=\n', 'ping'],
  ] as const)('%j → %s', (text, kind) => {
    expect(chooseProber(parseCapabilities(text))).toBe(kind);
  });
});

describe('the same verdicts from every prober', () => {
  it('python3: r lines, with what the probes met', () => {
    expect(
      outcomes(
        [
          '@@prober python3',
          'r 0 3 3 52 -',
          'r 1 3 2 70 -',
          'r 2 3 0 - err:ENETUNREACH',
          'r 3 3 0 - unreach:1:172.16.16.2',
          'r 4 3 0 - from:172.16.99.9',
          'done',
        ].join('\n'),
      ).got,
    ).toEqual([
      [0, true, '3/3 replies, avg 0.052 ms'],
      [1, false, '2/3 replies, avg 0.070 ms (1 lost)'],
      [2, false, '0/3 replies — sending failed: ENETUNREACH'],
      [3, false, '0/3 replies — host unreachable (from 172.16.16.2)'],
      [4, false, '0/3 replies — an answer came from 172.16.99.9'],
    ]);
  });

  it('fping: one frame per source address, cells found by source and destination', () => {
    const ids: Record<string, number> = { '172.16.16.1 172.16.34.1': 0, '172.16.16.2 172.16.34.2': 7 };
    expect(
      outcomes(
        [
          '@@fping 172.16.16.1 0',
          '172.16.34.1 : 0.050 0.052 0.054',
          '@@fping-end',
          '@@fping 172.16.16.2 1',
          '172.16.34.2 : 0.070 - 0.070',
          '172.16.34.9 : 0.070 0.070 0.070',
          '@@fping-end',
        ].join('\n'),
        (s, d) => ids[`${s} ${d}`],
      ).got,
    ).toEqual([
      [0, true, '3/3 replies, avg 0.052 ms'],
      [7, false, '2/3 replies, avg 0.070 ms (1 lost)'],
    ]);
  });

  it('ping: @@cell frames as before', () => {
    const text =
      '@@cell 5 0\n3 packets transmitted, 3 received, 0% packet loss\nrtt min/avg/max/mdev = 0.040/0.052/0.060/0.01 ms\n@@cell-end';
    expect(outcomes(text).got).toEqual([[5, true, '3/3 replies, avg 0.052 ms']]);
  });

  it('hostile text is ignored, never a verdict: counts past PING_COUNT, got > sent, junk notes, stray frames', () => {
    const text = [
      'r 0 4 4 1 -',
      'r 1 3 4 1 -',
      'r 2 3 3 1 from:evil;rm',
      'r 3 3 3 99999999999999 -',
      'r x 3 3 1 -',
      `r 4 3 3 1 ${'x'.repeat(100)}`,
      '@@fping 172.16.16.1 0',
      '172.16.34.1 : 1e9 NaN 3',
      '@@fping-end',
    ].join('\n');
    const { got } = outcomes(text, () => 9);
    // Only the well-formed line with an unknown note: read as no note.
    expect(got).toEqual([[2, true, '3/3 replies, avg 0.001 ms']]);
  });
});

describe('the neighbour table', () => {
  it.each([
    [
      '172.16.34.2 dev ib1 lladdr 02:00:00:00:34:02 REACHABLE ',
      { address: '172.16.34.2', dev: 'ib1', lladdr: '02:00:00:00:34:02', state: 'REACHABLE' },
    ],
    ['172.16.34.2 dev ib1  FAILED', undefined],
    ['172.16.34.2 dev ib1 FAILED', { address: '172.16.34.2', dev: 'ib1', state: 'FAILED' }],
    [
      '172.16.34.2 dev ib1 lladdr 02:00:00:00:34:02 extern_learn STALE',
      { address: '172.16.34.2', dev: 'ib1', lladdr: '02:00:00:00:34:02', state: 'STALE' },
    ],
    ['172.16.34.2 dev ib1 lladdr 02:00:00:00:34:02 HACKED', undefined],
    ['$(reboot) dev ib1 FAILED', undefined],
  ])('%j', (line, entry) => {
    expect(parseNeighbour(line)).toEqual(entry);
  });

  const all = new Map([
    [16, facts(16)],
    [34, facts(34)],
  ]);
  const factsOf = (id: number) => all.get(id);
  const neighbour = (dev: string, address: string, lladdr: string | undefined, state = 'REACHABLE') => ({
    neighbours: [{ address, dev, ...(lladdr ? { lladdr } : {}), state }],
  });

  it("ARP flux: NIC 2's address resolved to NIC 1's MAC fails the cell, naming both NICs, charged to the peer", () => {
    const causes = wrongPathCauses(fleet, cell(2, 2), neighbour('ib1', '172.16.34.2', MAC['ib0@34']), factsOf);
    expect(causes.map((c) => [c.kind, c.host, c.iface])).toEqual([['arp-flux', 34, 'ib1']]);
    expect(causes[0]!.text).toMatch(
      /^34\/ib1: 172\.16\.34\.2 resolves to 02:00:00:00:34:01, the MAC of 34\/ib0: ARP flux/,
    );
  });

  it("ARP flux on a peer ibfleet never deployed (the seeds' failure before a deploy) fails no cell: which NIC answers is chance there", () => {
    const fresh = (id: number) => (id === 34 ? facts(34, {}, false) : factsOf(id));
    expect(wrongPathCauses(fleet, cell(2, 2), neighbour('ib1', '172.16.34.2', MAC['ib0@34']), fresh)).toEqual([]);
  });

  it('the right MAC, or none known: nothing wrong with the path', () => {
    expect(wrongPathCauses(fleet, cell(2, 2), neighbour('ib1', '172.16.34.2', MAC['ib1@34']), factsOf)).toEqual([]);
    expect(wrongPathCauses(fleet, cell(2, 2), {}, factsOf)).toEqual([]);
  });

  it('a MAC of no NIC of the peer: another machine answers for the address', () => {
    const causes = wrongPathCauses(fleet, cell(2, 2), neighbour('ib1', '172.16.34.2', '02:de:ad:be:ef:00'), factsOf);
    expect(causes.map((c) => c.kind)).toEqual(['address-conflict']);
  });

  it('the answer leaving the peer by another NIC fails the cell even when every echo came back', () => {
    const crossed = new Map([
      [16, facts(16)],
      [34, facts(34, { ib1: 'ib0' })],
    ]);
    const causes = wrongPathCauses(fleet, cell(1, 2), {}, (id) => crossed.get(id));
    expect(causes.map((c) => c.text)).toEqual(['34/ib1: traffic from 172.16.34.2 leaves through ib0']);
  });

  it("through the wrong port before any deploy: every end's missing routing, as when no answer came back", () => {
    // The seeds' state: no rule, no table at either end; 16's NIC 2 traffic leaves by NIC 1, 34's NIC 1 by its own.
    const seeds = (id: number, leaves: Readonly<Record<string, string>>): HostFacts => ({
      ...facts(id, leaves, false),
      rules: [],
      routes: new Map(),
    });
    const hosts = new Map([
      [16, seeds(16, { ib1: 'ib0' })],
      [34, seeds(34, {})],
    ]);
    const factsOf = (id: number) => hosts.get(id);
    const causes = wrongPathCauses(fleet, cell(2, 1), {}, factsOf);
    expect(causes.map((c) => `${c.kind} ${c.host}/${c.iface}`)).toEqual([
      'routing-missing 16/ib1',
      'routing-missing 34/ib0',
    ]);
    // Whether the answers came back through the wrong port or were dropped is chance; the causes are not.
    expect(causes).toEqual(cellCauses(fleet, cell(2, 1), factsOf));
  });

  it('no reply: a neighbour that never resolved, an answer from elsewhere, or — all right — the peer drops it', () => {
    expect(replyCauses(cell(2, 2), neighbour('ib1', '172.16.34.2', undefined, 'FAILED'), facts(16))[0]!.kind).toBe(
      'neighbour-failed',
    );
    expect(replyCauses(cell(2, 2), { note: { kind: 'from', address: '172.16.9.9' } }, facts(16))[0]!.text).toBe(
      '34/ib1: the answers to 172.16.34.2 came from 172.16.9.9',
    );
    expect(replyCauses(cell(2, 2), neighbour('ib1', '172.16.34.2', MAC['ib1@34']), facts(16))[0]!.kind).toBe(
      'no-reply',
    );
    expect(replyCauses(cell(2, 2), {}, facts(16))).toEqual([]);
  });
});

describe('the prober scripts', () => {
  const cells = [
    { id: 0, cell: cell(1, 1) },
    { id: 1, cell: cell(2, 2) },
  ];
  it.each(['python3', 'fping', 'ping'] as ProberKind[])('%s: shellcheck -s sh finds nothing', (kind) => {
    const result = spawnSync('shellcheck', ['-s', 'sh', '-'], {
      input: renderPingScript(cells, kind, PROGRAM),
      encoding: 'utf8',
    });
    expect(result.stdout + result.stderr).toBe('');
  });

  it('fping runs once per source address, from that address, over its destinations', () => {
    const script = renderPingScript(cells, 'fping');
    expect(script.match(/^fping -S /gm)).toHaveLength(2);
    expect(script).toContain('fping -S 172.16.16.1 -C 3 -p 200 -t 1000 -i 1 -r 0 -q -f "$dir/t0"');
  });
});

describe("a host's word against another", () => {
  const fleet3 = loadInventory(
    'fabric: { subnet: 172.16.0.0/16 }\nhosts:\n  16: { name: a, address: a }\n  34: { name: b, address: b }\n  40: { name: c, address: c }\n',
    't.yaml',
  );
  const at = (host: number, nic: number): CellEnd => {
    const n = fleet3.hosts.find((h) => h.id === host)!.nics[nic - 1]!;
    return { host, name: String(host), nic, iface: n.iface, ip: n.address };
  };
  const flux = (from: number) => ({
    from: at(from, 1),
    to: at(34, 2),
    causes: [{ kind: 'arp-flux' as const, host: 34, iface: 'ib1', text: '34/ib1: … ARP flux' }],
  });

  it('one source alone saying a peer answers with the wrong MAC is charged to that source, not the peer', () => {
    expect(corroborate([flux(16)])[0]!.causes).toEqual([
      { kind: 'arp-flux', host: 16, iface: flux(16).from.iface, text: '34/ib1: … ARP flux' },
    ]);
  });

  it('two sources saying it charge the peer', () => {
    expect(corroborate([flux(16), flux(40)]).map((c) => c.causes![0]!.host)).toEqual([34, 34]);
  });

  it("the hosts' own state (a port down, no routing) is charged as found, whoever reported", () => {
    const routing = { ...flux(16), causes: [{ kind: 'routing-missing' as const, host: 34, iface: 'ib1', text: 'x' }] };
    expect(corroborate([routing])[0]!.causes![0]!.host).toBe(34);
  });
});
