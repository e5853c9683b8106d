import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { main } from '../../src/cli.js';
import type { Io } from '../../src/commands/context.js';
import {
  formatLabDownText,
  formatLabListText,
  formatLabUpText,
  formatRebootText,
  labListJson,
} from '../../src/lab/format.js';
import { labInfo } from '../../src/lab/info.js';
import { planLab } from '../../src/lab/plan.js';
import type { HostReboot } from '../../src/lab/reboot.js';
import { seedsFleet } from './fleet.js';

describe('what lab up prints', () => {
  it('the hosts, the files, the live failure and the next commands', () => {
    const info = labInfo(planLab({ fleet: seedsFleet(), name: 'demo' }));
    expect(formatLabUpText(info, 412)).toMatchInlineSnapshot(`
      "lab demo is up: 2 host(s) 16,34 in 0.4 s
         16  cpuserver16  198.18.0.16  Ubuntu 20.04, NetworkManager                 ibs5f0 172.16.16.1/16, ibs5f1 172.16.16.2/16
         34  memserver34  198.18.0.34  Ubuntu 18.04, netplan + networkd-dispatcher  ib0 172.16.34.1/16, ib1 172.16.34.2/16

      inventory    /run/ibfleet-lab/demo/inventory.yaml
      known_hosts  /run/ibfleet-lab/demo/known_hosts
      ssh key      /run/ibfleet-lab/demo/id_ed25519
      management   198.18.0.0/24 via ibfl-demo (this machine: 198.19.255.254)

      The seeds' failure is live: NIC 1 reaches NIC 1, anything through NIC 2 fails (strict rp_filter):
        ip netns exec ibfl-demo-h16 ping -c1 -W1 -I ibs5f0 172.16.34.1    # works
        ip netns exec ibfl-demo-h16 ping -c1 -W1 -I ibs5f1 172.16.34.2    # fails until deploy

      Next:
        ibfleet deploy -i /run/ibfleet-lab/demo/inventory.yaml --hosts 16,34
        ibfleet status -i /run/ibfleet-lab/demo/inventory.yaml
        ssh -i /run/ibfleet-lab/demo/id_ed25519 -o UserKnownHostsFile=/run/ibfleet-lab/demo/known_hosts root@198.18.0.16
        ibfleet lab exec 16 --name demo -- nmcli device    # inside the host, with its real NetworkManager
        ibfleet lab reboot 16 --name demo    # a real boot of its networking: the manager brings the NICs up, its dispatcher runs the hooks
        ibfleet lab down --name demo
      "
    `);
  });

  it("8-NIC hosts: the failure is live on NICs 2–8, shown on the GPU node's NIC 2", () => {
    const text = formatLabUpText(labInfo(planLab({ fleet: seedsFleet(), name: 'gpu', nics: { all: 8 } })), 412);
    expect(text).toContain(
      "The seeds' failure is live: NIC 1 reaches NIC 1, anything through NICs 2–8 fails (strict rp_filter):\n",
    );
    expect(text).toContain(
      '  ip netns exec ibfl-gpu-h16 ping -c1 -W1 -I ibp75s0 172.16.34.2    # fails until deploy\n',
    );
  });

  it('prints the next commands with the full path of this ibfleet when PATH has none', () => {
    const text = formatLabUpText(
      labInfo(planLab({ fleet: seedsFleet(), name: 'x' })),
      1000,
      'node /opt/ibfleet/dist/cli.js',
    );
    expect(
      text
        .split('Next:\n')[1]!
        .split('\n')
        .filter((l) => l.includes('cli.js')),
    ).toEqual([
      '  node /opt/ibfleet/dist/cli.js deploy -i /run/ibfleet-lab/x/inventory.yaml --hosts 16,34',
      '  node /opt/ibfleet/dist/cli.js status -i /run/ibfleet-lab/x/inventory.yaml',
      '  node /opt/ibfleet/dist/cli.js lab exec 16 --name x -- nmcli device    # inside the host, with its real NetworkManager',
      '  node /opt/ibfleet/dist/cli.js lab reboot 16 --name x    # a real boot of its networking: the manager brings the NICs up, its dispatcher runs the hooks',
      '  node /opt/ibfleet/dist/cli.js lab down --name x',
    ]);
  });

  it('a lab without network managers offers no reboot and no manager to look at', () => {
    const next = formatLabUpText(
      labInfo(planLab({ fleet: seedsFleet(), name: 'big', networkDaemons: false })),
      1000,
    ).split('Next:\n')[1]!;
    expect(next).toContain(
      '  ibfleet lab exec 16 --name big -- ip -4 addr    # inside the host (no network manager runs in this lab: lab up --no-managers)\n',
    );
    expect(next).not.toContain('lab reboot');
    expect(next).not.toContain('nmcli');
  });

  it('folds large labs to a dozen rows', () => {
    const info = labInfo(planLab({ fleet: seedsFleet(), hosts: Array.from({ length: 254 }, (_, i) => i + 1) }));
    const text = formatLabUpText(info, 9000);
    expect(text).toContain('lab default is up: 254 host(s) 1-254 in 9.0 s');
    expect(text).toContain('  … and 242 more (see the inventory)');
  });
});

