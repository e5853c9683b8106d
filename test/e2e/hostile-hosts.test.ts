/**
 * Hostile and broken hosts, end to end: the built CLI, the real ssh2 transport, real sshd in lab
 * hosts, and the host's own state read back from inside it. Each scenario is an attack or a
 * failure found by trying ibfleet as an adversary would (issue 14), set up on the host the way an
 * attacker or a broken machine would leave it: a hostile ~/.bashrc of the SSH user, a login that
 * prints hundreds of megabytes, a site rule that captures the fabric subnet, a link that goes down
 * mid-run, an unprivileged user grabbing the host lock; and (issue 29) a directory where ibfleet writes a
 * file, a change that outlives --timeout.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { OS_NAME_MAX } from '../../src/host-text.js';
import { labExec } from '../../src/lab/index.js';
import { LOCK_PATH } from '../../src/script/paths.js';
import { CLI, ibfleet, json } from '../helpers/cli.js';
import { IS_ROOT, noteIfNotRoot, testLab, useLab } from '../lab/helpers.js';

const LAB = testLab('e2e-hostile');
/** What no display, log or written file may carry raw: C0 but tab and LF, DEL, C1, line separators, bidi controls. */
const UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;
const NAME = LAB.name;

noteIfNotRoot('test/e2e/hostile-hosts.test.ts (hostile hosts against lab hosts)');

