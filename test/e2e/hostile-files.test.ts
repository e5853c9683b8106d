/**
 * Hostile hosts, round three (issue 22, items 7c and 7d), end to end: the built CLI, the real ssh2
 * transport, real sshd and netplan hosts in the lab, the host's own files read back from inside it.
 *  - One of ibfleet's paths on a host is a symbolic link to a secret file: what deploy keeps under
 *    /etc/ibfleet/previous is the link, never a copy of the secret, and when the change fails
 *    verification the restore puts the link back — not a world-readable, executable copy of the
 *    secret where the hook goes.
 *  - A host whose login prints 1 MB on one line to stderr and fails: the terminal gets a few KiB
 *    of it, saying where it was cut; --json is cut too and says so; the run log has all of it.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { labExec } from '../../src/lab/index.js';
import { PREVIOUS_DIR } from '../../src/script/paths.js';
import { SYSCTL_PATH } from '../../src/steps/fabric-sysctl/sysctl-file.js';
import { HOOK_PATHS } from '../../src/steps/persist/paths.js';
import { ibfleet, json } from '../helpers/cli.js';
import { IS_ROOT, noteIfNotRoot, testLab, useLab } from '../lab/helpers.js';

const LAB = testLab('e2e-hostile-files');
const NAME = LAB.name;
const HOOK = HOOK_PATHS.netplan;
const SECRET_PATH = '/etc/ibfleet-e2e-shadow';
const SECRET = 'root:$6$not-a-real-hash:19000:0:99999:7:::';

noteIfNotRoot('test/e2e/hostile-files.test.ts (hostile hosts against lab hosts)');

describe.skipIf(!IS_ROOT)('hostile hosts, round three (needs root)', () => {
  const lab = useLab({ name: NAME, mgmtSubnet: LAB.mgmtSubnet, hosts: [41, 42, 43] });
  const work = mkdtempSync(join(tmpdir(), 'ibfleet-hostile-files-'));
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  const inv = () => lab().inventoryPath;
  const sh = async (id: number, script: string) => (await labExec(NAME, id, ['sh', '-c', script])).stdout.trim();

  /** The secret, 0600, and ibfleet's hook path a symbolic link to it (as a careless admin or a hostile package might leave it). */
  const plantLink = (id: number) =>
    sh(
      id,
      `printf '%s\\n' '${SECRET}' >${SECRET_PATH} && chmod 0600 ${SECRET_PATH} && mkdir -p ${HOOK.replace(/\/[^/]+$/, '')} && rm -f ${HOOK} && ln -s ${SECRET_PATH} ${HOOK}`,
    );
  /** Every regular file on the host's /etc holding the secret's text, but the secret itself. */
  const copiesOfSecret = (id: number) =>
    sh(id, `grep -rlF -- '${SECRET}' /etc 2>/dev/null | grep -vx ${SECRET_PATH}; true`);
  const what = (id: number, path: string) =>
    sh(
      id,
      `if [ -L ${path} ]; then echo "link $(readlink ${path})"; elif [ -f ${path} ]; then stat -c 'file %a' ${path}; else echo none; fi`,
    );

  describe("one of ibfleet's paths is a symbolic link to a secret file", () => {
    it('deploy installs the hook in its place and keeps the link itself under previous, never a copy of the secret', async () => {
      await plantLink(43);
      const result = await ibfleet(['-i', inv(), 'deploy', '--hosts', '43', '--json']);
      expect(json(result).hosts[0], result.stdout).toMatchObject({ status: 'changed' });
      expect(await what(43, HOOK)).toBe('file 755');
      expect(await what(43, `${PREVIOUS_DIR}${HOOK}`)).toBe(`link ${SECRET_PATH}`);
      expect(await what(43, SECRET_PATH)).toBe('file 600');
      expect(await copiesOfSecret(43)).toBe('');
      expect(json(await ibfleet(['-i', inv(), 'status', '--hosts', '43', '--json'])).hosts[0]!.status).toBe('ok');
    });

    it('a change that fails verification is restored with the link back in place, the secret as it was', async () => {
      await plantLink(41);
      // A site rule ahead of ibfleet's sends the fabric subnet to the management network: the
      // change applies, verification fails, and the restore puts back what the probe saw.
      await sh(
        41,
        'ip -4 rule add priority 100 to 172.16.0.0/16 lookup 100 && ip -4 route add 172.16.0.0/16 dev mgmt0 table 100',
      );
      try {
        const result = await ibfleet(['-i', inv(), 'deploy', '--hosts', '41', '--json']);
        const host = json(result).hosts[0]!;
        expect(host.status).toBe('failed');
        expect(host.error).toMatch(/rolled back: /);
        expect(await what(41, HOOK)).toBe(`link ${SECRET_PATH}`);
        expect(await what(41, SECRET_PATH)).toBe('file 600');
        expect(await copiesOfSecret(41)).toBe('');
      } finally {
        await sh(41, 'ip -4 rule del priority 100; ip -4 route flush table 100');
      }
    });
  });

  describe("an admin's sysctl file that is a symbolic link to the site's own (issue 29)", () => {
    const SITE = '/etc/site-sysctl/fabric.conf';
    const plantSiteLink = (id: number) =>
      sh(
        id,
        `mkdir -p ${SITE.replace(/\/[^/]+$/, '')} && echo 'net.ipv4.conf.all.arp_ignore = 1' >${SITE} && rm -f ${SYSCTL_PATH} && ln -s ${SITE} ${SYSCTL_PATH}`,
      );

    it("deploy replaces it with ibfleet's file, and rollback puts the link back, same target, and leaves nothing of its own", async () => {
      await plantSiteLink(42);
      expect(json(await ibfleet(['-i', inv(), 'deploy', '--hosts', '42', '--json'])).hosts[0]!.status).toBe('changed');
      expect(await what(42, SYSCTL_PATH)).toBe('file 644');
      // A second change to the file: the version kept under previous/ is now ibfleet's own, not the link.
      await sh(42, `echo '# edited' >>${SYSCTL_PATH}`);
      expect(json(await ibfleet(['-i', inv(), 'deploy', '--hosts', '42', '--json'])).hosts[0]!.status).toBe('changed');
      const rollback = await ibfleet(['-i', inv(), 'rollback', '--hosts', '42', '--json']);
      expect(json(rollback).hosts[0]!.status, rollback.stdout).toBe('changed');
      expect(await what(42, SYSCTL_PATH)).toBe(`link ${SITE}`);
      expect(await what(42, SITE)).toBe('file 644');
      expect(await sh(42, 'ls -A /etc/ibfleet 2>&1; true')).toMatch(/No such file or directory/);
      // The link is the admin's: a second rollback finds nothing of ibfleet's and leaves it.
      const again = await ibfleet(['-i', inv(), 'rollback', '--hosts', '42', '--json']);
      expect(json(again).hosts[0]!.status, again.stdout).toBe('unchanged');
      expect(await what(42, SYSCTL_PATH)).toBe(`link ${SITE}`);
      await sh(42, `rm -f ${SYSCTL_PATH} ${SITE}`);
    });

    it("a first deploy that fails over the link puts it back and leaves nothing of ibfleet's; after the admin's file, a deploy and a rollback bring no old link back (issue 29)", async () => {
      await plantSiteLink(42);
      // The routing script cannot read ib1's sysctl: the change fails after its files are in place.
      const ACCEPT_LOCAL = '/proc/sys/net/ipv4/conf/ib1/accept_local';
      await sh(42, `mount --bind /dev/null ${ACCEPT_LOCAL}`);
      try {
        const failed = await ibfleet(['-i', inv(), 'deploy', '--hosts', '42', '--json']);
        expect(json(failed).hosts[0]!.error, failed.stdout).toMatch(
          /rolled back: the host is as it was before this deploy/,
        );
      } finally {
        await sh(42, `umount ${ACCEPT_LOCAL}`);
      }
      expect(await what(42, SYSCTL_PATH)).toBe(`link ${SITE}`);
      // Nothing of ibfleet's where there was nothing before: no copy of the link, no directory.
      expect(await sh(42, 'find /etc/ibfleet 2>&1; true')).toMatch(/No such file or directory/);
      // The admin replaces the link with a file of its own; a deploy and a rollback leave no link.
      await sh(42, `rm -f ${SYSCTL_PATH} && echo 'net.ipv4.conf.all.arp_ignore = 2' >${SYSCTL_PATH}`);
      expect(json(await ibfleet(['-i', inv(), 'deploy', '--hosts', '42', '--json'])).hosts[0]!.status).toBe('changed');
      const rollback = await ibfleet(['-i', inv(), 'rollback', '--hosts', '42', '--json']);
      expect(json(rollback).hosts[0]!.status, rollback.stdout).toBe('changed');
      // The file was there when ibfleet wrote its own over it: rollback takes it as ibfleet's (not the old link back).
      expect(await what(42, SYSCTL_PATH)).toBe('none');
      expect(await sh(42, 'ls -A /etc/ibfleet 2>&1; true')).toMatch(/No such file or directory/);
      await sh(42, `rm -f ${SYSCTL_PATH} ${SITE}`);
    });
  });

  describe('a host whose probe output is more than ibfleet reads (issue 29)', () => {
    it('a 3.8 MB os-release: the message names /etc/os-release and how much of it was read, not ~/.bashrc', async () => {
      await sh(42, 'cp -P /etc/os-release /root/os-release.e2e && cp -L /root/os-release.e2e /root/os-release.big');
      await sh(42, `yes '# ${'x'.repeat(60)}' | head -n 60000 >>/root/os-release.big`);
      await sh(42, 'rm -f /etc/os-release && cp /root/os-release.big /etc/os-release');
      try {
        const host = json(await ibfleet(['-i', inv(), 'status', '--hosts', '42', '--json'])).hosts[0]!;
        expect(host.status).toBe('failed');
        expect(host.error).toMatch(
          /^probe: the host printed more than 1 MiB on stdout during the probe, .* \(most of it was \/etc\/os-release, 1\.0 MiB of it before ibfleet stopped reading\)/,
        );
        expect(host.error).not.toContain('bashrc');
      } finally {
        await sh(
          42,
          'rm -f /etc/os-release && cp -P /root/os-release.e2e /etc/os-release && rm -f /root/os-release.e2e /root/os-release.big',
        );
      }
    });
  });

  describe('a host that prints 1 MB on one line to stderr, then fails', () => {
    const FLOOD = 1_000_000;
    const flood = () =>
      labExec(NAME, 42, ['sh', '-c', 'cat > /root/.bashrc'], {
        input: `head -c ${FLOOD} /dev/zero | tr '\\0' x >&2\nexit 1\n`,
      });
    const unflood = () => sh(42, 'rm -f /root/.bashrc');

    it('plain lines get a few KiB of it, saying where it was cut; the run log has all of it', async () => {
      await flood();
      try {
        const log = join(work, 'flood.log');
        const result = await ibfleet(['-i', inv(), 'deploy', '--hosts', '42', '--log', log]);
        expect(result.code).toBe(1);
        expect(result.stdout.length).toBeLessThan(12 * 1024);
        expect(result.stdout).toMatch(
          /^\[42 node42\] failed at probe \([^)]*\): probe failed \(exit 1\): x+ … \[cut after 2048 of 1000023 characters: the run log has all of it\]$/m,
        );
        expect(readFileSync(log, 'utf8')).toContain(`: ${'x'.repeat(FLOOD)}\n`);
      } finally {
        await unflood();
      }
    });

    it('--json is cut at 16 KiB, and errorDetail.cut says how long the message was', async () => {
      await flood();
      try {
        const result = await ibfleet(['-i', inv(), 'status', '--hosts', '42', '--json']);
        expect(result.stdout.length).toBeLessThan(64 * 1024);
        const host = json<{ hosts: { status: string; error: string; errorDetail: { cut?: { message?: number } } }[] }>(
          result,
        ).hosts[0]!;
        expect(host.status).toBe('failed');
        expect(host.error).toMatch(/^probe: probe failed \(exit 1\): x+ … \[cut after 16384 of 1000023 characters/);
        expect(host.errorDetail.cut?.message).toBeGreaterThan(FLOOD);
      } finally {
        await unflood();
      }
    });
  });
});
