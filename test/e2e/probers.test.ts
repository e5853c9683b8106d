/**
 * verify's probers end to end: four lab hosts, two with python3 (NetworkManager, netplan), one
 * without python3 but with fping (ifupdown), one with neither (NetworkManager) — each runs the best
 * prober it has, says which in --json and the run log, and gives the same cells: the seeds' failure
 * before deploy, the full matrix after. A host whose ARP settings are broken by hand (arp_ignore=0,
 * arp_announce=0, the peers' caches flushed) has its addresses answered by the wrong NIC: the
 * echoes still come back, and verify fails those cells naming the ARP flux and both NICs.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { labArpFlux, labExec } from '../../src/lab/index.js';
import type { CellCause } from '../../src/vocabulary.js';
import { ibfleet, json, type JsonRun } from '../helpers/cli.js';
import { IS_ROOT, noteIfNotRoot, testLab, useLab } from '../lab/helpers.js';

const LAB = testLab('e2e-probers');
const HOSTS = [16, 34, 40, 41];
const PROBERS = { 16: 'python3', 34: 'python3', 40: 'fping', 41: 'ping' };

type Cell = NonNullable<JsonRun['matrix']>[number] & { state: string; causes?: CellCause[] };
type VerifyRun = Omit<JsonRun, 'matrix' | 'hosts'> & {
  matrix: Cell[];
  hosts: (JsonRun['hosts'][number] & { prober?: string })[];
};

noteIfNotRoot('test/e2e/probers.test.ts (python3, fping and ping probers)');

describe.skipIf(!IS_ROOT)('verify probers: python3, fping, ping on one lab (needs root)', () => {
  const lab = useLab({
    name: LAB.name,
    mgmtSubnet: LAB.mgmtSubnet,
    hosts: HOSTS,
    managers: { 16: 'networkmanager', 34: 'netplan', 40: 'ifupdown', 41: 'networkmanager' },
    noPython3: [40, 41],
    fping: [40],
  });
  const run = (...args: string[]) => ibfleet(['-i', lab().inventoryPath, ...args]);
  const verify = async () => {
    const result = await run('verify', '--no-rping', '--json');
    return { code: result.code, doc: json<VerifyRun>(result) };
  };
  const withFlux = async <T>(check: () => Promise<T>, met: (result: T) => boolean): Promise<T> => {
    let result!: T;
    for (let attempt = 0; attempt < 6; attempt++) {
      await labArpFlux(lab().name, 34);
      result = await check();
      if (met(result)) break;
    }
    return result;
  };
  const which = (doc: VerifyRun) => Object.fromEntries(doc.hosts.map((h) => [h.id, h.prober]));
  const passing = (doc: VerifyRun) =>
    doc.matrix.filter((c) => c.ok).map((c) => `${c.from.host}.${c.from.nic}>${c.to.host}.${c.to.nic}`);

  it('the lab gives each host what it was asked: python3 hidden on 40 and 41, fping on 40 alone', async () => {
    const has = async (id: number, tool: string) =>
      (await labExec(lab().name, id, ['sh', '-c', `PATH=/usr/sbin:/usr/bin:/sbin:/bin command -v ${tool}`])).code === 0;
    expect(await Promise.all(HOSTS.map((id) => has(id, 'python3')))).toEqual([true, true, false, false]);
    expect(await Promise.all(HOSTS.map((id) => has(id, 'fping')))).toEqual([false, false, true, false]);
  });

  it("before deploy, every prober shows the seeds' failure: only NIC 1 ↔ NIC 1 passes, whichever host sends", async () => {
    const { code, doc } = await verify();
    expect(code).toBe(1);
    expect(which(doc)).toEqual(PROBERS);
    expect(doc.matrix).toHaveLength(4 * 3 * 4);
    for (const c of doc.matrix)
      expect(c.ok, `${c.from.host}.${c.from.nic} → ${c.to.host}.${c.to.nic}: ${c.detail}`).toBe(
        c.from.nic === 1 && c.to.nic === 1,
      );
  });

  it('after deploy the full matrix passes from every prober, and the run log names each host’s', async () => {
    const deployed = await run('deploy', '--hosts', 'all');
    expect(deployed.code, deployed.stdout + deployed.stderr).toBe(0);
    const { code, doc } = await verify();
    expect(
      code,
      doc.matrix
        .filter((c) => !c.ok)
        .map((c) => c.detail)
        .join('\n'),
    ).toBe(0);
    expect(which(doc)).toEqual(PROBERS);
    expect(passing(doc)).toHaveLength(48);
    const plain = await run('verify', '--no-rping');
    const log = /run log: (\S+)/.exec(plain.stdout + plain.stderr)![1]!;
    const text = readFileSync(log, 'utf8');
    for (const [id, prober] of Object.entries(PROBERS))
      expect(text).toMatch(new RegExp(`^== host ${id} [^\\n]*\\n[^\\n]*\\nprober: ${prober}$`, 'm'));
  });

  it('ARP flux on 34 (arp_ignore=0, arp_announce=0 by hand): the echoes come back, and verify fails those cells naming both NICs', async () => {
    // The repair timer would put the settings back on its 30 s schedule: stopped, so what verify sees is the broken host.
    await labExec(lab().name, 34, ['systemctl', 'stop', 'ibfleet-routes-repair.timer']);
    // Which NIC answers first is the fabric's race, and the broken host's own requests heal its peers'
    // entries within seconds: flux is made again until a run meets it (almost always the first).
    // A host's word alone is charged to itself (corroborate): the peer is blamed once two hosts saw the flux.
    const { code, doc } = await withFlux(verify, (r) =>
      r.doc.matrix.some((c) => c.causes?.some((cause) => cause.kind === 'arp-flux' && cause.host === 34)),
    );
    expect(code).toBe(1);
    const failed = doc.matrix.filter((c) => !c.ok);
    expect(failed.length).toBeGreaterThan(0);
    for (const c of failed) {
      expect(c.to.host, c.detail).toBe(34);
      expect(c.detail).toMatch(/^3\/3 replies, avg [\d.]+ ms, through the wrong port — likely: 34\/ib[01]: /);
      expect(c.causes).toEqual([
        expect.objectContaining({
          kind: 'arp-flux',
          host: 34,
          iface: c.to.iface,
          text: expect.stringMatching(
            new RegExp(
              `the MAC of 34/${c.to.iface === 'ib0' ? 'ib1' : 'ib0'}: ARP flux .*ibfleet deploy -i \\S+ --hosts 34`,
            ),
          ),
        }),
      ]);
    }
    expect(doc.hosts.filter((h) => h.status !== 'ok').map((h) => h.id)).toEqual([34]);
    // Shown folded by cause.
    const plain = await withFlux(
      () => run('verify', '--no-rping', '--no-log'),
      (r) => /^\[34 [^\n]*failed at check/m.test(r.stdout),
    );
    expect(plain.code, plain.stdout + plain.stderr).toBe(1);
    expect(plain.stdout).toMatch(
      /^ {2}- \d+ cells?: 34\/ib[01]: 172\.16\.34\.[12] resolves to [0-9a-f:]+, the MAC of 34\/ib[01]: ARP flux/m,
    );
  });

  it('deploy puts the ARP settings back, and the matrix passes again', async () => {
    expect((await run('deploy', '--hosts', '34')).code).toBe(0);
    for (const id of HOSTS) await labExec(lab().name, id, ['ip', '-4', 'neigh', 'flush', 'all']);
    const { code, doc } = await verify();
    expect(
      code,
      doc.matrix
        .filter((c) => !c.ok)
        .map((c) => c.detail)
        .join('\n'),
    ).toBe(0);
  });
});

describe.skipIf(!IS_ROOT)('the full matrix by default: 18 GPU nodes of 8 NICs (needs root)', () => {
  // The same lab name and subnet as above: that lab is down before this one comes up.
  const HOSTS18 = Array.from({ length: 18 }, (_, i) => i + 1);
  const lab = useLab({
    name: LAB.name,
    mgmtSubnet: LAB.mgmtSubnet,
    hosts: HOSTS18,
    nics: { all: 8 },
    networkDaemons: false,
  });
  const run = (...args: string[]) => ibfleet(['-i', lab().inventoryPath, ...args]);

  it('verify --hosts all checks all 19 584 cells (1 088 a host; the rails before), every prober at once, and passes', async () => {
    const deployed = await run('deploy', '--hosts', 'all');
    expect(deployed.code, deployed.stdout + deployed.stderr).toBe(0);
    const result = await run('verify', '--hosts', 'all', '--no-rping', '--json');
    const doc = json<VerifyRun & { matrixMode: string }>(result);
    expect(doc.matrixMode).toBe('full');
    expect(doc.matrix).toHaveLength(18 * 17 * 64);
    expect(
      result.code,
      doc.matrix
        .filter((c) => !c.ok)
        .slice(0, 5)
        .map((c) => c.detail)
        .join('\n'),
    ).toBe(0);
    expect(new Set(doc.hosts.map((h) => h.prober))).toEqual(new Set(['python3']));
  });
});