describe.skipIf(!IS_ROOT)('hostile and broken hosts (needs root)', () => {
  // 40 and 44: fresh ifupdown hosts, for the links step's stanza and ifup (issue 29).
  const lab = useLab({
    name: NAME,
    mgmtSubnet: LAB.mgmtSubnet,
    hosts: [34, 40, 41, 42, 43, 44],
    managers: { 40: 'ifupdown', 44: 'ifupdown' },
    fresh: [40, 44],
  });
  const work = mkdtempSync(join(tmpdir(), 'ibfleet-hostile-e2e-'));
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  const inv = () => lab().inventoryPath;
  const sh = async (id: number, script: string) => (await labExec(NAME, id, ['sh', '-c', script])).stdout.trim();

  /** A copy of the lab inventory (ssh: paths made absolute) in which host `id` logs in as `user`. */
  const inventoryAs = (id: number, user: string) => {
    const text = readFileSync(inv(), 'utf8')
      .replace('knownHosts: known_hosts', `knownHosts: ${lab().knownHostsPath}`)
      .replace('identityFile: id_ed25519', `identityFile: ${lab().identityPath}`)
      .replace(
        new RegExp(`^( {2}${id}: \\{name: node${id}, address: ${LAB.addressPattern}\\.${id}),`, 'm'),
        `$1, user: ${user},`,
      );
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
  const setBashrc = (id: number, home: string, text: string) =>
    labExec(NAME, id, ['sh', '-c', `cat > ${home}/.bashrc && chmod 644 ${home}/.bashrc`], { input: text });

  describe('the -K sudo password', () => {
    const PASSWORD = 's3cret-pass';

    it("never reaches an SSH user's .bashrc that prints ibfleet's old prompt marker and reads a line", async () => {
      await addSudoUser(41, 'ops', PASSWORD);
      await setBashrc(
        41,
        '/run/ops',
        [
          'printf "[ibfleet-sudo-password-7f3a]" >&2',
          'printf "[sudo] password for ops: " >&2',
          'IFS= read -r line; printf "%s\\n" "$line" >> /run/ops/stolen',
          '',
        ].join('\n'),
      );
      const result = await ibfleet(
        ['-i', inventoryAs(41, 'ops'), '--timeout', '5', 'deploy', '--hosts', '41', '-K', '--json'],
        { input: `${PASSWORD}\n` },
      );
      expect(json(result).hosts[0]!.status).toBe('failed');
      expect(await sh(41, 'cat /run/ops/stolen 2>/dev/null || true')).not.toContain(PASSWORD);
    });

    it('never reaches a .bashrc that reads the command line sshd runs and prints the prompt it finds there', async () => {
      await sh(41, 'rm -f /run/ops/stolen');
      await setBashrc(
        41,
        '/run/ops',
        [
          'p=$(printf "%s" "$BASH_EXECUTION_STRING" | sed -n "s/.*-p \'\\([^\']*\\)\'.*/\\1/p")',
          '[ -n "$p" ] && printf "%s" "$p" >&2',
          'IFS= read -r line; printf "%s\\n" "$line" >> /run/ops/stolen',
          '',
        ].join('\n'),
      );
      const result = await ibfleet(
        ['-i', inventoryAs(41, 'ops'), '--timeout', '5', 'deploy', '--hosts', '41', '-K', '--json'],
        { input: `${PASSWORD}\n` },
      );
      expect(json(result).hosts[0]!.status).toBe('failed');
      expect(await sh(41, 'cat /run/ops/stolen 2>/dev/null || true')).not.toContain(PASSWORD);
    });

    /**
     * A login that imitates sudo (reads the nonce, prints the prompt, reads the answer) and prints
     * the answer back, cut in two writes: on stderr before anything else (`before`), or after a
     * look-alike ready line on stdout and stderr, where it becomes what the probe printed (`after`).
     */
    const echoingBashrc = (after: boolean) =>
      [
        'IFS= read -r n; printf "[ibfleet sudo %s] " "$n" >&2; IFS= read -r pw',
        ...(after
          ? ['echo "ibfleet-sudo-ready-$n"', 'printf "out %s" "${pw:0:4}"; sleep 0.3; printf "%s\\n" "${pw:4}"']
          : []),
        'printf "pw is %s" "${pw:0:4}" >&2; sleep 0.3; printf "%s here\\n" "${pw:4}" >&2',
        'exit 3',
        '',
      ].join('\n');

    for (const where of ['before', 'after'] as const) {
      it(`a login that echoes it back in two writes (${where} a look-alike ready line): it appears nowhere — plain lines, --json, stderr, the run log`, async () => {
        await addSudoUser(41, 'ops', PASSWORD); // does nothing when an earlier scenario made it
        await setBashrc(41, '/run/ops', echoingBashrc(where === 'after'));
        for (const mode of ['plain', 'json'] as const) {
          const log = join(work, `echo-${where}-${mode}.log`);
          const result = await ibfleet(
            [
              '-i',
              inventoryAs(41, 'ops'),
              '--timeout',
              '10',
              '--log',
              log,
              'deploy',
              '--hosts',
              '41',
              '-K',
              ...(mode === 'json' ? ['--json'] : []),
            ],
            { input: `${PASSWORD}\n` },
          );
          const everything = `${result.stdout}\n${result.stderr}\n${readFileSync(log, 'utf8')}`;
          expect(result.code, everything).toBe(1);
          expect(everything).not.toContain(PASSWORD);
          // Not vacuous: the host did print it, and every display shows where it was taken out.
          expect(everything).toContain('pw is [secret removed] here');
          const message =
            where === 'before'
              ? /sudo on ops@\S+ did not start a shell: pw is \[secret removed\] here/
              : /probe failed \(exit 3\): pw is \[secret removed\] here/;
          if (mode === 'json') expect(json(result).hosts[0]!.error).toMatch(message);
          else
            expect(result.stdout).toMatch(
              new RegExp(`^\\[41 node41\\] failed at (connect|probe) \\([^)]*\\): ${message.source}`, 'm'),
            );
          if (where === 'after') expect(everything).toContain('out [secret removed]');
        }
      });
    }

    it('a .bashrc that holds the password itself, prints it and exits before any shell starts: it appears nowhere (issue 29)', async () => {
      const SECRET = 'Bar-S3cret-42';
      await addSudoUser(41, 'ops', PASSWORD); // does nothing when an earlier scenario made it
      await setBashrc(41, '/run/ops', [`PW='${SECRET}'`, 'echo "pw is $PW here" >&2', 'exit 4', ''].join('\n'));
      for (const mode of ['plain', 'json'] as const) {
        const log = join(work, `bashrc-pw-${mode}.log`);
        const result = await ibfleet(
          [
            '-i',
            inventoryAs(41, 'ops'),
            '--timeout',
            '10',
            '--log',
            log,
            'status',
            '--hosts',
            '41',
            '-K',
            ...(mode === 'json' ? ['--json'] : []),
          ],
          { input: `${SECRET}\n` },
        );
        const everything = `${result.stdout}\n${result.stderr}\n${readFileSync(log, 'utf8')}`;
        expect(result.code, everything).toBe(1);
        expect(everything).not.toContain(SECRET);
        // Not vacuous: the host did print it, and the message shows where it was taken out.
        const message = /sudo on ops@\S+ did not start a shell: pw is \[secret removed\] here/;
        if (mode === 'json') expect(json(result).hosts[0]!.error).toMatch(message);
        else expect(result.stdout).toMatch(message);
      }
    });

    it('still goes to sudo through a chatty .bashrc (stdout and stderr) that reads nothing', async () => {
      await sh(41, 'rm -f /run/ops/stolen; ip -4 rule del from 172.16.41.2 lookup 942 2>/dev/null; true');
      await setBashrc(41, '/run/ops', 'echo "Welcome to node41"; echo "[sudo] password for ops:" >&2\n');
      const result = await ibfleet(['-i', inventoryAs(41, 'ops'), 'deploy', '--hosts', '41', '-K', '--json'], {
        input: `${PASSWORD}\n`,
      });
      expect(json(result).hosts[0], result.stderr).toMatchObject({ status: 'changed' });
      expect(result.stdout + result.stderr).not.toContain(PASSWORD);
    });
  });

  it('a change that fails verification is rolled back: rules, tables, routes, sysctls and /etc exactly as before', async () => {
    // A site rule ahead of ibfleet's sends the whole fabric subnet to the management network:
    // the change applies, but traffic from the NICs still leaves through mgmt0.
    await sh(
      34,
      'ip -4 rule add priority 100 to 172.16.0.0/16 lookup 100 && ip -4 route add 172.16.0.0/16 dev mgmt0 table 100',
    );
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
      expect(host.error).toMatch(
        /^probe: the host printed more than 1 MiB on stdout during the probe, more than ibfleet reads from one command; it stopped reading there/,
      );
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
          const { code, ms, stdout } = await runUntil(
            ['-i', inv(), '--timeout', '3', 'deploy', '--dry-run', '--hosts', '43'],
            /^\[43 [^\]]*\] probe$/m,
            async () => {
              if (how === 'its link goes down') await sh(43, 'ip link set mgmt0 down');
              else
                stopped = (
                  await sh(43, 'for p in $(pgrep -P "$(cat /run/sshd.pid)"); do echo "$p"; pgrep -P "$p"; done')
                )
                  .split('\n')
                  .filter(Boolean);
              if (stopped.length) await sh(43, `kill -STOP ${stopped.join(' ')}`);
            },
          );
          expect(code).toBe(1);
          expect(stdout).toMatch(/\[43 [^\]]*\] failed at probe .*timed out after 3 s/);
          // Behaviour, not speed: the process ends once every host has an outcome. Before, ssh2's
          // keepalive (3 × 15 s) held it ~55 s past --timeout; 20 s of margin covers a busy machine.
          expect(ms).toBeLessThan(3_000 + 20_000);
        } finally {
          if (stopped.length)
            await sh(43, `kill -CONT ${stopped.join(' ')} 2>/dev/null; kill ${stopped.join(' ')} 2>/dev/null; true`);
          await sh(43, 'ip link set mgmt0 up; ip -4 route replace 198.19.255.254/32 dev mgmt0; rm -f /root/.bashrc');
        }
      });
    }
  });

  it('a session killed mid-change: the host finishes the change on its own, and the run looks again on a new connection and says so', async () => {
    // A slow step inside the change — chmod of the staged files, in this host's own mount namespace
    // only — keeps it running long enough to kill the connection under it (the host's sshd process
    // for it). Not flock: deploy takes the lock before it probes, so the change no longer runs it.
    await sh(
      34,
      'cp /usr/bin/chmod /run/real-chmod && printf \'#!/bin/sh\\nsleep 2\\nexec /run/real-chmod "$@"\\n\' >/run/slow-chmod && /run/real-chmod 755 /run/slow-chmod && mount --bind /run/slow-chmod /usr/bin/chmod',
    );
    try {
      const run = await runUntil(
        ['-i', inv(), '--timeout', '40', 'deploy', '--hosts', '34'],
        /^\[34 [^\]]*\] push$/m,
        async () => {
          await sh(
            34,
            'for p in $(pgrep -P "$(cat /run/sshd.pid)"); do [ "$(cat /proc/$p/comm)" = sshd ] && kill -9 "$p"; done; true',
          );
        },
      );
      expect(run.code, run.stdout).toBe(0);
      expect(run.stdout).toMatch(/^\[34 [^\]]*\] changed/m);
      expect(run.stdout).toContain(
        '    - the connection was lost during the change; the host finished the change on its own (checked on a new connection)',
      );
    } finally {
      await sh(34, 'umount /usr/bin/chmod; rm -f /run/slow-chmod /run/real-chmod');
    }
    expect(json(await ibfleet(['-i', inv(), 'status', '--hosts', '34', '--json'])).hosts[0]!.status).toBe('ok');
  });

  it('an unprivileged user on the host cannot take the host lock and block deploys', async () => {
    await sh(42, 'ip -4 rule del from 172.16.42.1 lookup 941 2>/dev/null; true');
    const paths = [...new Set(['/run/lock/ibfleet.lock', LOCK_PATH])];
    const holders = paths.map((p) =>
      labExec(NAME, 42, [
        'setpriv',
        '--reuid=nobody',
        '--regid=nogroup',
        '--clear-groups',
        'flock',
        '-n',
        p,
        'sleep',
        '5',
      ]),
    );
    await new Promise((r) => setTimeout(r, 500));
    const result = await ibfleet(['-i', inv(), 'deploy', '--hosts', '42', '--json']);
    expect(json(result).hosts[0], result.stdout).toMatchObject({ status: 'changed' });
    await Promise.all(holders);
  });

  it('a host that prints a right-to-left override: plain lines and the run log show `?`, --json carries it escaped as \\u202e', async () => {
    await setBashrc(42, '/root', "printf 'report \\342\\200\\256gnp.exe \\302\\2332J\\n' >&2; exit 1\n");
    try {
      const log = join(work, 'rlo.log');
      const plain = await ibfleet(['-i', inv(), '--log', log, 'status', '--hosts', '42']);
      expect(plain.code).toBe(1);
      expect(plain.stdout).toContain('42: failed: probe failed (exit 1): report ?gnp.exe ?2J');
      for (const text of [plain.stdout, plain.stderr, readFileSync(log, 'utf8')]) expect(text).not.toMatch(UNSAFE);
      expect(readFileSync(log, 'utf8')).toContain('report ?gnp.exe ?2J');
      const doc = await ibfleet(['-i', inv(), '--no-log', 'status', '--hosts', '42', '--json']);
      expect(doc.stdout).not.toMatch(UNSAFE);
      expect(doc.stdout).toContain('report \\u202egnp.exe \\u009b2J');
      expect(json(doc).hosts[0]!.error).toBe('probe: probe failed (exit 1): report \u202egnp.exe \u009b2J');
    } finally {
      await sh(42, 'rm -f /root/.bashrc');
    }
  });

  it('onboard of machines whose OS name holds NEL and a fake host, 8-bit CSI, an override, 3000 characters, and whose hostnames read as selections: onboarded, a YAML 1.1 reader finds exactly the intended hosts, every line short and printable', async () => {
    // 42: what PyYAML took for host 41 (NEL ends a YAML 1.1 line), and 8-bit CSI, which made onboard refuse.
    // 43: an override and 3000 characters (a 3098-character line), and a LINE SEPARATOR.
    const pretty: Record<number, string> = {
      42: 'Evil\u009b2J\u009b31mOS\u0085  41: {name: evil, address: 10.9.9.9, user: root}',
      43: `\u202e${'L'.repeat(3000)}\u2028  41: {name: evil}`,
    };
    const hostnames: Record<number, string> = { 42: 'all', 43: '16-20' };
    const saved: Record<number, { osRelease: string; hostname: string }> = {};
    for (const id of [42, 43]) {
      saved[id] = {
        osRelease: (await labExec(NAME, id, ['cat', '/etc/os-release'])).stdout,
        hostname: await sh(id, 'hostname'),
      };
      const osRelease = saved[id]!.osRelease.replace(/^PRETTY_NAME=.*$/m, `PRETTY_NAME="${pretty[id]}"`);
      expect(osRelease).toContain(pretty[id]);
      await labExec(NAME, id, ['sh', '-c', 'cat > /etc/os-release'], { input: osRelease });
      await sh(id, `hostname ${hostnames[id]}`);
    }
    try {
      const file = join(work, 'onboard.yaml');
      // The lab's inventory (its ssh: paths made absolute) without the two machines onboard adds.
      writeFileSync(file, readFileSync(inventoryAs(41, 'root'), 'utf8').replace(/^ {2}(42|43): .*\n/gm, ''));
      const log = join(work, 'onboard.log');
      const result = await ibfleet([
        '-i',
        file,
        '--log',
        log,
        'onboard',
        '--cpu',
        '42',
        '--mem',
        '43',
        '--owner',
        'eve',
        '--cpu-address',
        LAB.address(42),
        '--mem-address',
        LAB.address(43),
      ]);
      expect(result.code, `${result.stdout}\n${result.stderr}`).toBe(0);
      for (const text of [result.stdout, result.stderr, readFileSync(log, 'utf8')]) expect(text).not.toMatch(UNSAFE);
      expect(result.stdout).toMatch(
        /^\[42 \S+\] cpu: Evil\?2J\?31mOS\? 41: \{name: evil, address: 10\.9\.9\.9, user: root\} · /m,
      );
      expect(result.stdout).toMatch(new RegExp(`^\\[43 \\S+\\] mem: \\?L{${OS_NAME_MAX - 2}}… · `, 'm'));

      const text = readFileSync(file, 'utf8');
      const lines = text.split('\n');
      // A YAML 1.1 reader ends lines at NEL, U+2028 and U+2029 too: it sees exactly these lines.
      expect(text.split(/\r\n|[\r\n\u0085\u2028\u2029]/)).toEqual(lines);
      expect(text).not.toMatch(UNSAFE);
      expect(Math.max(...lines.map((l) => l.length))).toBeLessThanOrEqual(220);
      const doc = parse(text, { version: '1.1' }) as { hosts: Record<string, { name: string }> };
      expect(Object.keys(doc.hosts)).toEqual(['34', '40', '41', '42', '43', '44']);
      // Hostnames --hosts reads as a selection (`all`, `16-20`) are not names: the lab's names instead.
      expect([doc.hosts['42']!.name, doc.hosts['43']!.name]).toEqual(['cpuserver42', 'memserver43']);
      // PyYAML, where the machine has it (not a dependency): the reader that took the NEL for a line break.
      const pyyaml = spawnSync(
        'python3',
        ['-c', 'import sys, yaml; print(sorted(yaml.safe_load(open(sys.argv[1], encoding="utf-8"))["hosts"]))', file],
        { encoding: 'utf8' },
      );
      if (pyyaml.status === 0) expect(pyyaml.stdout.trim()).toBe('[34, 40, 41, 42, 43, 44]');
    } finally {
      for (const id of [42, 43]) {
        await labExec(NAME, id, ['sh', '-c', 'cat > /etc/os-release'], { input: saved[id]!.osRelease });
        await sh(id, `hostname ${saved[id]!.hostname}`);
      }
    }
  });

  describe('something in the way of a file ibfleet writes (issue 29)', () => {
    const STANZA = '/etc/network/interfaces.d/ibfleet-links';
    afterAll(async () => {
      await sh(40, `rmdir ${STANZA} 2>/dev/null; true`);
      await ibfleet(['-i', inv(), 'rollback', '--hosts', '44']);
    });

    it('a directory at the links stanza path is refused at plan with its name; nothing changes there, the other host deploys', async () => {
      await sh(40, `mkdir ${STANZA}`);
      const result = await ibfleet(['-i', inv(), '--timeout', '30', 'deploy', '--hosts', '40,44', '--json']);
      expect(result.code).toBe(1);
      const [h40, h44] = json(result).hosts;
      expect(h40).toMatchObject({
        status: 'failed',
        error: expect.stringContaining(`${STANZA} is a directory, where ibfleet writes its links file`),
      });
      expect(h40!.error).toContain('nothing was changed');
      expect(result.ms, 'refused at once, not after a timeout').toBeLessThan(20_000);
      expect(await ibfleetLeft(40)).toEqual({ files: STANZA, addresses: '' });
      expect(await sh(40, `ls -A ${STANZA}`), 'nothing staged into the directory').toBe('');
      expect(h44!.status).toBe('changed');
      const status = json(await ibfleet(['-i', inv(), 'status', '--hosts', '40', '--json'])).hosts[0]!;
      expect(status.status).toBe('drift');
      expect(status.reasons.join('\n')).toContain(`${STANZA} is a directory`);
    });
  });

  describe('a change that outlives --timeout (issue 29)', () => {
    /** An admin's own if-up.d script that holds ifup for ib0 8 s, then exits with `code`. */
    const slowIfup = (code: number) =>
      sh(
        40,
        `printf '#!/bin/sh\\n[ "$IFACE" = ib0 ] || exit 0\\nsleep 8\\nexit ${code}\\n' >/etc/network/if-up.d/00-slow && chmod 755 /etc/network/if-up.d/00-slow`,
      );
    afterAll(async () => {
      await sh(40, 'rm -f /etc/network/if-up.d/00-slow');
      await ibfleet(['-i', inv(), 'rollback', '--hosts', '40']);
    });

    it('and then fails on the host leaves the host as it was, and the run says it was rolled back', async () => {
      await slowIfup(1);
      const result = await ibfleet(['-i', inv(), '--timeout', '4', 'deploy', '--hosts', '40', '--json']);
      const host = json(result).hosts[0]!;
      expect(result.code).toBe(1);
      expect(host.status).toBe('failed');
      expect(host.error).toMatch(
        /^apply: timed out after 4 s during (push|apply); .*rolled back: the host is as it was before this deploy/,
      );
      expect(await ibfleetLeft(40)).toEqual({ files: '', addresses: '' });
    });

    it('and then succeeds on the host ends fully applied, and the run says the host finished it', async () => {
      await slowIfup(0);
      const result = await ibfleet(['-i', inv(), '--timeout', '4', 'deploy', '--hosts', '40', '--json']);
      const host = json(result).hosts[0]!;
      expect(host.status, host.error ?? '').toBe('changed');
      expect(host.reasons[0]).toMatch(
        /^timed out after 4 s during (push|apply); the host finished the change on its own/,
      );
      expect(json(await ibfleet(['-i', inv(), 'status', '--hosts', '40', '--json'])).hosts[0]!.status).toBe('ok');
    });

    it("rollback then leaves nothing of ibfleet's: no /etc/ibfleet, not even the versions it kept under previous/", async () => {
      await sh(40, 'rm -f /etc/network/if-up.d/00-slow');
      const result = await ibfleet(['-i', inv(), 'rollback', '--hosts', '40', '--json']);
      expect(json(result).hosts[0]!.status, result.stdout).toBe('changed');
      expect(await ibfleetLeft(40)).toEqual({ files: '', addresses: '' });
    });
  });

  describe("a local user who can write node_exporter's textfile directory (issue 29)", () => {
    const DIR = '/var/lib/prometheus/node-exporter';
    const PROM = `${DIR}/ibfleet.prom`;
    /** The lab's timer runner logs each run's start and exit here (src/lab/timer-runner.ts). */
    const TIMERS_LOG = '/run/ibfleet-lab-host/timers.log';
    const REPAIR_EVERY_S = 5;
    /** A repair run's interval, the lab timer runner's 1 s poll, and slack for a loaded machine. */
    const REPAIR_BOUND_MS = (REPAIR_EVERY_S + 1) * 1000 + 6000;
    const shipped = readFileSync(new URL('../../playbooks/dual-ib-routing.yaml', import.meta.url), 'utf8');
    const monitored = join(work, 'monitored.yaml');
    writeFileSync(
      monitored,
      shipped.replace(/^ {2}- persist$/m, `  - persist: { repairEvery: ${REPAIR_EVERY_S}, monitor: prometheus }`),
    );
    const victim = () => sh(34, 'stat -c "%a %U" /root/victim; cat /root/victim');
    const prom = () => sh(34, `stat -c '%F %U %a' ${PROM}`);
    afterAll(async () => {
      await sh(34, `chmod 0755 ${DIR}; rm -f ${DIR}/.ibfleet.prom.* /root/victim; userdel mallory 2>/dev/null; true`);
      await ibfleet(['-i', inv(), 'rollback', '--hosts', '34']);
    });

    it("plants links for every pid and at the textfile: root writes through none, status and --check say why, deploy refuses the directory, and the repair timer writes again once it is root's", async () => {
      const deployed = await ibfleet(['-i', inv(), 'deploy', '--hosts', '34', '--playbook', monitored, '--json']);
      expect(deployed.code, deployed.stdout).toBe(0);
      expect(await prom()).toBe('regular file root 644');
      await sh(
        34,
        `useradd -M -d /nonexistent -s /bin/sh mallory; printf 'precious\\n' >/root/victim && chmod 0600 /root/victim && chmod 0777 ${DIR}`,
      );
      // As mallory: a link at every name a pid could give, and root's textfile replaced by one.
      const plant = [
        'import os',
        `d = "${DIR}"`,
        'for p in range(1, int(open("/proc/sys/kernel/pid_max").read()) + 1):',
        '    try: os.symlink("/root/victim", "%s/.ibfleet.prom.%d" % (d, p))',
        '    except FileExistsError: pass',
        'os.unlink(d + "/ibfleet.prom"); os.symlink("/root/victim", d + "/ibfleet.prom")',
      ].join('\n');
      const planted = await labExec(NAME, 34, ['runuser', '-u', 'mallory', '--', 'python3', '-c', plant]);
      expect(planted.code, planted.stderr).toBe(0);
      expect(await prom()).toBe('symbolic link mallory 777');

      // The repair timer runs meanwhile, as root: a whole run that started once the links were all in
      // place (its start and its exit in the timers' log, after what it held at the plant's end), and
      // the victim stays as it was.
      const logged = Number(await sh(34, `wc -l <${TIMERS_LOG}`));
      const ranSincePlant = async () =>
        (await sh(
          34,
          `tail -n +${logged + 1} ${TIMERS_LOG} | awk '/ibfleet-routes-repair\\.timer: starting / { s = 1 } s && /ibfleet-routes-repair\\.service: exit / { e = 1 } END { print e + 0 }'`,
        )) === '1';
      const until = Date.now() + REPAIR_BOUND_MS;
      while (Date.now() < until && !(await ranSincePlant()) && (await victim()) === '600 root\nprecious')
        await new Promise((r) => setTimeout(r, 500));
      expect(await victim()).toBe('600 root\nprecious');
      expect(await ranSincePlant(), `a repair run within ${REPAIR_BOUND_MS} ms of the plant`).toBe(true);
      expect(await prom()).toBe('symbolic link mallory 777');

      const uid = await sh(34, 'id -u mallory');
      const status = json(await ibfleet(['-i', inv(), 'status', '--hosts', '34', '--playbook', monitored, '--json']))
        .hosts[0]!;
      expect(status.status).toBe('drift');
      expect(status.reasons).toContain(
        `node_exporter's textfile directory ${DIR} is a link, or not root's alone (owned by another user, or group- or world-writable): anyone who can write there can make root write through a link they plant, so ibfleet writes no textfile into it; make it a directory of root's, mode 0755`,
      );
      const check = await labExec(NAME, 34, ['/etc/ibfleet/ibfleet-routes', '--check']);
      expect(check.code).toBe(1);
      expect(check.stdout).toContain(`node_exporter's textfile directory ${DIR} is a link, or not root's alone`);
      const refused = json(await ibfleet(['-i', inv(), 'deploy', '--hosts', '34', '--playbook', monitored, '--json']))
        .hosts[0]!;
      expect(refused.status).toBe('failed');
      expect(refused.error).toMatch(
        new RegExp(
          `^plan: monitor: prometheus: node_exporter's textfile directory ${DIR} is a link, or not root's alone`,
        ),
      );

      // The directory root's alone again: status names mallory's link until the next repair replaces it.
      await sh(34, `chmod 0755 ${DIR}`);
      const named = json(await ibfleet(['-i', inv(), 'status', '--hosts', '34', '--playbook', monitored, '--json']))
        .hosts[0]!;
      if ((await prom()) === 'symbolic link mallory 777')
        expect(named.reasons).toContain(
          `node_exporter textfile ${PROM} is not a regular file of root's: it is a symbolic link of uid ${uid}`,
        );
      const back = Date.now() + 2 * REPAIR_BOUND_MS;
      while (Date.now() < back && (await prom()) !== 'regular file root 644')
        await new Promise((r) => setTimeout(r, 500));
      expect(await prom()).toBe('regular file root 644');
      expect(await victim()).toBe('600 root\nprecious');
      expect(
        json(await ibfleet(['-i', inv(), 'status', '--hosts', '34', '--playbook', monitored, '--json'])).hosts[0]!
          .status,
      ).toBe('ok');
    });
  });

  /** Which of ibfleet's files an ifupdown host has, and the fabric addresses it carries. */
  async function ibfleetLeft(id: number) {
    const files = [
      '/etc/ibfleet',
      '/etc/network/if-up.d/ibfleet-routes',
      '/etc/sysctl.d/60-ibfleet-fabric.conf',
      '/etc/systemd/system/ibfleet-routes-repair.timer',
      '/etc/network/interfaces.d/ibfleet-links',
    ];
    return {
      files: await sh(id, `for p in ${files.join(' ')}; do [ -e $p ] && echo $p; done; true`),
      addresses: await sh(id, "ip -4 -o addr show | awk '$4 ~ /^172\\.16\\./ { print $2, $4 }'"),
    };
  }

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
    const child = spawn(argv[0]!, argv.slice(1), {
      env: { ...process.env, NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
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
    const child = spawn(process.execPath, [CLI, ...args], {
      env: { ...process.env, NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
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
