/**
 * The CLI end to end through `main(argv, io)` with a fake Io: what `ibfleet hosts` and
 * `ibfleet render` print, write and exit with. No SSH is involved in either command.
 */
import {
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { buildProgram, main, readCommandLine } from '../../src/cli.js';
import type { Io } from '../../src/commands/context.js';
import { loadInventory } from '../../src/inventory/load.js';
import { PACKAGE_ROOT } from '../../src/package-root.js';
import { VERSION } from '../../src/version.js';
import { filesOf as renderHostFiles, hostOf, loadFixturePlaybook } from '../fixtures/fixtures.js';

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

async function ibfleet(
  argv: readonly string[],
  options: { cwd?: string; env?: Record<string, string> } = {},
): Promise<Run> {
  let stdout = '';
  let stderr = '';
  const io: Io = {
    stdout: { write: (chunk: string) => (stdout += chunk), isTTY: false },
    stderr: { write: (chunk: string) => (stderr += chunk), isTTY: false },
    stdin: Readable.from([]),
    env: options.env ?? {},
    cwd: options.cwd ?? PACKAGE_ROOT,
    interruptSignal: () => new AbortController().signal,
  };
  const code = await main(argv, io);
  return { code, stdout, stderr };
}

const scratch = mkdtempSync(join(tmpdir(), 'ibfleet-cli-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const shippedFleet = () =>
  loadInventory(readFileSync(join(PACKAGE_ROOT, 'inventory/fleet.yaml'), 'utf8'), 'inventory/fleet.yaml');
const words = (line: string) => line.trim().split(/\s+/);

describe("ibfleet hosts (the shipped example inventory/fleet.yaml: the seeds' two machines)", () => {
  it('prints one row per NIC with the derived address, table and priority, then a summary', async () => {
    const { code, stdout, stderr } = await ibfleet(['hosts']);
    expect(code).toBe(0);
    expect(stderr).toBe('');
    const [header, ...rows] = stdout.trimEnd().split('\n');
    expect(words(header!)).toEqual([
      'HOST',
      'NAME',
      'ROLE',
      'MANAGER',
      'SSH',
      'NIC',
      'IFACE',
      'ADDRESS',
      'TABLE',
      'PRIO',
    ]);
    expect(rows.slice(0, 4).map(words)).toEqual([
      [
        '16',
        'cpuserver16',
        'cpu',
        'networkmanager',
        'root@10.208.130.16',
        '1',
        'ibs5f0',
        '172.16.16.1/16',
        '941',
        '941',
      ],
      ['2', 'ibs5f1', '172.16.16.2/16', '942', '942'],
      ['34', 'memserver34', 'mem', 'netplan', 'root@10.208.130.34', '1', 'ib0', '172.16.34.1/16', '941', '941'],
      ['2', 'ib1', '172.16.34.2/16', '942', '942'],
    ]);
    expect(rows[4]).toMatch(
      /^2 hosts \(16,34\) · fabric 172\.16\.0\.0\/16, 2 NICs, tables 941\.\.942 · pairs: alice \(cpu 16, mem 34\)$/,
    );
  });

  it('a mixed fleet: an 8-NIC GPU node beside a 2-NIC server, each row its own NIC, the summary each count', async () => {
    const file = join(scratch, 'mixed.yaml');
    writeFileSync(
      file,
      [
        'fabric: { subnet: 172.16.0.0/16 }',
        'hosts:',
        '  16: { name: gpu16, address: 10.0.0.16, nics: 8, interfaces: [ibp12s0, ibp75s0, ibp141s0, ibp186s0, ibp18s0, ibp84s0, ibp151s0, ibp200s0] }',
        '  34: { name: memserver34, address: 10.0.0.34 }',
        '',
      ].join('\n'),
    );
    const { code, stdout } = await ibfleet(['hosts', '-i', file]);
    expect(code).toBe(0);
    const rows = stdout.trimEnd().split('\n').slice(1);
    expect(
      rows
        .slice(0, -1)
        .map(words)
        .map((r) => r.slice(-5).join(' ')),
    ).toEqual([
      ...['ibp12s0', 'ibp75s0', 'ibp141s0', 'ibp186s0', 'ibp18s0', 'ibp84s0', 'ibp151s0', 'ibp200s0'].map(
        (iface, i) => `${i + 1} ${iface} 172.16.16.${i + 1}/16 ${941 + i} ${941 + i}`,
      ),
      '1 ib0 172.16.34.1/16 941 941',
      '2 ib1 172.16.34.2/16 942 942',
    ]);
    expect(rows.at(-1)).toBe(
      '2 hosts (16,34) · fabric 172.16.0.0/16, 8 NICs on 16, 2 on 34 (10 in all), tables 941..948',
    );
  });

  it('--json gives the same as data', async () => {
    const { code, stdout } = await ibfleet(['hosts', '--json']);
    expect(code).toBe(0);
    const doc = JSON.parse(stdout);
    expect(doc).toMatchObject({
      command: 'hosts',
      ok: true,
      fabric: { subnet: '172.16.0.0/16', nics: 2, tableBase: 940 },
    });
    expect(
      doc.hosts.map((h: { id: number; name: string; role: string; manager: string }) => [
        h.id,
        h.name,
        h.role,
        h.manager,
      ]),
    ).toEqual([
      [16, 'cpuserver16', 'cpu', 'networkmanager'],
      [34, 'memserver34', 'mem', 'netplan'],
    ]);
    expect(doc.hosts[0].nics).toEqual([
      { nic: 1, iface: 'ibs5f0', ip: '172.16.16.1', prefixLength: 16, table: 941, priority: 941 },
      { nic: 2, iface: 'ibs5f1', ip: '172.16.16.2', prefixLength: 16, table: 942, priority: 942 },
    ]);
    expect(doc.hosts[1].nics).toEqual([
      { nic: 1, iface: 'ib0', ip: '172.16.34.1', prefixLength: 16, table: 941, priority: 941 },
      { nic: 2, iface: 'ib1', ip: '172.16.34.2', prefixLength: 16, table: 942, priority: 942 },
    ]);
    expect(doc.hosts[1].ssh).toMatchObject({ user: 'root', target: '10.208.130.34', port: 22 });
    expect(doc.pairs).toEqual([{ owner: 'alice', cpu: 16, mem: 34 }]);
  });

  it('--hosts narrows the table (by name, here) and the summary', async () => {
    const { code, stdout } = await ibfleet(['hosts', '--hosts', 'memserver34', '--json']);
    expect(code).toBe(0);
    expect(JSON.parse(stdout).hosts.map((h: { id: number }) => h.id)).toEqual([34]);
  });

  it('reads $IBFLEET_INVENTORY when -i is not given', async () => {
    const path = join(scratch, 'one-host.yaml');
    writeFileSync(path, 'fabric:\n  subnet: 10.20.0.0/16\nhosts:\n  7: { name: lonely7 }\n');
    const { code, stdout } = await ibfleet(['hosts', '--json'], { env: { IBFLEET_INVENTORY: path } });
    expect(code).toBe(0);
    expect(JSON.parse(stdout).hosts[0]).toMatchObject({
      id: 7,
      name: 'lonely7',
      nics: [{ ip: '10.20.7.1' }, { ip: '10.20.7.2' }],
    });
  });
});

describe('ibfleet render', () => {
  it('--hosts 34 lists the files host 34 receives, each with its remote path, owner and mode', async () => {
    const { code, stdout, stderr } = await ibfleet(['render', '--hosts', '34']);
    expect(code).toBe(0);
    expect(stderr).toBe('');
    expect(stdout.split('\n').filter((l) => l.startsWith('==> ') || l.startsWith('--- '))).toEqual([
      '==> host 34 (memserver34) · manager netplan · 10 files and commands',
      '--- /etc/ibfleet/routes.conf  (root:root 0644, routing-data)',
      '--- /etc/ibfleet/ibfleet-routes  (root:root 0755, routing-script)',
      '--- /etc/ibfleet/owned  (root:root 0644, record)',
      '--- /etc/sysctl.d/60-ibfleet-fabric.conf  (root:root 0644, sysctl)',
      '--- /etc/networkd-dispatcher/routable.d/50-ibfleet-routes  (root:root 0755, hook, netplan)',
      '--- /etc/networkd-dispatcher/configured.d/50-ibfleet-routes  (root:root 0755, hook, netplan)',
      '--- /etc/systemd/networkd.conf.d/60-ibfleet.conf  (root:root 0644, networkd-conf, netplan)',
      '--- /etc/systemd/system/ibfleet-routes-repair.service  (root:root 0644, repair)',
      '--- /etc/systemd/system/ibfleet-routes-repair.timer  (root:root 0644, repair)',
      '--- /etc/systemd/system/timers.target.d/ibfleet-routes-repair.conf  (root:root 0644, repair)',
      '--- links: /etc/netplan/50-ibfleet-links.yaml, for each fabric NIC that does not carry its convention address yet (a NIC that does is left as it is; deploy --dry-run --show-scripts shows what a host gets)',
    ]);
  });

  it("prints each file's exact content", async () => {
    const { stdout } = await ibfleet(['render', '--hosts', '34']);
    const fleet = shippedFleet();
    for (const file of renderHostFiles(hostOf(fleet, 34), fleet, loadFixturePlaybook(), 'netplan'))
      expect(stdout).toContain(file.content);
  });

  it('--json carries path, mode, role and content per file', async () => {
    const { code, stdout } = await ibfleet(['render', '--hosts', '16', '--json']);
    expect(code).toBe(0);
    const doc = JSON.parse(stdout);
    expect(doc).toMatchObject({ command: 'render', ok: true });
    expect(
      doc.hosts[0].files.map((f: { path: string; mode: string; role: string }) => [f.path, f.mode, f.role]),
    ).toEqual([
      ['/etc/ibfleet/routes.conf', '0644', 'routing-data'],
      ['/etc/ibfleet/ibfleet-routes', '0755', 'routing-script'],
      ['/etc/ibfleet/owned', '0644', 'record'],
      ['/etc/sysctl.d/60-ibfleet-fabric.conf', '0644', 'sysctl'],
      ['/etc/NetworkManager/dispatcher.d/50-ibfleet-routes', '0755', 'hook'],
      ['/etc/systemd/system/ibfleet-routes-repair.service', '0644', 'repair'],
      ['/etc/systemd/system/ibfleet-routes-repair.timer', '0644', 'repair'],
      ['/etc/systemd/system/timers.target.d/ibfleet-routes-repair.conf', '0644', 'repair'],
    ]);
    expect(doc.hosts[0].files[0].content).toContain('\nnic ibs5f1 172.16.16.2 942 942 2 ');
  });

  it('--out DIR writes DIR/memserver34/<remote path> with modes 0755 and 0644 and the exact content', async () => {
    const out = join(scratch, 'out');
    const { code, stdout } = await ibfleet(['render', '--hosts', '34', '--out', out]);
    expect(code).toBe(0);
    const fleet = shippedFleet();
    const expected = renderHostFiles(hostOf(fleet, 34), fleet, loadFixturePlaybook(), 'netplan');
    for (const file of expected) {
      const target = join(out, 'memserver34', file.path);
      expect(readFileSync(target, 'utf8')).toBe(file.content);
      expect(statSync(target).mode & 0o777).toBe(file.mode);
    }
    expect(expected.map((f) => f.mode)).toEqual([0o644, 0o755, 0o644, 0o644, 0o755, 0o755, 0o644, 0o644, 0o644, 0o644]);
    expect(stdout.trimEnd().split('\n')).toEqual(
      expected.map((f) => `wrote ${join(out, 'memserver34', f.path)} (${f.mode === 0o755 ? '0755' : '0644'})`),
    );
  });

  it('--out is relative to the working directory, and writing twice gives the same files', async () => {
    const cwd = mkdtempSync(join(scratch, 'cwd-'));
    const inventory = join(PACKAGE_ROOT, 'inventory/fleet.yaml');
    expect((await ibfleet(['-i', inventory, 'render', '--hosts', '16,34', '--out', 'rendered'], { cwd })).code).toBe(0);
    const first = readFileSync(join(cwd, 'rendered/cpuserver16/etc/ibfleet/ibfleet-routes'), 'utf8');
    expect((await ibfleet(['-i', inventory, 'render', '--hosts', '16,34', '--out', 'rendered'], { cwd })).code).toBe(0);
    expect(readFileSync(join(cwd, 'rendered/cpuserver16/etc/ibfleet/ibfleet-routes'), 'utf8')).toBe(first);
    expect(
      statSync(join(cwd, 'rendered/memserver34/etc/networkd-dispatcher/routable.d/50-ibfleet-routes')).mode & 0o777,
    ).toBe(0o755);
    expect(
      statSync(join(cwd, 'rendered/cpuserver16/etc/NetworkManager/dispatcher.d/50-ibfleet-routes')).mode & 0o777,
    ).toBe(0o755);
  });
});

describe('exit codes and messages', () => {
  it('an invalid inventory: exit 2, each problem as file:line:col, nothing printed on stdout', async () => {
    const path = join(scratch, 'bad.yaml');
    writeFileSync(
      path,
      'fabric:\n  subnet: 172.16.0.0/16\nhosts:\n  16: { name: a }\n  34: { name: b, interfaces: ["ib0;reboot", ib1] }\n',
    );
    for (const command of [['hosts'], ['render', '--hosts', '34']]) {
      const { code, stdout, stderr } = await ibfleet(['-i', path, ...command]);
      expect(code).toBe(2);
      expect(stdout).toBe('');
      expect(stderr.split('\n')).toEqual([
        `${path}:5:31: hosts.34.interfaces[0] = "ib0;reboot": not a valid Linux interface name (1-15 characters of A-Z a-z 0-9 _ . -, not starting with -, not "." or "..")`,
        'ibfleet: this problem must be fixed first; nothing was contacted',
        '',
      ]);
    }
  });

  it('a host number outside 1..254: exit 2 naming the number and the range', async () => {
    const path = join(scratch, 'zero.yaml');
    writeFileSync(path, 'fabric:\n  subnet: 172.16.0.0/16\nhosts:\n  0: { name: a }\n');
    const { code, stderr } = await ibfleet(['-i', path, 'hosts']);
    expect(code).toBe(2);
    expect(stderr).toContain(`${path}:4:3: host number "0" is outside 1..254`);
  });

  it('a missing inventory file: exit 2 saying how to point at one', async () => {
    const { code, stderr } = await ibfleet(['-i', 'nowhere.yaml', 'hosts']);
    expect(code).toBe(2);
    expect(stderr).toBe(
      'ibfleet: cannot read inventory nowhere.yaml: no such file (pass -i FILE or set IBFLEET_INVENTORY)\n',
    );
  });

  it('--hosts 99: exit 2, naming the closest known hosts', async () => {
    const { code, stdout, stderr } = await ibfleet(['render', '--hosts', '99']);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toBe(
      'ibfleet: --hosts 99: host 99 is not in inventory/fleet.yaml; closest: 16 (cpuserver16), 34 (memserver34)\n',
    );
  });

  it('--hosts memserver3: exit 2 with "did you mean memserver34?"', async () => {
    const { code, stderr } = await ibfleet(['hosts', '--hosts', 'memserver3']);
    expect(code).toBe(2);
    expect(stderr).toContain('did you mean memserver34?');
  });

  it('render without --hosts: exit 2', async () => {
    const { code, stderr } = await ibfleet(['render']);
    expect(code).toBe(2);
    expect(stderr).toBe(
      'ibfleet: render renders files for chosen hosts, so it needs --hosts (e.g. --hosts 16,34, --hosts pair:alice or --hosts all)\n',
    );
  });

  it('a bad --playbook: exit 2 with its position', async () => {
    const path = join(scratch, 'bad-playbook.yaml');
    writeFileSync(path, 'name: p\nsteps:\n  - policy-routing:\n      mainRoutes: delete\n');
    const { code, stderr } = await ibfleet(['render', '--hosts', '34', '--playbook', path]);
    expect(code).toBe(2);
    expect(stderr).toContain(`${path}:4:19: steps[0].policy-routing.mainRoutes = "delete"`);
  });

  it('an unknown command or option: exit 2', async () => {
    expect((await ibfleet(['bogus'])).code).toBe(2);
    expect((await ibfleet(['hosts', '--bogus'])).code).toBe(2);
  });

  it('--help: exit 0 with the commands listed on stdout', async () => {
    const { code, stdout } = await ibfleet(['--help']);
    expect(code).toBe(0);
    expect(stdout).toContain('Usage: ibfleet');
    expect(stdout).toMatch(/^\s+hosts \[options\]/m);
    expect(stdout).toMatch(/^\s+render \[options\]/m);
  });

  it('render --help: exit 0 and documents --hosts and --out', async () => {
    const { code, stdout } = await ibfleet(['render', '--help']);
    expect(code).toBe(0);
    expect(stdout).toContain('--hosts <set>');
    expect(stdout).toContain('--out <dir>');
  });

  it('--version: exit 0 printing the version', async () => {
    const { code, stdout } = await ibfleet(['--version']);
    expect(code).toBe(0);
    expect(stdout.trim()).toBe(VERSION);
  });

  it.each(['hosts', 'render', 'deploy', 'status', 'rollback', 'verify', 'onboard', 'lab up'])(
    '%s --help: examples, the exit codes and the global options',
    async (command) => {
      const { code, stdout } = await ibfleet([...command.split(' '), '--help']);
      expect(code).toBe(0);
      expect(stdout).toMatch(/\nExamples:\n {2}ibfleet /);
      expect(stdout).toContain('Exit codes:\n  0    every selected host succeeded / complies\n  1    a host failed');
      expect(stdout).toContain('130  interrupted (Ctrl-C)');
      expect(stdout).toMatch(/Global Options:[\s\S]*-i, --inventory <file>[\s\S]*--json/);
    },
  );

  it('defaults read one way: (default: X), never quoted, never an empty list', async () => {
    const outputs = await Promise.all(
      ['--help', 'hosts --help', 'verify --help', 'lab up --help', 'lab reboot --help'].map((a) =>
        ibfleet(a.split(' ')),
      ),
    );
    const text = outputs.map((o) => o.stdout).join('\n');
    expect(text).toContain('(default: 32)');
    expect(text).toContain('(default: 7174)');
    expect(text).toContain('(default: all)');
    expect(text).not.toMatch(/\(default: "/);
    expect(text).not.toContain('(default: [])');
  });

  it('a host set given as a word: "did you mean --hosts 16?", exit 2', async () => {
    const { code, stdout, stderr } = await ibfleet(['deploy', '16']);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toBe(
      'ibfleet: deploy takes hosts as --hosts, not as a word: did you mean ibfleet deploy --hosts 16?\n(run ibfleet deploy --help for usage)\n',
    );
    expect((await ibfleet(['-i', 'inventory/fleet.yaml', 'status', '--playbook', 'x.yaml', '34'])).stderr).toContain(
      'did you mean ibfleet status --hosts 34?',
    );
  });

  it.each([
    [['--timeout', '9', '-c4', '--log=/tmp/x', 'deploy', '--playbook', 'deploy', '16'], 'deploy'],
    [['status', '--json', '--known-hosts', 'status', '-iinventory/fleet.yaml', '34'], 'status'],
    [['verify', '--rping-port', '7200', '--pair', 'alice', '34'], 'verify'],
    // Every command whose only way to take hosts is --hosts, lab up's included.
    [['lab', 'up', '--name', 'x', '--mgmt-subnet', '198.18.7.0/24', '34'], 'lab up'],
  ])(
    'a host set given as a word after options and their values (%j): the hint names it, exit 2',
    async (argv, command) => {
      const { code, stderr } = await ibfleet(argv);
      expect(code).toBe(2);
      expect(stderr.split('\n')[0]).toBe(
        `ibfleet: ${command} takes hosts as --hosts, not as a word: did you mean ibfleet ${command} --hosts ${argv.at(-1)}?`,
      );
    },
  );

  it("a command line is read against the program's own options: one added to a command needs no list kept elsewhere", () => {
    const program = buildProgram({} as Io, () => undefined);
    program.commands.find((c) => c.name() === 'status')!.option('--zone <zone>', 'a value option this test adds');
    expect(readCommandLine(program, ['-c', '4', 'status', '--zone', 'a', '34'])).toEqual({
      name: 'status',
      takesHostsOption: true,
      positionals: ['34'],
    });
    expect(readCommandLine(program, ['lab', 'flap', '--for', '3', '16', 'ib0'])).toEqual({
      name: 'lab flap',
      takesHostsOption: false,
      positionals: ['16', 'ib0'],
    });
    expect(readCommandLine(program, ['lab', 'exec', '16', '--', 'ip', '-c', 'link'])).toEqual({
      name: 'lab exec',
      takesHostsOption: false,
      positionals: ['16', 'ip', '-c', 'link'],
    });
    expect(readCommandLine(program, ['--log', 'deploy', 'bogus', 'deploy'])).toEqual({
      name: undefined,
      takesHostsOption: false,
      positionals: [],
    });
  });

  // Each command's options are read by its zod schema before any file is read: an inventory that
  // does not exist is never reached, so the answer is the option's, in its own words.
  it.each([
    [['deploy'], 'deploy changes hosts, so it needs --hosts (e.g. --hosts 16,34, --hosts pair:alice or --hosts all)'],
    [
      ['deploy', '--dry-run'],
      'deploy changes hosts, so it needs --hosts (e.g. --hosts 16,34, --hosts pair:alice or --hosts all)',
    ],
    [
      ['rollback'],
      'rollback changes hosts, so it needs --hosts (e.g. --hosts 16,34, --hosts pair:alice or --hosts all)',
    ],
    [
      ['render', '--hosts', '34', '--out', ''],
      'render --out needs a directory name: an empty one would write into the current directory (say --out . if that is what you mean)',
    ],
    [['verify', '--hosts', '16,34', '--pair', 'alice'], 'give --hosts or --pair, not both'],
    [['verify', '--rping-port', '0x1c1e'], '--rping-port must be a whole number 1024..65000'],
    [['verify', '--rping-port', '7e3'], '--rping-port must be a whole number 1024..65000'],
    [['verify', '--rping-port', ' 7174'], '--rping-port must be a whole number 1024..65000'],
    [['verify', '--rping-port', '1023'], '--rping-port must be a whole number 1024..65000'],
    [['verify', '--rping-port', '65001'], '--rping-port must be a whole number 1024..65000'],
    [
      ['verify', '--no-rping', '--rping'],
      '--rping and --no-rping contradict each other: give one (--rping: every pair must pass rping; --no-rping: ping only)',
    ],
    [
      ['lab', 'port', '16', 'ib0', 'sleepy'],
      'lab port: unknown state "sleepy" (allowed: active, down, init, polling, no-sm)',
    ],
    [['lab', 'port', '16', 'ib0', '--mode', 'bonded'], 'lab port: --mode is datagram or connected, not "bonded"'],
    [['lab', 'port', '16', 'ib0', '--mtu', '0x800'], 'lab port: --mtu is a whole number of bytes, e.g. 2044'],
    [['lab', 'port', '16', 'ib0', '--mtu', '65536'], 'lab port: --mtu is 68..65535'],
    [
      ['lab', 'port', '16', 'ib0', '--rate', 'fast'],
      'lab port: --rate is written as sysfs does, e.g. "56 Gb/sec (4X FDR)"',
    ],
    [['lab', 'port', '16', 'ib0'], 'lab port: say what to change: a state, --mode, --mtu or --rate'],
  ])("%j: exit 2 with the option's own message, nothing read", async (argv, message) => {
    const { code, stdout, stderr } = await ibfleet(['-i', join(scratch, 'no-such-inventory.yaml'), ...argv]);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toBe(`ibfleet: ${message}\n`);
  });

  it('--rping-port in decimal is taken (the run goes on to read the inventory)', async () => {
    const { code, stderr } = await ibfleet([
      '-i',
      join(scratch, 'no-such-inventory.yaml'),
      'verify',
      '--rping-port',
      '7200',
    ]);
    expect(code).toBe(2);
    expect(stderr).toMatch(/cannot read inventory/);
  });

  it('--rping --no-rping: refused as a contradiction, exit 2, nothing contacted', async () => {
    const { code, stderr } = await ibfleet(['verify', '--hosts', '16,34', '--rping', '--no-rping']);
    expect(code).toBe(2);
    expect(stderr).toContain('--rping and --no-rping contradict each other');
  });

  it.each([
    [['--rail', '--ring'], '--rail and --ring contradict each other'],
    [['--full', '--rail'], '--full and --rail contradict each other'],
  ])('verify %j: one matrix at a time, exit 2, nothing contacted', async (flags, message) => {
    const { code, stderr } = await ibfleet(['verify', '--hosts', '16,34', ...flags]);
    expect(code).toBe(2);
    expect(stderr).toContain(message);
  });

  it('render --diff --out: refused (one compares with the hosts, the other writes files here), exit 2', async () => {
    const { code, stderr } = await ibfleet(['render', '--hosts', '34', '--diff', '--out', join(scratch, 'never')]);
    expect(code).toBe(2);
    expect(stderr).toContain('--diff compares with the hosts; --out writes files here: give one');
  });

  it('--show-scripts without --dry-run: refused, exit 2', async () => {
    const { code, stderr } = await ibfleet(['deploy', '--hosts', '34', '--show-scripts']);
    expect(code).toBe(2);
    expect(stderr).toContain('--show-scripts goes with --dry-run');
  });

  it.each([
    [
      'a usage error from the parser',
      ['--json', 'deploy', '16'],
      'deploy',
      'usage',
      /did you mean ibfleet deploy --hosts 16\?/,
    ],
    ['an unknown option', ['hosts', '--bogus', '--json'], 'hosts', 'usage', /unknown option '--bogus'/],
    ['an unknown command', ['--json', 'bogus'], null, 'usage', /unknown command 'bogus'/],
    ['a usage error from a command', ['--json', 'render'], 'render', 'usage', /needs --hosts/],
    ['an unknown host', ['--json', 'render', '--hosts', '99'], 'render', 'usage', /host 99 is not in/],
    [
      'a missing inventory',
      ['--json', '-i', 'nowhere.yaml', 'status'],
      'status',
      'usage',
      /cannot read inventory nowhere\.yaml/,
    ],
    ['a command group without its command', ['--json', 'lab'], 'lab', 'usage', /lab needs one of its commands/],
  ] as const)('--json: %s is one JSON document on stdout, exit 2', async (_name, argv, command, kind, message) => {
    const { code, stdout } = await ibfleet(argv);
    expect(code).toBe(2);
    const doc = JSON.parse(stdout) as { command: string | null; ok: boolean; error: { kind: string; message: string } };
    expect(doc).toMatchObject({ command, ok: false, error: { kind } });
    expect(doc.error.message).toMatch(message);
  });

  it('--json: an invalid inventory is one JSON document with every problem at its position', async () => {
    const path = join(scratch, 'bad-json.yaml');
    writeFileSync(path, 'fabric: { subnet: 172.16.0.0/16 }\nhosts:\n  0: { name: a }\n');
    const { code, stdout } = await ibfleet(['--json', '-i', path, 'hosts']);
    expect(code).toBe(2);
    expect(JSON.parse(stdout)).toMatchObject({
      command: 'hosts',
      ok: false,
      error: { kind: 'inventory', problems: [{ file: path, line: 3, column: 3 }] },
    });
  });

  it('--json --help and --json --version: one JSON document on stdout holding the text, exit 0', async () => {
    const help = await ibfleet(['--json', 'deploy', '--help']);
    expect(help.code).toBe(0);
    const doc = JSON.parse(help.stdout) as { command: string; ok: boolean; help: string };
    expect(doc).toMatchObject({ command: 'deploy', ok: true });
    expect(doc.help).toContain('Usage: ibfleet deploy [options]');
    expect(doc.help).toContain('Exit codes:');
    const version = await ibfleet(['--version', '--json']);
    expect(version.code).toBe(0);
    expect(JSON.parse(version.stdout)).toEqual({ command: null, ok: true, version: VERSION });
  });

  it('a command group without its command (ibfleet lab): its commands on stderr, exit 2', async () => {
    const { code, stdout, stderr } = await ibfleet(['lab']);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toMatch(/^\s+up \[options\]/m);
    expect(stderr.trimEnd().split('\n').at(-1)).toBe('ibfleet: lab needs one of its commands (listed above)');
  });

  it('no arguments: the help, and exit 2 (a usage error)', async () => {
    const { code, stdout } = await ibfleet([]);
    expect(code).toBe(2);
    expect(stdout).toContain('Usage: ibfleet');
  });
});

describe("numbers in a host's links: are refused at load as everywhere (exit 2, nothing contacted)", () => {
  it('pkey 8002 (decimal 8002 = 0x1f42, not the 0x8002 meant) and mtu 1e3: deploy names both at file:line:col and contacts no host', async () => {
    const inventory = join(scratch, 'links-numbers.yaml');
    writeFileSync(
      inventory,
      readFileSync(join(PACKAGE_ROOT, 'test/fixtures/seeds.yaml'), 'utf8').replace(
        /^defaults:$/m,
        'defaults:\n  links: { pkey: 8002, mtu: 1e3 }',
      ),
    );
    const line =
      readFileSync(inventory, 'utf8')
        .split('\n')
        .findIndex((l) => l.includes('pkey: 8002')) + 1;
    const run = await ibfleet(['-i', inventory, 'deploy', '--hosts', '16', '--timeout', '3']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(
      `${inventory}:${line}:18: defaults.links.pkey = 8002 is decimal 8002 = 0x1f42 (a P_Key is written in hex: 0x8002)`,
    );
    expect(run.stderr).toContain(
      `${inventory}:${line}:29: defaults.links.mtu = 1e3 is not written in decimal (YAML reads it as 1000)`,
    );
    expect(run.stderr).toContain('nothing was contacted');
  });
});

describe('ibfleet export ansible: the project written, or a usage error (exit 2) with nothing written', () => {
  const seeds = join(PACKAGE_ROOT, 'test/fixtures/seeds.yaml');

  it('writes the project for hosts whose manager the inventory gives, contacting none, and says how to run it', async () => {
    const out = join(scratch, 'ansible');
    const run = await ibfleet(['-i', seeds, 'export', 'ansible', '--hosts', 'all', '--out', out]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain(`export ansible: 2 hosts (16 networkmanager, 34 netplan) → ${out} (33 files)`);
    expect(run.stdout).toContain(`ansible-playbook -i ${out}/inventory.yml ${out}/site.yml --check --diff`);
    expect(readFileSync(join(out, 'files/memserver34/etc/ibfleet/routes.conf'), 'utf8')).toBe(
      renderHostFiles(
        hostOf(loadInventory(readFileSync(seeds, 'utf8'), seeds), 34),
        loadInventory(readFileSync(seeds, 'utf8'), seeds),
        loadFixturePlaybook(),
        'netplan',
      )[0]!.content,
    );
    expect(statSync(join(out, 'files/memserver34/etc/ibfleet/ibfleet-routes')).mode & 0o777).toBe(0o755);
  });

  it.each([
    [
      ['export', 'ansible', '--out', join(scratch, 'x')],
      'export ansible writes a project for chosen hosts, so it needs --hosts',
    ],
    [['export', 'ansible', '--hosts', 'all'], 'export ansible needs --out DIR'],
    [['export', 'ansible', '--hosts', 'all', '--out', ''], 'export ansible needs --out DIR'],
    [
      [
        'export',
        'ansible',
        '--hosts',
        'all',
        '--out',
        join(scratch, 'native'),
        '--playbook',
        join(PACKAGE_ROOT, 'playbooks/dual-ib-routing-native.yaml'),
      ],
      "export ansible: playbook dual-ib-routing-native persists in the network manager's own configuration on cpuserver16 (networkmanager)",
    ],
  ])('%j', async (argv, message) => {
    const run = await ibfleet(['-i', seeds, ...argv]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(message);
    expect(() => statSync(join(scratch, 'native'))).toThrow();
  });

  describe("--out is written whole or not at all: a new, empty or earlier export's directory only", () => {
    const exportTo = (out: string, hosts = 'all') =>
      ibfleet(['-i', seeds, 'export', 'ansible', '--hosts', hosts, '--out', out]);
    /** Every path below `dir`, with a file's content, as a comparable listing. */
    const listing = (dir: string): string[] =>
      readdirSync(dir, { recursive: true, withFileTypes: true })
        .map((e) => {
          const path = join(e.parentPath, e.name);
          return e.isSymbolicLink()
            ? `${path} -> ${readlinkSync(path)}`
            : e.isFile()
              ? `${path}: ${readFileSync(path, 'utf8')}`
              : path;
        })
        .sort();

    it('--out / is refused (exit 2); nothing is written there', async () => {
      const before = readdirSync('/').sort();
      const run = await exportTo('/');
      expect([run.code, run.stderr]).toEqual([
        2,
        'ibfleet: export ansible --out /: refusing to write into the root directory; nothing was written (give a new or empty directory)\n',
      ]);
      expect(readdirSync('/').sort()).toEqual(before);
    });

    it("a directory holding the user's files is refused (exit 2), naming them, and left exactly as it was", async () => {
      const out = join(scratch, 'busy');
      mkdirSync(join(out, 'files/old'), { recursive: true });
      writeFileSync(join(out, 'notes.txt'), 'mine\n');
      writeFileSync(join(out, 'files/old/stale'), 'stale\n');
      const before = listing(out);
      const run = await exportTo(out);
      expect(run.code).toBe(2);
      expect(run.stderr).toBe(
        `ibfleet: export ansible --out ${out}: ${out} is neither empty nor written by ibfleet before: it holds what ibfleet does not write there (notes.txt); nothing was written (give a new or empty directory)\n`,
      );
      expect(listing(out)).toEqual(before);
    });

    it("an earlier export whose host_vars is a symbolic link is refused before a file is written; the link's target stays empty", async () => {
      const out = join(scratch, 'linked');
      expect((await exportTo(out)).code).toBe(0);
      const elsewhere = join(scratch, 'elsewhere');
      mkdirSync(elsewhere);
      rmSync(join(out, 'host_vars'), { recursive: true });
      symlinkSync(elsewhere, join(out, 'host_vars'));
      const before = listing(out);
      const run = await exportTo(out);
      expect(run.code).toBe(2);
      expect(run.stderr).toContain(
        `${out} is neither empty nor written by ibfleet before: its host_vars is a symbolic link, where ibfleet writes a directory; nothing was written`,
      );
      expect(listing(out)).toEqual(before);
      expect(readdirSync(elsewhere)).toEqual([]);
    });

    it('an earlier export is replaced whole: a host no longer exported leaves no files or host_vars behind', async () => {
      const out = join(scratch, 'again');
      expect((await exportTo(out)).code).toBe(0);
      expect(readdirSync(join(out, 'files')).sort()).toEqual(['cpuserver16', 'memserver34']);
      const run = await exportTo(out, '16');
      expect(run.code, run.stderr).toBe(0);
      expect(readdirSync(join(out, 'files'))).toEqual(['cpuserver16']);
      expect(readdirSync(join(out, 'host_vars'))).toEqual(['cpuserver16.yml']);
      expect(
        readdirSync(scratch).filter((n) => n.includes('.ibfleet-')),
        'no staging directory left',
      ).toEqual([]);
    });

    it('an empty directory, or a link the user gives as --out to one, takes the project', async () => {
      const empty = join(scratch, 'empty');
      mkdirSync(empty);
      symlinkSync(empty, join(scratch, 'to-empty'));
      const run = await exportTo(join(scratch, 'to-empty'));
      expect(run.code, run.stderr).toBe(0);
      expect(readdirSync(empty).sort()).toEqual([
        'README.md',
        'ansible.cfg',
        'collections',
        'files',
        'host_vars',
        'inventory.yml',
        'site.yml',
      ]);
      expect(lstatSync(join(scratch, 'to-empty')).isSymbolicLink()).toBe(true);
    });
  });
});
