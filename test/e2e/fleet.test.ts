/**
 * deploy, status, verify and rollback end to end: the built CLI, the real ssh2 transport, real sshd
 * in lab hosts (one per network manager plus a spare), and the kernel state read back from inside
 * each host. The scenarios run in order on one lab, each leaving the fleet as the next expects.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { labExec, labReboot } from '../../src/lab/index.js';
import { LOCK_DIR, LOCK_PATH } from '../../src/script/paths.js';
import { IS_ROOT, noteIfNotRoot, testLab, useLab } from '../lab/helpers.js';
import { CLI, ibfleet, json, statuses, type JsonRun } from '../helpers/cli.js';

const LAB = testLab('e2e-fleet');
const NAME = LAB.name;
const SUBNET = LAB.mgmtSubnet;
const HOSTS = [16, 34, 40, 41];

noteIfNotRoot('test/e2e/fleet.test.ts (deploy, status, verify, rollback against lab hosts)');

describe.skipIf(!IS_ROOT)('deploy, status, verify and rollback against real lab hosts (needs root)', () => {
  const lab = useLab({ name: NAME, mgmtSubnet: SUBNET, hosts: HOSTS, managers: { 40: 'ifupdown' } });
  const work = mkdtempSync(join(tmpdir(), 'ibfleet-e2e-'));
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  const inv = () => lab().inventoryPath;
  const sh = async (id: number, script: string) => {
    const r = await labExec(NAME, id, ['sh', '-c', script]);
    return r.stdout.trim();
  };
  const rules = (id: number) => sh(id, 'ip -4 rule show');
  // These scenarios make drift on purpose and expect to find it: the repair timer (tested in
  // test/e2e/managers-*.test.ts) would race them, so deploy and status here use the shipped
  // playbook without it (repairEvery: 0).
  const shipped = readFileSync(new URL('../../playbooks/dual-ib-routing.yaml', import.meta.url), 'utf8');
  const noRepair = join(work, 'no-repair.yaml');
  writeFileSync(noRepair, shipped.replace(/^ {2}- persist$/m, '  - persist:\n      repairEvery: 0'));
  const ib = (args: readonly string[], options?: Parameters<typeof ibfleet>[1]) => {
    const at = args.findIndex((a) => a === 'deploy' || a === 'status');
    const withPlaybook =
      at < 0 || args.includes('--playbook')
        ? args
        : [...args.slice(0, at + 1), '--playbook', noRepair, ...args.slice(at + 1)];
    return ibfleet(withPlaybook, options);
  };
  const run = (...args: string[]) => ib(['-i', inv(), ...args]);
  const logins = (id: number) =>
    readFileSync(lab().hosts.find((h) => h.id === id)!.sshdLog, 'utf8')
      .split('\n')
      .filter((l) => l.includes('Accepted publickey')).length;
  /** A copy of the lab inventory (its ssh: paths made absolute) with one line edited. */
  const variant = (file: string, edit: (text: string) => string) => {
    const text = readFileSync(inv(), 'utf8')
      .replace('knownHosts: known_hosts', `knownHosts: ${lab().knownHostsPath}`)
      .replace('identityFile: id_ed25519', `identityFile: ${lab().identityPath}`);
    const path = join(work, file);
    writeFileSync(path, edit(text));
    return path;
  };

  it("before any deploy, verify shows the seeds' failure: NIC 1 ↔ NIC 1 passes, every NIC 2 cell fails with a reproduce command", async () => {
    const result = await run('verify', '--hosts', '16,34,40', '--no-rping', '--json');
    expect(result.code).toBe(1);
    const doc = json(result);
    const cells = doc.matrix!;
    expect(cells).toHaveLength(3 * 2 * 4);
    for (const c of cells) expect(c.ok).toBe(c.from.nic === 1 && c.to.nic === 1);
    // With arp_ignore=0 before a deploy, which NIC answers ARP is chance: the echoes come back through
    // the wrong port (late, or lost, on a loaded machine) or are dropped by the reverse-path filter.
    // Whichever, the cause verify names is the same.
    for (const c of cells.filter((c) => !c.ok))
      for (const e of [c.from, c.to].filter((e) => e.nic === 2))
        expect(c.detail).toContain(`${e.host}/${e.iface}: no rule from ${e.ip}, table 942 empty`);
    const bad = cells.find((c) => c.from.host === 16 && c.from.nic === 2 && c.to.host === 34 && c.to.nic === 2)!;
    // The fix names the run's inventory, as status's not-deployed line does: it runs from any directory.
    expect(bad.detail).toMatch(
      /^[0-3]\/3 replies(, avg [\d.]+ ms)?( \([12] lost\))?(, through the wrong port)? — likely: 16\/ibs5f1: no rule from 172\.16\.16\.2, table 942 empty \(per-NIC routing not deployed: ibfleet deploy -i \S+ --hosts 16\); 34\/ib1: no rule from 172\.16\.34\.2, table 942 empty/,
    );
    expect(bad.detail).toContain(`ibfleet deploy -i ${inv()} --hosts 16)`);
    expect(bad.reproduce).toBe('on cpuserver16: ping -n -c 3 -i 0.2 -W 1 -I 172.16.16.2 172.16.34.2');
  });

  it('--dry-run plans every change and changes nothing', async () => {
    const before = await rules(34);
    const result = await run('deploy', '--hosts', 'all', '--dry-run', '--json');
    expect(result.code).toBe(0);
    const doc = json(result);
    expect(Object.values(statuses(doc))).toEqual(['planned', 'planned', 'planned', 'planned']);
    expect(doc.hosts[1]!.reasons).toContain('ib1: rule 942: from 172.16.34.2 lookup 942');
    expect(await rules(34)).toBe(before);
    expect(await sh(34, 'ls /etc/ibfleet 2>&1 || true')).toMatch(/No such file/);
  });

  it("deploy detects each host's manager, installs the right hook, and leaves exactly the planned kernel state", async () => {
    const result = await run('deploy', '--hosts', 'all', '--json');
    expect(result.code, result.stderr).toBe(0);
    const doc = json(result);
    expect(doc.ok).toBe(true);
    expect(doc.hosts.map((h) => [h.id, h.status, h.manager])).toEqual([
      [16, 'changed', 'networkmanager'],
      [34, 'changed', 'netplan'],
      [40, 'changed', 'ifupdown'],
      [41, 'changed', 'netplan'],
    ]);
    expect(doc.hosts[0]!.os).toBe('Ubuntu 20.04.6 LTS');

    expect(await rules(34)).toBe(
      [
        '0:\tfrom all lookup local',
        '941:\tfrom 172.16.34.1 lookup 941',
        '942:\tfrom 172.16.34.2 lookup 942',
        '32766:\tfrom all lookup main',
        '32767:\tfrom all lookup default',
      ].join('\n'),
    );
    expect(await sh(16, 'ip -4 route show table 941; ip -4 route show table 942')).toBe(
      '172.16.0.0/16 dev ibs5f0 proto kernel scope link src 172.16.16.1 \n172.16.0.0/16 dev ibs5f1 proto kernel scope link src 172.16.16.2',
    );
    for (const id of HOSTS)
      expect(await sh(id, 'ip -4 route show table main | grep -c "^172.16.0.0/16" || true')).toBe('0');
    expect(await sh(40, 'ip -4 route get 172.16.34.2 from 172.16.40.2')).toMatch(/ dev ib1 table 942 /);
    expect(
      await sh(
        16,
        'stat -c "%a %U %n" /etc/ibfleet/ibfleet-routes /etc/NetworkManager/dispatcher.d/50-ibfleet-routes /etc/sysctl.d/60-ibfleet-fabric.conf',
      ),
    ).toBe(
      '755 root /etc/ibfleet/ibfleet-routes\n755 root /etc/NetworkManager/dispatcher.d/50-ibfleet-routes\n644 root /etc/sysctl.d/60-ibfleet-fabric.conf',
    );
    expect(
      await sh(
        34,
        'ls /etc/networkd-dispatcher/routable.d/; ls /etc/network/if-up.d /etc/NetworkManager/dispatcher.d 2>/dev/null | wc -l',
      ),
    ).toBe('50-ibfleet-routes\n0');
    expect(await sh(40, 'ls /etc/network/if-up.d/')).toBe('ibfleet-routes');
    expect(await sh(41, 'cat /proc/sys/net/ipv4/conf/ib1/arp_ignore /proc/sys/net/ipv4/conf/ib1/rp_filter')).toBe(
      '2\n2',
    );
  });

  it('after deploy every NIC reaches every NIC of the other hosts', async () => {
    const result = await run('verify', '--no-rping', '--json');
    expect(result.code).toBe(0);
    const cells = json(result).matrix!;
    expect(cells).toHaveLength(4 * 3 * 4);
    expect(cells.filter((c) => !c.ok)).toEqual([]);
  });

  it('policy routing alone satisfies strict reverse-path filtering (rp_filter=1 on every fabric NIC)', async () => {
    const strict = join(work, 'strict.yaml');
    writeFileSync(
      strict,
      readFileSync(new URL('../../playbooks/dual-ib-routing.yaml', import.meta.url), 'utf8')
        .replace('rp_filter: 2', 'rp_filter: 1')
        .replace('name: dual-ib-routing', 'name: strict-rp')
        .replace(/^ {2}- persist$/m, '  - persist:\n      repairEvery: 0'),
    );
    const deployed = await run('deploy', '--hosts', 'all', '--playbook', strict, '--json');
    expect(deployed.code, deployed.stdout).toBe(0);
    expect(
      await sh(
        34,
        'cat /proc/sys/net/ipv4/conf/all/rp_filter /proc/sys/net/ipv4/conf/ib0/rp_filter /proc/sys/net/ipv4/conf/ib1/rp_filter',
      ),
    ).toBe('1\n1\n1');
    const verified = await run('verify', '--json');
    expect(json(verified).matrix!.filter((c) => !c.ok)).toEqual([]);
    expect((await run('deploy', '--hosts', 'all', '--json')).code).toBe(0);
  });

  it('a second deploy changes nothing, with one SSH connection and one channel per host', async () => {
    const before = HOSTS.map(logins);
    const result = await run('deploy', '--hosts', 'all', '--json');
    expect(result.code).toBe(0);
    const doc = json(result);
    expect(doc.hosts.map((h) => [h.status, h.reasons, h.ssh])).toEqual(
      HOSTS.map(() => ['unchanged', [], { connections: 1, channels: 1 }]),
    );
    expect(HOSTS.map(logins).map((n, i) => n - before[i]!)).toEqual([1, 1, 1, 1]);
  });

  it('render --diff asks the hosts and says it is render: its document and its header name it, every file as rendered', async () => {
    const result = await run('render', '--hosts', 'all', '--playbook', noRepair, '--diff', '--json');
    expect(result.code, result.stdout).toBe(0);
    const doc = json(result);
    expect(doc.command).toBe('render');
    expect(Object.values(statuses(doc))).toEqual(['ok', 'ok', 'ok', 'ok']);
    const plain = await run('render', '--hosts', '34', '--playbook', noRepair, '--diff');
    expect(plain.stdout.split('\n')[0]).toMatch(/^ibfleet render --diff: 1 host \(34\) · playbook /);
    expect(plain.stdout).toContain('34: ok');
  });

  it("a reboot of every host brings the state back through each manager's hook, with no duplicate rules", async () => {
    const reboots = await labReboot(NAME, HOSTS);
    expect(reboots.map((r) => [r.id, r.ok])).toEqual(HOSTS.map((id) => [id, true]));
    expect(reboots.map((r) => [r.id, r.boot.code, r.settled])).toEqual(HOSTS.map((id) => [id, 0, true]));
    const status = await run('status', '--json');
    expect(status.code, status.stdout).toBe(0);
    expect(Object.values(statuses(json(status)))).toEqual(['ok', 'ok', 'ok', 'ok']);
    for (const id of HOSTS) expect((await rules(id)).split('\n')).toHaveLength(5);
    expect(json(await run('verify', '--json')).matrix!.every((c) => c.ok)).toBe(true);
  });

  it('status reports drift on exactly the host that drifted, with the reason, and exits 1', async () => {
    await sh(
      34,
      'ip -4 rule del from 172.16.34.2 lookup 942 && ip -4 route add 172.16.0.0/16 dev ib0 proto kernel scope link src 172.16.34.1',
    );
    const result = await run('status', '--json');
    expect(result.code).toBe(1);
    const doc = json(result);
    expect(statuses(doc)).toEqual({ 16: 'ok', 34: 'drift', 40: 'ok', 41: 'ok' });
    expect(doc.hosts[1]!.reasons).toEqual(
      expect.arrayContaining([
        'ib1: rule from 172.16.34.2 is missing',
        'ib0: main-table route to 172.16.0.0/16 is back',
      ]),
    );
    const plain = await run('status');
    expect(plain.stdout).toContain('16,40-41: ok');
    expect(plain.stdout).toContain('34: drift:');
    const fixed = json(await run('deploy', '--hosts', 'all', '--json'));
    expect(statuses(fixed)).toEqual({ 16: 'unchanged', 34: 'changed', 40: 'unchanged', 41: 'unchanged' });
  });

  it('a host whose lock is held past --timeout stops that host only; the message names the lock and blames no ibfleet run it cannot name', async () => {
    // The repair timer would put the rule back on its own schedule (every 30 s): stopped here, so what
    // this test sees is the deploy's doing alone. The deploy at the end starts it again.
    await sh(41, 'systemctl stop ibfleet-routes-repair.timer');
    await sh(41, 'ip -4 rule del from 172.16.41.1 lookup 941');
    // Held by a process of root's that is not an ibfleet run: the message must not say it is one.
    // Its sleep's PID in a file: once the deploy has been refused, the lock is given back at once (the
    // sleep ended, flock ends with it), not when the 8 s are up.
    const holder = labExec(NAME, 41, [
      'sh',
      '-c',
      `mkdir -p -m 0700 ${LOCK_DIR}; exec flock ${LOCK_PATH} sh -c 'echo $$ >/run/lock-holder.pid; exec sleep 8'`,
    ]);
    for (
      let i = 0;
      i < 50 && (await labExec(NAME, 41, ['sh', '-c', `[ -e ${LOCK_PATH} ] && flock -n ${LOCK_PATH} true`])).code !== 1;
      i++
    )
      await new Promise((r) => setTimeout(r, 100));
    const doc = json(await run('deploy', '--hosts', '34,41', '--timeout', '5', '--json'));
    const failed = doc.hosts.find((h) => h.id === 41)!;
    expect(failed.status).toBe('failed');
    expect(failed.error).toMatch(
      new RegExp(
        `^wait: ibfleet: the host lock ${LOCK_PATH} is held by a process that is not an ibfleet run \\(find it with: fuser -v ${LOCK_PATH}\\); waited [1-3] s for it \\(--timeout\\); nothing was changed$`,
      ),
    );
    expect(doc.hosts.find((h) => h.id === 34)!.status).toBe('unchanged');
    expect(await rules(41)).not.toContain('from 172.16.41.1 lookup 941');
    await sh(41, 'kill "$(cat /run/lock-holder.pid)"; rm -f /run/lock-holder.pid');
    await holder;
    // Free again, a deploy succeeds, and has the rule to add: with the timer stopped nothing else puts
    // it back — networkd-dispatcher runs the hooks only on networkd's reports, and a lab boot returns
    // once networkd has nothing more to report about it (none comes in the middle of this test).
    expect(json(await run('deploy', '--hosts', '41', '--json')).hosts[0]!.status).toBe('changed');
    expect(await rules(41)).toContain('from 172.16.41.1 lookup 941');
  });

  it('a host whose sshd is down or silent does not hold up the others: exit 1, unreachable, within the timeout', async () => {
    await sh(41, 'kill "$(cat /run/sshd.pid)"');
    // A silent host: its replies to the controller go nowhere, so the handshake never completes.
    await sh(40, 'ip -4 route replace blackhole 198.19.255.254/32');
    try {
      await sh(16, 'ip -4 rule del from 172.16.16.2 lookup 942');
      const result = await run('deploy', '--hosts', 'all', '--timeout', '4', '--json');
      expect(result.code).toBe(1);
      const doc = json(result);
      expect(doc.hosts.map((h) => [h.id, h.status, h.error])).toEqual([
        [16, 'changed', null],
        [34, 'unchanged', null],
        [40, 'unreachable', `connect: no answer from ${LAB.address(40)} within 4 s (--timeout)`],
        [41, 'unreachable', `connect: connection refused by ${LAB.address(41)}:22 (is sshd running?)`],
      ]);
      // The silent host is given up after --timeout, not after the OS's TCP timeout (minutes).
      expect(result.ms).toBeLessThan(15_000);

      // verify blames only the host whose sshd is down: its cells are not run (one line), the others are ok.
      const verified = await run('verify', '--hosts', '16,34,41', '--no-rping', '--timeout', '4', '--json');
      expect(verified.code).toBe(1);
      const vdoc = json<JsonRun>(verified);
      expect(vdoc.hosts.map((h) => [h.id, h.status])).toEqual([
        [16, 'ok'],
        [34, 'ok'],
        [41, 'unreachable'],
      ]);
      const with41 = vdoc.matrix!.filter((c) => c.from.host === 41 || c.to.host === 41);
      expect(with41.length).toBe(16);
      for (const c of with41)
        expect(c).toMatchObject({ ok: null, state: 'not-run', causes: [{ kind: 'unreachable', host: 41 }] });
      expect(vdoc.matrix!.filter((c) => c.from.host !== 41 && c.to.host !== 41).every((c) => c.ok === true)).toBe(true);
      const plain = await run('verify', '--hosts', '16,34,41', '--no-rping', '--timeout', '4', '--no-log');
      expect(plain.stdout).not.toMatch(/^FAIL|reproduce/m);
      expect(plain.stdout).toContain(
        `not run: 16 cells — host 41 unreachable at connect: connection refused by ${LAB.address(41)}:22 (is sshd running?)`,
      );
      expect(plain.stdout).toMatch(/^\[16 cpuserver16\] ok /m);
    } finally {
      await sh(40, 'ip -4 route replace 198.19.255.254/32 dev mgmt0');
      await sh(41, '/usr/sbin/sshd -E /run/sshd.log');
    }
  });

  it('a changed host key is refused with a warning and the host is left untouched; an unknown one needs --accept-new', async () => {
    await sh(40, 'ip -4 rule del from 172.16.40.2 lookup 942');
    const before = await rules(40);
    const otherKey = 'AAAAC3NzaC1lZDI1NTE5AAAAIJ4o5C2rJrQ2uJ8sX4pYw5q2y5mM0e8S6c8vYx3bq1Zz';
    const known = readFileSync(lab().knownHostsPath, 'utf8').replace(
      new RegExp(`^${LAB.addressPattern}\\.40 ssh-ed25519 \\S+$`, 'm'),
      `${LAB.address(40)} ssh-ed25519 ${otherKey}`,
    );
    const knownFile = join(work, 'known_hosts.changed');
    writeFileSync(knownFile, known);
    const loginsBefore = logins(40);
    const changed = json(
      await ib([
        '-i',
        variant('inv-changed.yaml', (t) => t),
        '--known-hosts',
        knownFile,
        'deploy',
        '--hosts',
        '34,40',
        '--json',
      ]),
    );
    expect(changed.hosts.find((h) => h.id === 40)).toMatchObject({
      status: 'failed',
      error: expect.stringContaining(`WARNING: HOST KEY OF ${LAB.address(40)} HAS CHANGED`),
    });
    expect(changed.hosts.find((h) => h.id === 34)!.status).toBe('unchanged');
    expect(await rules(40)).toBe(before);
    expect(logins(40)).toBe(loginsBefore);

    const emptyKnown = join(work, 'known_hosts.empty');
    writeFileSync(emptyKnown, '');
    const unknown = json(await ib(['-i', inv(), '--known-hosts', emptyKnown, 'status', '--hosts', '40', '--json']));
    expect(unknown.hosts[0]!.error).toMatch(
      new RegExp(`host key of ${LAB.addressPattern}\\.40 is not in .*known_hosts\\.empty .*--accept-new`),
    );
    const accepted = await ib([
      '-i',
      inv(),
      '--known-hosts',
      emptyKnown,
      '--accept-new',
      'deploy',
      '--hosts',
      '40',
      '--json',
    ]);
    expect(json(accepted).hosts[0]!.status).toBe('changed');
    expect(readFileSync(emptyKnown, 'utf8')).toMatch(new RegExp(`^${LAB.addressPattern}\\.40 ssh-ed25519 AAAA`));
  });

  it('a sudo user: refused without -K, works with the password on stdin, a wrong password is reported', async () => {
    await sh(
      41,
      [
        'useradd -M -d /run/ops -s /bin/sh ops',
        'mkdir -p /run/ops/.ssh && cp /root/.ssh/authorized_keys /run/ops/.ssh/ && chown -R ops: /run/ops && chmod 700 /run/ops/.ssh',
        "echo 'ops:s3cret-pass' | chpasswd",
        "echo 'ops ALL=(root) ALL' > /etc/sudoers.d/ops && chmod 440 /etc/sudoers.d/ops",
        'ip -4 rule del from 172.16.41.2 lookup 942',
      ].join(' && '),
    );
    const opsInventory = variant('inv-ops.yaml', (t) =>
      t.replace(new RegExp(`^( {2}41: \\{name: node41, address: ${LAB.addressPattern}\\.41),`, 'm'), '$1, user: ops,'),
    );
    const withoutPassword = json(await ib(['-i', opsInventory, 'deploy', '--hosts', '41', '--json']));
    expect(withoutPassword.hosts[0]!.error).toContain(
      `sudo on ops@${LAB.address(41)} asks for a password; run again with -K`,
    );
    const wrong = json(
      await ib(['-i', opsInventory, 'deploy', '--hosts', '41', '-K', '--json'], { input: 'not-it\n' }),
    );
    expect(wrong.hosts[0]!.error).toContain(`sudo on ops@${LAB.address(41)} rejected the password`);
    const right = await ib(['-i', opsInventory, 'deploy', '--hosts', '41', '-K', '--json'], { input: 's3cret-pass\n' });
    expect(json(right).hosts[0]).toMatchObject({
      status: 'changed',
      reasons: ['ib1: rule 942: from 172.16.41.2 lookup 942'],
    });
    expect(right.stdout + right.stderr).not.toContain('s3cret-pass');
    // The run log holds the script, its output and the checks of this sudo run, and never the password.
    const logPath = (json(right) as unknown as { log: string }).log;
    const logText = readFileSync(logPath, 'utf8');
    expect(logText).toMatch(/^== host 41 node41 .* · changed · netplan/m);
    expect(logText).toContain('apply output (exit 0):');
    expect(logText).not.toContain('s3cret-pass');
    expect(readFileSync(lab().hosts.find((h) => h.id === 41)!.sshdLog, 'utf8')).toContain('Accepted publickey for ops');
  });

  it('an inventory whose interface does not exist on the host is a clear error, nothing changed', async () => {
    const wrong = variant('inv-iface.yaml', (t) =>
      t.replace(/^( {2}34: .*)interfaces: \[ib0, ib1\]/m, '$1interfaces: [ib0, ib9]'),
    );
    const doc = json(await ib(['-i', wrong, 'deploy', '--hosts', '34', '--json']));
    expect(doc.hosts[0]).toMatchObject({
      status: 'failed',
      error: expect.stringMatching(/^plan: interface ib9 \(NIC 2\) not found; the host has mgmt0, ib1, ib0/),
    });
  });

  describe('a changed tableBase (940 → 500): nothing of the old tables is left behind', () => {
    const BOOT_RULES = '0:\tfrom all lookup local\n32766:\tfrom all lookup main\n32767:\tfrom all lookup default';
    const nicRules = (id: number, base: number) =>
      [1, 2].map((n) => `${base + n}:\tfrom 172.16.${id}.${n} lookup ${base + n}`).join('\n');
    const deployedRules = (id: number, base: number) =>
      `0:\tfrom all lookup local\n${nicRules(id, base)}\n32766:\tfrom all lookup main\n32767:\tfrom all lookup default`;
    const tables = (id: number, ...numbers: number[]) =>
      sh(id, numbers.map((t) => `ip -4 route show table ${t}`).join('; '));
    const moved = () => variant('inv-500.yaml', (t) => t.replace('tableBase: 940', 'tableBase: 500'));

    it('status with the new tableBase names the old tables as drift; deploy empties them as it moves the routing; status is ok', async () => {
      const drift = json(await ib(['-i', moved(), 'status', '--json']));
      expect(Object.values(statuses(drift))).toEqual(['drift', 'drift', 'drift', 'drift']);
      expect(drift.hosts[1]!.reasons).toContain(
        'table 941 of an earlier deploy (tableBase was 940, /etc/ibfleet/owned) still holds 172.16.0.0/16 dev ib0 proto kernel scope link src 172.16.34.1',
      );
      const plan = await ib(['-i', moved(), 'deploy', '--hosts', '34', '--dry-run']);
      expect(plan.stdout).toContain('  − old table 941 (tableBase was 940)\n  − old table 942 (tableBase was 940)\n');
      expect(plan.stdout).toMatch(
        /^34 memserver34 \(netplan\): \+2 table routes −2 old tables, 2 rules replaced, script and ownership record replaced$/m,
      );

      const deployed = await ib(['-i', moved(), 'deploy', '--hosts', 'all', '--json']);
      expect(deployed.code, deployed.stdout).toBe(0);
      for (const id of HOSTS) {
        expect(await tables(id, 941, 942)).toBe('');
        expect(await rules(id)).toBe(deployedRules(id, 500));
      }
      expect(await sh(34, 'ip -4 route show table 501')).toBe(
        '172.16.0.0/16 dev ib0 proto kernel scope link src 172.16.34.1',
      );
      expect(Object.values(statuses(json(await ib(['-i', moved(), 'status', '--json']))))).toEqual([
        'ok',
        'ok',
        'ok',
        'ok',
      ]);
    });

    it('status with the old tableBase says the files were generated with the new one and names the new tables, not a hand edit', async () => {
      const doc = json(await run('status', '--json'));
      const reasons = doc.hosts[1]!.reasons;
      expect(reasons).toContain(
        "/etc/ibfleet/routes.conf was generated with tableBase 500, not 940 (the last deploy's record /etc/ibfleet/owned lists tables 501, 502): the inventory's fabric changed since; deploy regenerates it (not a hand edit)",
      );
      expect(reasons).toContain(
        'table 501 of an earlier deploy (tableBase was 500, /etc/ibfleet/owned) still holds 172.16.0.0/16 dev ib0 proto kernel scope link src 172.16.34.1',
      );
      expect(doc.hosts.flatMap((h) => h.reasons).join('\n')).not.toContain('was modified');
    });

    it('rollback with the new tableBase removes the tables and rules a deploy with the old one made', async () => {
      expect((await run('deploy', '--hosts', 'all', '--json')).code).toBe(0);
      for (const id of HOSTS) expect(await tables(id, 501, 502)).toBe('');
      const rolled = await ib(['-i', moved(), 'rollback', '--hosts', 'all', '--json']);
      expect(rolled.code, rolled.stdout).toBe(0);
      for (const id of HOSTS) {
        expect(await rules(id)).toBe(BOOT_RULES);
        expect(await tables(id, 941, 942, 501, 502)).toBe('');
      }
      expect((await run('deploy', '--hosts', 'all', '--json')).code).toBe(0);
    });

    it('a deploy with the new tableBase that fails verification is undone: the old tables and rules are back as they were', async () => {
      // A site rule ahead of ibfleet's sends the fabric subnet to table 100: no NIC's traffic leaves through its own table.
      await sh(
        41,
        'ip -4 route add 172.16.0.0/16 dev ib0 table 100 && ip -4 rule add to 172.16.0.0/16 lookup 100 priority 100',
      );
      const state = () =>
        sh(
          41,
          'ip -4 rule show; ip -4 route show table all | grep -v "^local \\|^broadcast "; sha256sum /etc/ibfleet/ibfleet-routes /etc/ibfleet/owned',
        );
      try {
        const before = await state();
        expect(before).toContain('941:\tfrom 172.16.41.1 lookup 941');
        const failed = json(await ib(['-i', moved(), 'deploy', '--hosts', '41', '--json']));
        expect(failed.hosts[0]!.status).toBe('failed');
        expect(failed.hosts[0]!.error).toMatch(
          /^verify: verification failed: .*; rolled back: the host is as it was before this deploy/,
        );
        expect(await state()).toBe(before);
      } finally {
        await sh(41, 'ip -4 rule del to 172.16.0.0/16 lookup 100 priority 100; ip -4 route flush table 100');
      }
      expect(json(await run('status', '--hosts', '41', '--json')).hosts[0]!.status).toBe('ok');
    });
  });

  it('rollback returns every host to its boot state, and a second rollback changes nothing', async () => {
    const result = await run('rollback', '--hosts', 'all', '--json');
    expect(result.code, result.stdout).toBe(0);
    expect(Object.values(statuses(json(result)))).toEqual(['changed', 'changed', 'changed', 'changed']);
    for (const id of HOSTS) {
      expect(await rules(id)).toBe(
        '0:\tfrom all lookup local\n32766:\tfrom all lookup main\n32767:\tfrom all lookup default',
      );
      expect(await sh(id, 'ip -4 route show table 941; ip -4 route show table 942')).toBe('');
      expect(
        await sh(
          id,
          'ls /etc/ibfleet/ibfleet-routes /etc/sysctl.d/60-ibfleet-fabric.conf 2>&1 | grep -c "No such file"',
        ),
      ).toBe('2');
    }
    expect(await sh(16, 'ip -4 route show table main | grep "^172.16.0.0/16" | cut -d" " -f1-3')).toBe(
      '172.16.0.0/16 dev ibs5f0\n172.16.0.0/16 dev ibs5f1',
    );
    const verify = json<JsonRun>(await run('verify', '--hosts', '16,34', '--no-rping', '--json'));
    expect(verify.matrix!.filter((c) => c.ok).length).toBe(2);
    expect(Object.values(statuses(json(await run('rollback', '--hosts', 'all', '--json'))))).toEqual([
      'unchanged',
      'unchanged',
      'unchanged',
      'unchanged',
    ]);
  });

  it('Ctrl-C during a deploy: the host being changed finishes, no other host is touched, exit 130', async () => {
    // One host at a time, so that when the first reaches apply the others have not started.
    const child = spawn(
      process.execPath,
      [CLI, '-i', inv(), '-c', '1', 'deploy', '--playbook', noRepair, '--hosts', 'all'],
      { env: { ...process.env, NO_COLOR: '1' }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (d: Buffer) => {
        stdout += d.toString();
        if (/^\[16 [^\]]*\] apply$/m.test(stdout)) resolve();
      });
      child.on('close', () => reject(new Error(`deploy ended before host 16 reached apply:\n${stdout}\n${stderr}`)));
    });
    child.kill('SIGINT');
    const code = await exited;
    expect(code, `${stdout}\n${stderr}`).toBe(130);
    expect(stderr).toMatch(/interrupted/);
    expect(stdout).toMatch(/^\[16 [^\]]*\] changed/m);

    const after = json(await run('status', '--json'));
    expect(statuses(after)).toEqual({ 16: 'ok', 34: 'drift', 40: 'drift', 41: 'drift' });
    for (const id of [34, 40, 41]) {
      expect(await rules(id)).toBe(
        '0:\tfrom all lookup local\n32766:\tfrom all lookup main\n32767:\tfrom all lookup default',
      );
      expect(
        await sh(
          id,
          'ls /etc/ibfleet/ibfleet-routes /etc/sysctl.d/60-ibfleet-fabric.conf 2>&1 | grep -c "No such file"',
        ),
      ).toBe('2');
    }
    expect(json(await run('rollback', '--hosts', 'all', '--json')).ok).toBe(true);
  });
});
