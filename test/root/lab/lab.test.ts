/**
 * The rehearsal lab end to end, as root: one host per network manager (16 NetworkManager, 34
 * netplan, 40 ifupdown) with real namespaces, real sshd and a real ifup.
 */
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { UsageError } from '../../../src/errors.js';
import { loadInventory } from '../../../src/inventory/load.js';
import { labDown, labExec, labReboot, labUp } from '../../../src/lab/index.js';
import { hostPaths } from '../../../src/lab/names.js';
import { run } from '../../../src/lab/system.js';
import { ibfleet } from '../../helpers/cli.js';
import { IS_ROOT, labSsh, noteIfNotRoot, testLab, useLab } from '../../lab/helpers.js';

const LAB = testLab('e2e-lab');
const NAME = LAB.name;
const SUBNET = LAB.mgmtSubnet;
const CLASH = testLab('e2e-lab-clash');

noteIfNotRoot('test/root/lab/lab.test.ts (lab up, ssh, reboot, down)');

describe.skipIf(!IS_ROOT)('ibfleet lab (needs root)', () => {
  const lab = useLab({ name: NAME, mgmtSubnet: SUBNET, hosts: [16, 34, 40], managers: { 40: 'ifupdown' } });
  const host = (id: number) => lab().hosts.find((h) => h.id === id)!;
  const sh = (id: number, script: string, env?: Record<string, string>) =>
    labExec(NAME, id, ['sh', '-c', script], env ? { env } : {});
  const ping = async (from: number, iface: string, to: string) =>
    (await labExec(NAME, from, ['ping', '-c1', '-W1', '-I', iface, to])).code === 0;

  it('brings up one host per manager with its management address and inventory interface names', () => {
    expect(lab().hosts.map((h) => [h.id, h.name, h.manager, h.address, h.interfaces.join(',')])).toEqual([
      [16, 'cpuserver16', 'networkmanager', LAB.address(16), 'ibs5f0,ibs5f1'],
      [34, 'memserver34', 'netplan', LAB.address(34), 'ib0,ib1'],
      [40, 'node40', 'ifupdown', LAB.address(40), 'ib0,ib1'],
    ]);
  });

  it("shows the seeds' failure before any fix: NIC 1 reaches NIC 1, every path through a NIC 2 fails", async () => {
    const checks: Promise<[string, boolean, boolean]>[] = [];
    for (const a of lab().hosts) {
      for (const b of lab().hosts.filter((x) => x.id !== a.id)) {
        const [a1, a2, b1, b2] = [a.nics[0]!, a.nics[1]!, b.nics[0]!, b.nics[1]!];
        const check = (iface: string, to: string, expected: boolean) =>
          ping(a.id, iface, to).then((ok): [string, boolean, boolean] => [`${a.id} ${iface} -> ${to}`, ok, expected]);
        checks.push(
          check(a1.iface, b1.address, true),
          check(a2.iface, b2.address, false),
          check(a1.iface, b2.address, false),
          check(a2.iface, b1.address, false),
        );
      }
    }
    const results = await Promise.all(checks);
    expect(results.filter(([, ok, expected]) => ok !== expected)).toEqual([]);
    // The cause, as in the seeds: two routes to the fabric subnet in main, NIC 1's first.
    const routes = await labExec(NAME, 34, ['ip', '-4', 'route', 'show', '172.16.0.0/16']);
    expect(
      routes.stdout
        .trim()
        .split('\n')
        .map((l) => l.split(' ')[2]),
    ).toEqual(['ib0', 'ib1']);
  });

  it("switches frames without the machine's bridge firewall calls (br_netfilter): an ARP broadcast is a copy per port", async () => {
    const names = ['arptables', 'iptables', 'ip6tables'].map((t) => `/proc/sys/net/bridge/bridge-nf-call-${t}`);
    if (!existsSync(names[0]!)) return; // no br_netfilter on this machine: nothing to turn off
    const read = await run(['ip', 'netns', 'exec', `ibfl-${NAME}-sw`, 'cat', ...names]);
    expect(read.stdout.trim().split('\n')).toEqual(['0', '0', '0']);
  });

  it("accepts the lab key over SSH with strict host-key checking against the lab's known_hosts", async () => {
    const logins = await Promise.all(lab().hosts.map((h) => labSsh(lab(), h.id, 'hostname')));
    expect(logins.map((r) => [r.code, r.stdout.trim()])).toEqual([
      [0, 'cpuserver16'],
      [0, 'memserver34'],
      [0, 'node40'],
    ]);
    expect(readFileSync(host(34).sshdLog, 'utf8')).toMatch(/Accepted publickey for root from 198\.19\.255\.254/);
    // A host key that is not the one recorded is refused: give host 34 the key of host 16.
    const wrong = join(tmpdir(), `ibfleet-${NAME}-wrong-known-hosts`);
    const keyOf16 = readFileSync(lab().knownHostsPath, 'utf8')
      .split('\n')
      .find((l) => l.startsWith(`${LAB.address(16)} `))!;
    writeFileSync(wrong, `${keyOf16.replace(LAB.address(16), LAB.address(34))}\n`);
    const refused = await labSsh(lab(), 34, 'true', wrong).finally(() => rmSync(wrong, { force: true }));
    expect(refused.code).toBe(255);
    expect(refused.stderr).toMatch(/HOST IDENTIFICATION HAS CHANGED|Host key verification failed/);
  });

  it('gives each host its own /etc, /root and hostname', async () => {
    const marker = `/etc/ibfleet-lab-isolation-${process.pid}`;
    expect((await sh(16, `echo from-16 > ${marker} && cat ${marker}`)).stdout).toBe('from-16\n');
    expect((await sh(34, `test -e ${marker}`)).code).toBe(1);
    expect(existsSync(marker)).toBe(false);
    // The machine's shell start-up files are not the host's: /root holds only .ssh.
    expect((await sh(34, 'ls -A /root')).stdout).toBe('.ssh\n');
    expect((await labExec(NAME, 40, ['hostname'])).stdout).toBe('node40\n');
  });

  it("emulates each host's OS and network manager, and none of the machine's hooks", async () => {
    const os = await Promise.all([16, 34, 40].map((id) => sh(id, '. /etc/os-release && echo "$PRETTY_NAME"')));
    expect(os.map((r) => r.stdout.trim())).toEqual([
      'Ubuntu 20.04.6 LTS',
      'Ubuntu 18.04.6 LTS',
      'Debian GNU/Linux 12 (bookworm)',
    ]);
    expect(
      (
        await sh(
          16,
          'ls /etc/NetworkManager/system-connections /etc/netplan; test -d /run/NetworkManager && test ! -e /etc/network/interfaces && echo nm',
        )
      ).stdout,
    ).toBe(
      '/etc/NetworkManager/system-connections:\nibs5f0.nmconnection\nibs5f1.nmconnection\n\n/etc/netplan:\n01-network-manager-all.yaml\nnm\n',
    );
    expect(
      (
        await sh(
          34,
          'cat /etc/netplan/*.yaml | grep -c "addresses:"; ls -A /etc/networkd-dispatcher/routable.d; test -d /run/systemd/netif/links && echo networkd',
        )
      ).stdout,
    ).toBe('3\nnetworkd\n');
    expect(
      (await sh(40, 'ls /run/network; ls -A /etc/network/if-up.d; test ! -e /etc/netplan && echo ifupdown')).stdout,
    ).toBe('ifstate\nifstate.ib0\nifstate.ib1\nifstate.lo\nifupdown\n');
  });

  it('runs the real managers: NetworkManager and networkd configured the fabric NICs, the management link is left to the lab', async () => {
    expect((await labExec(NAME, 16, ['nmcli', '-t', '-f', 'DEVICE,STATE,CONNECTION', 'device'])).stdout).toBe(
      'ibs5f0:connected:ibs5f0\nibs5f1:connected:ibs5f1\nmgmt0:unmanaged:\nlo:unmanaged:\n',
    );
    // NetworkManager adds its addresses with noprefixroute and its own subnet route per NIC.
    expect(
      (
        await sh(
          16,
          'ip -4 -o addr show dev ibs5f1 | grep -o "172.16.16.2/16 .*noprefixroute"; ip -4 route show 172.16.0.0/16',
        )
      ).stdout,
    ).toMatch(
      /^172\.16\.16\.2\/16 .*noprefixroute\n172\.16\.0\.0\/16 dev ibs5f0 proto kernel scope link src 172\.16\.16\.1 metric 100 \n172\.16\.0\.0\/16 dev ibs5f1 proto kernel scope link src 172\.16\.16\.2 metric 101 \n$/,
    );
    const links = (await labExec(NAME, 34, ['networkctl', 'list', '--no-legend'])).stdout;
    for (const managed of ['ib0', 'ib1']) expect(links).toMatch(new RegExp(` ${managed} +ether +routable +configur`));
    expect(links).toMatch(/ mgmt0 +ether +routable +unmanaged/);
    expect((await sh(34, 'ls /run/systemd/network; stat -c %U /run/systemd/netif')).stdout).toBe(
      '10-netplan-ib0.network\n10-netplan-ib1.network\nsystemd-network\n',
    );
  });

  it('writes a lab inventory that loads and leaves the managers to detection', () => {
    const fleet = loadInventory(readFileSync(lab().inventoryPath, 'utf8'), lab().inventoryPath);
    expect(fleet.hosts.map((h) => [h.id, h.address, h.manager])).toEqual([
      [16, LAB.address(16), 'auto'],
      [34, LAB.address(34), 'auto'],
      [40, LAB.address(40), 'auto'],
    ]);
    expect(fleet.ssh.knownHosts).toBe(lab().knownHostsPath);
    expect(fleet.ssh.identityFile).toBe(lab().identityPath);
    expect(readFileSync(lab().knownHostsPath, 'utf8').trim().split('\n')).toHaveLength(3);
  });

  it('refuses a second lab of the same name, or on a management subnet already in use', async () => {
    await expect(labUp({ name: NAME, mgmtSubnet: CLASH.mgmtSubnet, hosts: [1] })).rejects.toThrow(
      `lab ${NAME} already exists`,
    );
    // The lab that holds the subnet is named, with the command that removes it.
    await expect(labUp({ name: CLASH.name, mgmtSubnet: SUBNET, hosts: [1] })).rejects.toThrow(
      new RegExp(
        `management subnet ${SUBNET} is held by lab ${NAME} \\(up, hosts 16,34,40, ${SUBNET}, inventory ${lab().inventoryPath}\\).* ibfleet lab down --name ${NAME}$`,
      ),
    );
    expect(existsSync(`/run/ibfleet-lab/${CLASH.name}`)).toBe(false);
  });

  it('lab list shows it; lab reboot takes --hosts selections; a lab that is not up names the ones that are', async () => {
    const listed = await ibfleet(['lab', 'list', '--json']);
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.stdout).labs).toContainEqual(
      expect.objectContaining({
        name: NAME,
        status: 'up',
        hosts: [16, 34, 40],
        hostSet: '16,34,40',
        mgmtSubnet: SUBNET,
        inventory: lab().inventoryPath,
      }),
    );
    const text = await ibfleet(['lab', 'list']);
    expect(text.stdout).toMatch(
      new RegExp(
        `^NAME +STATUS +HOSTS +SUBNET +INVENTORY\n(.*\n)*${NAME} +up +16,34,40 +${SUBNET.replace(/\./g, '\\.')} +${lab().inventoryPath}\n`,
      ),
    );

    const rebooted = await ibfleet(['lab', 'reboot', 'memserver34,node40', '--name', NAME, '--json']);
    expect(rebooted.code).toBe(0);
    expect(JSON.parse(rebooted.stdout).hosts.map((h: { id: number }) => h.id)).toEqual([34, 40]);
    const byRole = await ibfleet(['lab', 'reboot', '@cpu', '--name', NAME, '--json']);
    expect(JSON.parse(byRole.stdout).hosts.map((h: { id: number }) => h.id)).toEqual([16]);
    const unknown = await ibfleet(['lab', 'reboot', 'memserver43', '--name', NAME]);
    expect([unknown.code, unknown.stderr]).toEqual([2, expect.stringMatching(/memserver43.*memserver34/)]);

    // The demo never takes down a lab it finds: it refuses, naming it and how to remove it.
    const demo = (...args: string[]) =>
      run(['bash', join(process.cwd(), 'scripts/demo'), ...args], {
        timeoutMs: 60_000,
        env: { PATH: process.env.PATH!, NO_COLOR: '1' },
      });
    const sameName = await demo('--name', NAME, '--mgmt-subnet', CLASH.mgmtSubnet);
    expect(sameName.code).toBe(1);
    expect(sameName.stderr).toContain(
      `lab ${NAME} already exists (/run/ibfleet-lab/${NAME}); use it (inventory: ${lab().inventoryPath}) or, if it is yours, remove it first with: ibfleet lab down --name ${NAME}`,
    );
    const sameSubnet = await demo('--name', CLASH.name, '--mgmt-subnet', SUBNET);
    expect(sameSubnet.code).toBe(1);
    expect(sameSubnet.stderr).toContain(`is held by lab ${NAME}`);
    expect(sameSubnet.stderr).toContain('npm run demo -- --name mine --mgmt-subnet 198.18.7.0/24');
    expect(existsSync(`/run/ibfleet-lab/${CLASH.name}`)).toBe(false);
    expect((await labSsh(lab(), 34, 'true')).code).toBe(0);

    const notUp = await ibfleet(['lab', 'reboot', 'all', '--name', CLASH.name]);
    expect(notUp.code).toBe(2);
    expect(notUp.stderr).toMatch(
      new RegExp(
        `lab ${CLASH.name} is not up \\(labs up here: .*${NAME} \\(hosts 16,34,40, ${SUBNET}\\).*\\); start it with: ibfleet lab up --name ${CLASH.name}`,
      ),
    );

    // Without --name the lab is "default"; with this lab up (and maybe others), the fix is its --name.
    // Skipped where a default lab is up: the command would then reboot one of its hosts.
    if (!existsSync('/run/ibfleet-lab/default')) {
      const noName = await ibfleet(['lab', 'reboot', '16']);
      expect(noName.code).toBe(2);
      expect(noName.stderr).toContain('without --name the lab is "default", which is not up;');
      expect(noName.stderr).toMatch(
        new RegExp(`add --name (with one of (.*, )?)?${NAME}\\b.*\\(or start the default lab with: ibfleet lab up\\)`),
      );
    }
  });

  it('reboot restores boot state, then runs the installed hook the way each manager would', async () => {
    const hook =
      '#!/bin/sh\nprintf "%s|%s|%s|%s|%s|%s\\n" "$*" "${IFACE:-}" "${STATE:-}" "${MODE:-}${PHASE:+/$PHASE}" "${NM_DISPATCHER_ACTION:-}" "${DEVICE_IFACE:-}" >> /root/hook.log\n';
    const install = (id: number, path: string, mode = '755') =>
      labExec(NAME, id, ['sh', '-c', `cat > ${path} && chmod ${mode} ${path}`], { input: hook });
    await install(16, '/etc/NetworkManager/dispatcher.d/50-test');
    await install(34, '/etc/networkd-dispatcher/routable.d/50-test');
    await install(34, '/etc/networkd-dispatcher/routable.d/60-not-executable', '644');
    await install(34, '/etc/networkd-dispatcher/routable.d/70-group-writable', '775');
    await install(40, '/etc/network/if-up.d/test');
    // What a deploy would leave behind, applied by hand on 34.
    const fix = await sh(
      34,
      'ip rule add from 172.16.34.2 lookup 942 && ip route add 172.16.0.0/16 dev ib1 src 172.16.34.2 table 942 && ip route del 172.16.0.0/16 dev ib1 && echo 2 > /proc/sys/net/ipv4/conf/ib1/rp_filter',
    );
    expect(fix.code).toBe(0);

    const results = await labReboot(NAME, [16, 34, 40]);
    expect(results.map((r) => [r.id, r.ok, r.reset.code, r.boot.code])).toEqual([
      [16, true, 0, 0],
      [34, true, 0, 0],
      [40, true, 0, 0],
    ]);
    // dbus-daemon, NetworkManager and the timer runner (nm-dispatcher too if it has not idled out yet);
    // dbus-daemon, networkd, networkd-dispatcher and the timer runner; the timer runner.
    expect(results.map((r) => r.stopped >= [3, 4, 1][results.indexOf(r)]!)).toEqual([true, true, true]);

    expect((await labExec(NAME, 34, ['ip', '-4', 'rule', 'show'])).stdout).toBe(
      '0:\tfrom all lookup local\n32766:\tfrom all lookup main\n32767:\tfrom all lookup default\n',
    );
    expect((await labExec(NAME, 34, ['ip', '-4', 'route', 'show', 'table', '942'])).stdout).toBe('');
    expect((await labExec(NAME, 34, ['ip', '-4', 'route', 'show', '172.16.0.0/16'])).stdout).toBe(
      '172.16.0.0/16 dev ib0 proto kernel scope link src 172.16.34.1 \n172.16.0.0/16 dev ib1 proto kernel scope link src 172.16.34.2 \n',
    );
    expect((await sh(34, 'cat /proc/sys/net/ipv4/conf/ib1/rp_filter')).stdout).toBe('1\n');
    expect(await ping(34, 'ib1', '172.16.16.2')).toBe(false);

    const log = async (id: number) => (await sh(id, 'cat /root/hook.log')).stdout.trim().split('\n');
    // The real networkd-dispatcher: routable.d once per link that becomes routable, in the order they do.
    expect((await log(34)).sort()).toEqual(['|ib0|routable|||', '|ib1|routable|||', '|mgmt0|routable|||']);
    expect(results[1]!.hooks).toEqual(['50-test']);
    expect(results[1]!.skipped).toEqual([
      { name: '60-not-executable', reason: 'not executable by its owner' },
      { name: '70-group-writable', reason: 'writable by group or others' },
    ]);
    // The real NetworkManager-dispatcher, D-Bus-activated: "<iface> up" per activated device, with
    // DEVICE_IFACE and NM_DISPATCHER_ACTION; nothing for the unmanaged management link.
    const nm = await log(16);
    expect(nm.filter((l) => l.includes(' up|')).sort()).toEqual(['ibs5f0 up||||up|ibs5f0', 'ibs5f1 up||||up|ibs5f1']);
    expect(nm.filter((l) => l.includes('mgmt0'))).toEqual([]);
    // A real `ifup -a`: lo and the NICs are configured again (NIC 1 first), then if-up.d runs once more for --all.
    expect(await log(40)).toEqual([
      '|lo||start/post-up||',
      '|ib0||start/post-up||',
      '|ib1||start/post-up||',
      '|--all||start/post-up||',
    ]);
    expect(results[2]!.ifupRuns).toEqual([
      { script: '/etc/network/if-up.d/test', iface: 'lo' },
      { script: '/etc/network/if-up.d/test', iface: 'ib0' },
      { script: '/etc/network/if-up.d/test', iface: 'ib1' },
      { script: '/etc/network/if-up.d/test', iface: '--all' },
    ]);
  });

  it('reboot reports a failing hook (ifup fails when an if-up.d script does)', async () => {
    await labExec(NAME, 40, [
      'sh',
      '-c',
      'printf "#!/bin/sh\\necho broken >&2\\nexit 3\\n" > /etc/network/if-up.d/zz-fails && chmod 755 /etc/network/if-up.d/zz-fails',
    ]);
    const [result] = await labReboot(NAME, [40]);
    expect(result!.ok).toBe(false);
    expect(result!.boot.code).not.toBe(0);
    expect(result!.boot.stdout).toContain('broken');
    await expect(labReboot(NAME, [41])).rejects.toThrow(UsageError);
  });

  it("a host whose sshd is gone (a machine's restart ends the hosts' processes, the lab's files may stay): lab list names it and the way back", async () => {
    const pid = Number(readFileSync(hostPaths(NAME, 40).sshdPid, 'utf8'));
    process.kill(pid, 'SIGTERM');
    for (let i = 0; i < 50 && existsSync(`/proc/${pid}`); i++) await new Promise((r) => setTimeout(r, 100));
    const listed = JSON.parse((await ibfleet(['lab', 'list', '--json'])).stdout).labs.find(
      (l: { name: string }) => l.name === NAME,
    );
    expect([listed.status, listed.hostsWithoutSshd]).toEqual(['up', [40]]);
    expect((await ibfleet(['lab', 'list'])).stdout).toContain(
      `lab ${NAME}: host 40 has no sshd running (the machine restarted, or it was stopped); start the lab again with: ibfleet lab down --name ${NAME}, then lab up\n`,
    );
  });

  it('down removes every namespace, link, process, mount and file, and a second down finds nothing', async () => {
    // (The test before stopped host 40's sshd, which took its pid file with it.)
    const sshdPids = lab().hosts.flatMap((h) =>
      existsSync(hostPaths(NAME, h.id).sshdPid) ? [Number(readFileSync(hostPaths(NAME, h.id).sshdPid, 'utf8'))] : [],
    );
    expect(sshdPids).toHaveLength(2);
    expect((await labDown(NAME)).found).toBe(true);

    expect((await readdir('/run/netns')).filter((ns) => ns.startsWith(`ibfl-${NAME}-`))).toEqual([]);
    expect(existsSync(`/sys/class/net/${lab().rootLink}`)).toBe(false);
    expect(readFileSync('/proc/self/mountinfo', 'utf8')).not.toContain(lab().dir);
    expect(existsSync(lab().dir)).toBe(false);
    for (const pid of sshdPids) expect(existsSync(`/proc/${pid}/ns/net`), `sshd ${pid} still runs`).toBe(false);
    expect((await run(['ip', '-4', 'route', 'show', SUBNET])).stdout).toBe('');

    expect(await labDown(NAME)).toMatchObject({ found: false });
  });
});

describe.skipIf(!IS_ROOT)('lab down after a crashed lab up (needs root)', () => {
  it('removes leftovers found by name, after up refused to build over them', async () => {
    const { name, mgmtSubnet } = testLab('e2e-crashed');
    await labDown(name);
    await run(['ip', 'netns', 'add', `ibfl-${name}-sw`]);
    await run(['ip', 'netns', 'add', `ibfl-${name}-h7`]);
    await run(['ip', '-n', `ibfl-${name}-h7`, 'link', 'add', 'ib0', 'type', 'dummy']);
    try {
      await expect(labUp({ name, mgmtSubnet, hosts: [7] })).rejects.toThrow(
        new RegExp(`leftovers of an earlier lab ${name} .* ibfleet lab down --name ${name}`),
      );
      expect(await labDown(name)).toMatchObject({ found: true, namespaces: 2 });
      expect((await readdir('/run/netns')).filter((ns) => ns.startsWith(`ibfl-${name}-`))).toEqual([]);
      expect(await labDown(name)).toMatchObject({ found: false });
    } finally {
      await labDown(name);
    }
  });
});
