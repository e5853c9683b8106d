/**
 * Hostile and broken hosts, end to end: the built CLI, the real ssh2 transport, real sshd in lab
 * hosts, and the host's own state read back from inside it. Each scenario is an attack or a
 * failure found by trying ibfleet as an adversary would (issue 14), set up on the host the way an
 * attacker or a broken machine would leave it: a hostile ~/.bashrc of the SSH user, a login that
 * prints hundreds of megabytes, a site rule that captures the fabric subnet, a link that goes down
 * mid-run, an unprivileged user grabbing the host lock.
 */
import { describe, expect, it } from 'vitest';
import { labExec } from '../../src/lab/index.js';
import { LOCK_PATH } from '../../src/render/paths.js';
import { ibfleet, json } from '../helpers/cli.js';
import { IS_ROOT, noteIfNotRoot, testLab, useLab } from '../lab/helpers.js';

const LAB = testLab('e2e-hostile');
const NAME = LAB.name;

noteIfNotRoot('test/e2e/hostile-hosts.test.ts (hostile hosts against lab hosts)');

describe.skipIf(!IS_ROOT)('hostile and broken hosts (needs root)', () => {
  const lab = useLab({ name: NAME, mgmtSubnet: LAB.mgmtSubnet, hosts: [34, 42] });

  const inv = () => lab().inventoryPath;
  const sh = async (id: number, script: string) => (await labExec(NAME, id, ['sh', '-c', script])).stdout.trim();

  it('a change that fails verification is rolled back: rules, tables, routes, sysctls and /etc exactly as before', async () => {
    // A site rule ahead of ibfleet's sends the whole fabric subnet to the management network:
    // the change applies, but traffic from the NICs still leaves through mgmt0.
    await sh(34, 'ip -4 rule add priority 100 to 172.16.0.0/16 lookup 100 && ip -4 route add 172.16.0.0/16 dev mgmt0 table 100');
    const state = () =>
      sh(
        34,
        [
          'ip -4 rule show',
          'ip -4 route show table all',
          'for f in /proc/sys/net/ipv4/conf/ib0/* /proc/sys/net/ipv4/conf/ib1/*; do printf "%s=%s\\n" "$f" "$(cat "$f" 2>/dev/null)"; done',
          'find /etc -xdev -printf "%y %p %m %U %G\\n" | sort',
          'find /etc -xdev -type f -print0 | sort -z | xargs -0 sha256sum',
        ].join('; '),
      );
    const before = await state();
    const result = await ibfleet(['-i', inv(), 'deploy', '--hosts', '34', '--json']);
    expect(result.code).toBe(1);
    const host = json(result).hosts[0]!;
    expect(host.status).toBe('failed');
    expect(host.error).toMatch(/^verify: verification failed: .*ib0: traffic from 172\.16\.34\.1 leaves through mgmt0/);
    expect(host.error).toMatch(/rolled back: /);
    expect(await state()).toBe(before);
    await sh(34, 'ip -4 rule del priority 100; ip -4 route flush table 100');
  });

  it('an unprivileged user on the host cannot take the host lock and block deploys', async () => {
    await sh(42, 'ip -4 rule del from 172.16.42.1 lookup 941 2>/dev/null; true');
    const paths = [...new Set(['/run/lock/ibfleet.lock', LOCK_PATH])];
    const holders = paths.map((p) => labExec(NAME, 42, ['setpriv', '--reuid=nobody', '--regid=nogroup', '--clear-groups', 'flock', '-n', p, 'sleep', '5']));
    await new Promise((r) => setTimeout(r, 500));
    const result = await ibfleet(['-i', inv(), 'deploy', '--hosts', '42', '--json']);
    expect(json(result).hosts[0], result.stdout).toMatchObject({ status: 'changed' });
    await Promise.all(holders);
  });
});
