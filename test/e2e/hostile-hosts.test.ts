/**
 * Hostile and broken hosts, end to end: the built CLI, the real ssh2 transport, real sshd in lab
 * hosts, and the host's own state read back from inside it. Each scenario is an attack or a
 * failure found by trying ibfleet as an adversary would (issue 14), set up on the host the way an
 * attacker or a broken machine would leave it: a hostile ~/.bashrc of the SSH user, a login that
 * prints hundreds of megabytes, a site rule that captures the fabric subnet, a link that goes down
 * mid-run, an unprivileged user grabbing the host lock.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { labExec } from '../../src/lab/index.js';
import { LOCK_PATH } from '../../src/script/paths.js';
import { CLI, ibfleet, json } from '../helpers/cli.js';
import { IS_ROOT, noteIfNotRoot, testLab, useLab } from '../lab/helpers.js';

const LAB = testLab('e2e-hostile');
const NAME = LAB.name;

noteIfNotRoot('test/e2e/hostile-hosts.test.ts (hostile hosts against lab hosts)');

describe.skipIf(!IS_ROOT)('hostile and broken hosts (needs root)', () => {
  const lab = useLab({ name: NAME, mgmtSubnet: LAB.mgmtSubnet, hosts: [34, 41, 42, 43] });
  const work = mkdtempSync(join(tmpdir(), 'ibfleet-hostile-e2e-'));
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  const inv = () => lab().inventoryPath;
  const sh = async (id: number, script: string) => (await labExec(NAME, id, ['sh', '-c', script])).stdout.trim();

  /** A copy of the lab inventory (ssh: paths made absolute) in which host `id` logs in as `user`. */
  const inventoryAs = (id: number, user: string) => {
    const text = readFileSync(inv(), 'utf8')
      .replace('knownHosts: known_hosts', `knownHosts: ${lab().knownHostsPath}`)
      .replace('identityFile: id_ed25519', `identityFile: ${lab().identityPath}`)
      .replace(new RegExp(`^( {2}${id}: \\{name: node${id}, address: ${LAB.addressPattern}\\.${id}),`, 'm'), `$1, user: ${user},`);
    const path = join(work, `inv-${id}-${user}.yaml`);
    writeFileSync(path, text);
    return path;
  };

  /** A sudo-capable login `user` with password `password`, bash as its shell, home in the host's /run. */
  const addSudoUser = (id: number, user: string, password: string) =>
    sh(
      id,
      [
        `useradd -M -d /run/${user} -s /bin/bash ${user}`,
        `mkdir -p /run/${user}/.ssh && cp /root/.ssh/authorized_keys /run/${user}/.ssh/ && chown -R ${user}: /run/${user} && chmod 700 /run/${user}/.ssh`,
        `echo '${user}:${password}' | chpasswd`,
        `echo '${user} ALL=(root) ALL' > /etc/sudoers.d/${user} && chmod 440 /etc/sudoers.d/${user}`,
      ].join(' && '),
    );

  /** What a login of `home`'s user runs first: bash reads ~/.bashrc for commands run by sshd. */
  const setBashrc = (id: number, home: string, text: string) => labExec(NAME, id, ['sh', '-c', `cat > ${home}/.bashrc && chmod 644 ${home}/.bashrc`], { input: text });

  describe('the -K sudo password', () => {
    const PASSWORD = 's3cret-pass';

    it("never reaches an SSH user's .bashrc that prints ibfleet's old prompt marker and reads a line", async () => {
      await addSudoUser(41, 'ops', PASSWORD);
      await setBashrc(41, '/run/ops', ['printf "[ibfleet-sudo-password-7f3a]" >&2', 'printf "[sudo] password for ops: " >&2', 'IFS= read -r line; printf "%s\\n" "$line" >> /run/ops/stolen', ''].join('\n'));
      const result = await ibfleet(['-i', inventoryAs(41, 'ops'), '--timeout', '5', 'deploy', '--hosts', '41', '-K', '--json'], { input: `${PASSWORD}\n` });
      expect(json(result).hosts[0]!.status).toBe('failed');
      expect(await sh(41, 'cat /run/ops/stolen 2>/dev/null || true')).not.toContain(PASSWORD);
    });

    it('never reaches a .bashrc that reads the command line sshd runs and prints the prompt it finds there', async () => {
      await sh(41, 'rm -f /run/ops/stolen');
      await setBashrc(
        41,
        '/run/ops',
        ['p=$(printf "%s" "$BASH_EXECUTION_STRING" | sed -n "s/.*-p \'\\([^\']*\\)\'.*/\\1/p")', '[ -n "$p" ] && printf "%s" "$p" >&2', 'IFS= read -r line; printf "%s\\n" "$line" >> /run/ops/stolen', ''].join('\n'),
      );
      const result = await ibfleet(['-i', inventoryAs(41, 'ops'), '--timeout', '5', 'deploy', '--hosts', '41', '-K', '--json'], { input: `${PASSWORD}\n` });
      expect(json(result).hosts[0]!.status).toBe('failed');
      expect(await sh(41, 'cat /run/ops/stolen 2>/dev/null || true')).not.toContain(PASSWORD);
    });

    it('still goes to sudo through a chatty .bashrc (stdout and stderr) that reads nothing', async () => {
      await sh(41, 'rm -f /run/ops/stolen; ip -4 rule del from 172.16.41.2 lookup 942 2>/dev/null; true');
      await setBashrc(41, '/run/ops', 'echo "Welcome to node41"; echo "[sudo] password for ops:" >&2\n');
      const result = await ibfleet(['-i', inventoryAs(41, 'ops'), 'deploy', '--hosts', '41', '-K', '--json'], { input: `${PASSWORD}\n` });
      expect(json(result).hosts[0], result.stderr).toMatchObject({ status: 'changed' });
      expect(result.stdout + result.stderr).not.toContain(PASSWORD);
    });
  });

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

  it('a login that prints 200 MB: the host fails with the reason, and the controller keeps only a bounded tail', async () => {
    await setBashrc(42, '/root', "head -c 200000000 /dev/zero | tr '\\0' x\n");
    try {
      const timed = await timedIbfleet(['-i', inv(), 'status', '--hosts', '42', '--json']);
      const host = json(timed.result).hosts[0]!;
      expect(host.status).toBe('failed');
      expect(host.error).toMatch(/^probe: the host printed more than 1 MiB on stdout during the probe, more than ibfleet reads from one command; it stopped reading there/);
      // Memory, not speed: without a cap the controller held the whole output (over 500 MB).
      if (timed.peakRssKb !== undefined) expect(timed.peakRssKb).toBeLessThan(200_000);
    } finally {
      await sh(42, 'rm -f /root/.bashrc');
    }
  });

  describe('a host lost after connecting does not hold the run past --timeout', () => {
    for (const how of ['its link goes down', "its sshd's session processes are stopped"] as const) {
      it(how, { timeout: 120_000 }, async () => {
        await setBashrc(43, '/root', 'sleep 2\n');
        let stopped: string[] = [];
        try {
          const { code, ms, stdout } = await runUntil(['-i', inv(), '--timeout', '3', 'deploy', '--dry-run', '--hosts', '43'], /^\[43 [^\]]*\] probe$/m, async () => {
            if (how === 'its link goes down') await sh(43, 'ip link set mgmt0 down');
            else stopped = (await sh(43, 'for p in $(pgrep -P "$(cat /run/sshd.pid)"); do echo "$p"; pgrep -P "$p"; done')).split('\n').filter(Boolean);
            if (stopped.length) await sh(43, `kill -STOP ${stopped.join(' ')}`);
          });
          expect(code).toBe(1);
          expect(stdout).toMatch(/\[43 [^\]]*\] failed at probe .*timed out after 3 s/);
          // Behaviour, not speed: the process ends once every host has an outcome. Before, ssh2's
          // keepalive (3 × 15 s) held it ~55 s past --timeout; 20 s of margin covers a busy machine.
          expect(ms).toBeLessThan(3_000 + 20_000);
        } finally {
          if (stopped.length) await sh(43, `kill -CONT ${stopped.join(' ')} 2>/dev/null; kill ${stopped.join(' ')} 2>/dev/null; true`);
          await sh(43, 'ip link set mgmt0 up; ip -4 route replace 198.19.255.254/32 dev mgmt0; rm -f /root/.bashrc');
        }
      });
    }
  });

  it('a session killed mid-change: the host finishes the change on its own, and the run looks again on a new connection and says so', async () => {
    // A slow step inside the change — chmod of the staged files, in this host's own mount namespace
    // only — keeps it running long enough to kill the connection under it (the host's sshd process
    // for it). Not flock: deploy takes the lock before it probes, so the change no longer runs it.
    await sh(34, "cp /usr/bin/chmod /run/real-chmod && printf '#!/bin/sh\\nsleep 2\\nexec /run/real-chmod \"$@\"\\n' >/run/slow-chmod && /run/real-chmod 755 /run/slow-chmod && mount --bind /run/slow-chmod /usr/bin/chmod");
    try {
      const run = await runUntil(['-i', inv(), '--timeout', '40', 'deploy', '--hosts', '34'], /^\[34 [^\]]*\] push$/m, async () => {
        await sh(34, 'for p in $(pgrep -P "$(cat /run/sshd.pid)"); do [ "$(cat /proc/$p/comm)" = sshd ] && kill -9 "$p"; done; true');
      });
      expect(run.code, run.stdout).toBe(0);
      expect(run.stdout).toMatch(/^\[34 [^\]]*\] changed/m);
      expect(run.stdout).toContain('    - the connection was lost during the change; the host finished the change on its own (checked on a new connection)');
    } finally {
      await sh(34, 'umount /usr/bin/chmod; rm -f /run/slow-chmod /run/real-chmod');
    }
    expect(json(await ibfleet(['-i', inv(), 'status', '--hosts', '34', '--json'])).hosts[0]!.status).toBe('ok');
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

  /** The CLI run under GNU time (installed by scripts/setup), for its peak RSS. */
  async function timedIbfleet(args: readonly string[]) {
    if (!existsSync('/usr/bin/time')) return { result: await ibfleet(args), peakRssKb: undefined };
    const out = join(work, 'time.txt');
    const result = await ibfleetVia(['/usr/bin/time', '-f', '%M', '-o', out, process.execPath, CLI, ...args]);
    return { result, peakRssKb: Number(readFileSync(out, 'utf8').trim().split('\n').pop()) };
  }
});

function ibfleetVia(argv: readonly string[]) {
  return new Promise<{ code: number; stdout: string; stderr: string; ms: number }>((resolve) => {
    const started = Date.now();
    const child = spawn(argv[0]!, argv.slice(1), { env: { ...process.env, NO_COLOR: '1' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => resolve({ code: code ?? 1, stdout, stderr, ms: Date.now() - started }));
  });
}

/** Runs the CLI; when its output first matches `when`, runs `act`; resolves when the process exits. */
function runUntil(args: readonly string[], when: RegExp, act: () => Promise<void>) {
  return new Promise<{ code: number; stdout: string; ms: number }>((resolve, reject) => {
    const started = Date.now();
    const child = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, NO_COLOR: '1' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let acted = false;
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      if (!acted && when.test(stdout)) {
        acted = true;
        act().catch(reject);
      }
    });
    child.on('close', (code) => resolve({ code: code ?? 1, stdout, ms: Date.now() - started }));
  });
}
