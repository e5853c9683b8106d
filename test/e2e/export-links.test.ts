/**
 * `ibfleet export ansible` on machines whose NICs the links step configured (lab up --fresh: the
 * fabric NICs present, nothing configuring them), one per manager: 16 NetworkManager (a profile),
 * 34 netplan (ibfleet's 50-ibfleet-links.yaml), 40 ifupdown (its interfaces.d stanza). Deploy
 * provisions the NICs; the exported role, run with the real ansible-playbook, leaves what links
 * wrote as deploy wrote it, so the NICs come back at the next boot and the full matrix passes. A
 * playbook whose links asks what only deploy's probe can decide is refused before anything is
 * written.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { labExec, labReboot } from '../../src/lab/index.js';
import { ansiblePlaybook } from '../helpers/ansible.js';
import { ibfleet, json, statuses, type JsonRun } from '../helpers/cli.js';
import { IS_ROOT, noteIfNotRoot, testLab, useLab } from '../lab/helpers.js';

const LAB = testLab('e2e-export-links');
const HOSTS = [16, 34, 40];
const NAMES = ['cpuserver16', 'memserver34', 'node40'];
/** What links writes on each host: the record everywhere, ibfleet's netplan file on 34, its stanza file on 40. */
const LINKS_FILES = '/etc/ibfleet/links /etc/netplan/50-ibfleet-links.yaml /etc/network/interfaces.d/ibfleet-links';
/** How long the managers may take to bring the NICs up after a boot, on a loaded machine. */
const SETTLE_MS = 30_000;
/** ansible-playbook runs take ~10 s here, and minutes on a machine others load heavily. */
const ANSIBLE_TIMEOUT_MS = 300_000;

noteIfNotRoot('test/e2e/export-links.test.ts (the exported Ansible role on hosts links provisioned)');

describe.skipIf(!IS_ROOT)('export ansible on hosts whose NICs links configured (needs root)', () => {
  const lab = useLab({
    name: LAB.name,
    mgmtSubnet: LAB.mgmtSubnet,
    hosts: HOSTS,
    managers: { 16: 'networkmanager', 34: 'netplan', 40: 'ifupdown' },
    fresh: HOSTS,
  });
  const work = mkdtempSync(join(tmpdir(), 'ibfleet-e2e-export-links-'));
  afterAll(() => rmSync(work, { recursive: true, force: true }));
  const project = join(work, 'project');
  const run = (...args: string[]) => ibfleet(['-i', lab().inventoryPath, '--no-log', ...args]);
  const sh = async (id: number, script: string) => (await labExec(LAB.name, id, ['sh', '-c', script])).stdout;
  /** links' files on a host, with their content: what a boot brings the NICs up from. */
  const linksFiles = (id: number) =>
    sh(id, `for f in ${LINKS_FILES}; do [ ! -e "$f" ] || { echo "== $f"; cat "$f"; }; done`);
  const untilOk = async () => {
    const deadline = Date.now() + SETTLE_MS;
    for (;;) {
      const doc = json(await run('status', '--json'));
      if (Object.values(statuses(doc)).every((s) => s === 'ok')) return;
      if (Date.now() > deadline)
        expect(
          doc.hosts.flatMap((h) => h.reasons.map((r) => `${h.id}: ${r}`)),
          'status',
        ).toEqual([]);
      await new Promise((r) => setTimeout(r, 500));
    }
  };

  it(
    'deploy provisions the NICs; the exported role runs (failed=0) and leaves every file links wrote as deploy wrote it',
    { timeout: ANSIBLE_TIMEOUT_MS },
    async () => {
      const deployed = await run('deploy', '--hosts', 'all', '--json');
      expect(
        json(deployed).hosts.map((h) => [h.id, h.status, h.error]),
        deployed.stderr,
      ).toEqual(HOSTS.map((id) => [id, 'changed', null]));
      const before = await Promise.all(HOSTS.map(linksFiles));
      expect(before.map((text) => text.match(/^== \S+$/gm))).toEqual([
        ['== /etc/ibfleet/links'],
        ['== /etc/ibfleet/links', '== /etc/netplan/50-ibfleet-links.yaml'],
        ['== /etc/ibfleet/links', '== /etc/network/interfaces.d/ibfleet-links'],
      ]);

      const exported = await run('export', 'ansible', '--hosts', 'all', '--out', project);
      expect(exported.code, exported.stderr).toBe(0);
      const played = await ansiblePlaybook(project, { cwd: work, controlDir: work });
      expect(played.code, played.out).toBe(0);
      for (const name of NAMES) expect(played.recap[name], played.out).toMatchObject({ failed: 0, unreachable: 0 });
      expect(await Promise.all(HOSTS.map(linksFiles))).toEqual(before);
      await untilOk();
    },
  );

  it(
    'a boot after the Ansible run: each manager brings the NICs up from what links wrote; status ok, the full matrix passes',
    { timeout: 120_000 },
    async () => {
      const reboots = await labReboot(LAB.name, HOSTS);
      expect(reboots.map((r) => [r.id, r.ok])).toEqual(HOSTS.map((id) => [id, true]));
      await untilOk();
      const verified = await run('verify', '--hosts', 'all', '--json');
      const doc = json<JsonRun>(verified);
      expect(
        doc.matrix!.filter((c) => !c.ok).map((c) => `${c.from.ip} → ${c.to.ip} (${c.method}): ${c.detail}`),
      ).toEqual([]);
      // Six NICs, each to the four of the other hosts, by ping and by the rping stand-in.
      expect(doc.matrix!.length).toBe(6 * 4 * 2);
      expect(verified.code).toBe(0);
    },
  );

  it('a playbook whose links asks for an MTU is refused (exit 2), naming the step, the host and why; nothing is written', async () => {
    const shipped = readFileSync(new URL('../../playbooks/dual-ib-routing.yaml', import.meta.url), 'utf8');
    const playbook = join(work, 'mtu.yaml');
    writeFileSync(playbook, shipped.replace(/^ {2}- links$/m, '  - links: { mtu: 2044 }'));
    const out = join(work, 'refused');
    const result = await run('export', 'ansible', '--hosts', 'all', '--out', out, '--playbook', playbook);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(
      /^ibfleet: export ansible: playbook dual-ib-routing: step links asks cpuserver16 for mtu 2044 \(.*\): which NICs get it, .* deploy decides from each host's probe, which an exported project does not have; deploy it with ibfleet deploy/m,
    );
    expect(existsSync(out)).toBe(false);
  });
});