describe('what lab list prints', () => {
  const summary = (
    name: string,
    status: 'up' | 'starting',
    hosts: number[],
    octet: number,
    hostsWithoutSshd: number[] = [],
  ) => ({
    name,
    status,
    hosts,
    mgmtSubnet: `198.18.${octet}.0/24`,
    rootLink: `ibfl-${name}`,
    inventory: `/run/ibfleet-lab/${name}/inventory.yaml`,
    knownHosts: `/run/ibfleet-lab/${name}/known_hosts`,
    identity: `/run/ibfleet-lab/${name}/id_ed25519`,
    hostsWithoutSshd,
    hostSystems: hosts.map((id) => ({ id, manager: 'netplan' })),
  });

  it('a row per lab: name, status, hosts folded, subnet, inventory; a crashed one with its remedy', () => {
    expect(
      formatLabListText([summary('demo', 'up', [16, 34, 40], 0), summary('alice-x', 'starting', [1, 2, 3, 7], 21)]),
    ).toBe(
      [
        'NAME     STATUS    HOSTS     SUBNET          INVENTORY',
        'demo     up        16,34,40  198.18.0.0/24   /run/ibfleet-lab/demo/inventory.yaml',
        'alice-x  starting  1-3,7     198.18.21.0/24  /run/ibfleet-lab/alice-x/inventory.yaml',
        'lab alice-x did not finish starting; remove it with: ibfleet lab down --name alice-x',
        '',
      ].join('\n'),
    );
    expect(formatLabListText([])).toBe('no lab is up on this machine (start one with: ibfleet lab up)\n');
    // A machine's restart ends the hosts' processes and may leave the lab's files: said, with the way back.
    expect(
      formatLabListText([summary('demo', 'up', [16, 34, 40], 0, [16, 34, 40]), summary('b', 'up', [1, 2], 9, [2])]),
    ).toBe(
      [
        'NAME  STATUS   HOSTS     SUBNET         INVENTORY',
        'demo  stopped  16,34,40  198.18.0.0/24  /run/ibfleet-lab/demo/inventory.yaml',
        'b     up       1-2       198.18.9.0/24  /run/ibfleet-lab/b/inventory.yaml',
        'lab demo: hosts 16,34,40 have no sshd running (the machine restarted, or it was stopped); start the lab again with: ibfleet lab down --name demo, then lab up',
        'lab b: host 2 has no sshd running (the machine restarted, or it was stopped); start the lab again with: ibfleet lab down --name b, then lab up',
        '',
      ].join('\n'),
    );
    expect(labListJson([summary('demo', 'up', [16, 34], 0)]).labs[0]).toEqual({
      name: 'demo',
      status: 'up',
      hosts: [16, 34],
      hostSet: '16,34',
      mgmtSubnet: '198.18.0.0/24',
      inventory: '/run/ibfleet-lab/demo/inventory.yaml',
      knownHosts: '/run/ibfleet-lab/demo/known_hosts',
      identity: '/run/ibfleet-lab/demo/id_ed25519',
      hostsWithoutSshd: [],
      hostSystems: [
        { id: 16, manager: 'netplan' },
        { id: 34, manager: 'netplan' },
      ],
    });
  });

  it("under a lab with suite hosts: each host's manager, suite and versions, hosts alike folded", () => {
    const trixie = 'NM 1.52.1, systemd 257.13, netplan 1.1.2';
    const lab = {
      ...summary('gens', 'up', [1, 2, 3, 16], 4),
      hostSystems: [
        { id: 1, manager: 'netplan', suite: 'trixie', versions: trixie },
        { id: 2, manager: 'netplan', suite: 'trixie', versions: trixie },
        { id: 3, manager: 'networkmanager', suite: 'bullseye', versions: 'NM 1.30.6' },
        { id: 16, manager: 'networkmanager' },
      ],
    };
    expect(formatLabListText([lab]).split('\n').slice(2)).toEqual([
      'lab gens:',
      `  hosts 1-2: netplan on trixie (Debian 13): ${trixie}`,
      '  host 3: networkmanager on bullseye (Debian 11): NM 1.30.6',
      "  host 16: networkmanager on this machine's own /usr",
      '',
    ]);
  });
});

describe('what lab down and lab reboot print', () => {
  it('down says what it removed, or that there was nothing', () => {
    expect(
      formatLabDownText(
        [{ name: 'x', found: false, processes: 0, namespaces: 0, mounts: 0, rootLink: false, dir: false }],
        'x',
      ),
    ).toBe('lab x is not up; nothing to remove\n');
    expect(
      formatLabDownText(
        [{ name: 'x', found: true, processes: 2, namespaces: 3, mounts: 5, rootLink: true, dir: true }],
        'x',
      ),
    ).toBe('lab x removed: 3 namespace(s), 2 process(es), 5 mount(s), its link and its state directory\n');
  });

  it('reboot says how each host booted, which hooks its dispatcher runs, and why the boot failed', () => {
    const ok = { code: 0, stdout: '', stderr: '' };
    const base = {
      stopped: 4,
      reset: ok,
      boot: ok,
      ifupRuns: [],
      hooks: [],
      skipped: [],
      settled: true,
      ms: 2345,
      ok: true,
    };
    const results: HostReboot[] = [
      {
        ...base,
        id: 34,
        name: 'memserver34',
        manager: 'netplan',
        hooks: ['50-ibfleet-routes'],
        skipped: [{ name: 'notes.txt', reason: 'not executable by its owner' }],
      },
      {
        ...base,
        id: 40,
        name: 'node40',
        manager: 'ifupdown',
        boot: { code: 1, stdout: 'run-parts: /etc/network/if-up.d/zz exited with return code 3\n', stderr: '' },
        ifupRuns: [{ script: '/etc/network/if-up.d/zz', iface: 'ib0' }],
        ok: false,
      },
    ];
    expect(formatRebootText(results)).toBe(
      [
        'host 34 (memserver34, netplan): 4 process(es) of the last boot ended; booted with netplan generate, systemd-networkd, networkd-dispatcher in 2.3 s',
        '  hooks its dispatcher runs: 50-ibfleet-routes',
        '  skipped notes.txt: not executable by its owner',
        'host 40 (node40, ifupdown): 4 process(es) of the last boot ended; boot FAILED (exit 1)',
        '          run-parts: /etc/network/if-up.d/zz exited with return code 3',
        '  ifup ran /etc/network/if-up.d/zz (IFACE=ib0)',
        '',
      ].join('\n'),
    );
  });
});

describe('ibfleet lab on the command line', () => {
  async function ibfleet(argv: readonly string[]) {
    let stdout = '';
    let stderr = '';
    const io = {
      stdout: { write: (chunk: string) => (stdout += chunk), isTTY: false },
      stderr: { write: (chunk: string) => (stderr += chunk), isTTY: false },
      stdin: Readable.from([]),
      env: {},
      cwd: process.cwd(),
      interruptSignal: () => new AbortController().signal,
    } as unknown as Io;
    const code = await main(argv, io);
    return { code, stdout, stderr };
  }

  it.each([
    [['lab', 'up', '--hosts', '16,x'], /--hosts "x": lab hosts are host numbers and ranges/],
    [['lab', 'up', '--manager', '34=systemd'], /unknown manager "systemd"/],
    [['lab', 'up', '--mgmt-subnet', '198.18.0.0/28'], /between \/8 and \/24/],
    [['lab', 'up', '--name', 'Bad'], /lab name "Bad" is not allowed/],
    [
      ['lab', 'up', '--suite', 'sid'],
      /--suite sid: "sid" is not a suite the lab builds; use one of bullseye, bookworm, trixie/,
    ],
    [
      ['lab', 'up', '--suite', '16=buster'],
      /--suite 16=buster: "buster" is not a suite the lab builds; use one of bullseye, bookworm, trixie/,
    ],
    [
      ['lab', 'up', '--hosts', '16,34', '--suite', '40=trixie'],
      /--suite names host 40, which is not in the lab \(--hosts 16,34\)/,
    ],
  ])('%j is a usage error (exit 2, nothing created)', async (argv, message) => {
    const result = await ibfleet(argv);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(message);
  });
});
