/**
 * onboard's flow with the fake transport: what is contacted, what is deployed, when the inventory
 * is written (only after both deploys succeeded) and what the student is told at each failure.
 */
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { OS_NAME_MAX } from '../../src/host-text.js';
import { main } from '../../src/cli.js';
import type { Io } from '../../src/commands/context.js';
import { UsageError } from '../../src/errors.js';
import { loadInventory } from '../../src/inventory/load.js';
import type { Host, Manager } from '../../src/inventory/model.js';
import { loadPlaybook } from '../../src/playbook/playbook.js';
import { AFTER_MARK } from '../../src/render/apply-script.js';
import { writeFileAtomic, type InventoryFile } from '../../src/runner/files.js';
import type { OnboardRequest } from '../../src/plan/onboard-request.js';
import { runOnboard, type OnboardEvents } from '../../src/runner/onboard.js';
import { formatDiscoveryLines, onboardStartLine } from '../../src/ui/text/onboard.js';
import type { Transport } from '../../src/runner/transport.js';
import { ConnectError } from '../../src/runner/transport.js';
import { deployedProbe, fakeTransport, fixture, ok, type FakeHost } from '../helpers/fake-transport.js';

const playbook = loadPlaybook(
  readFileSync(new URL('../../playbooks/dual-ib-routing.yaml', import.meta.url), 'utf8'),
  'dual-ib-routing.yaml',
);
const boot = fixture('netplan-boot.txt');

const INVENTORY = `# the lab's machines
fabric:
  subnet: 172.16.0.0/16   # NIC n of host h = 172.16.h.n
hosts:
  # a spare machine
  40: { name: node40, address: 10.0.0.40 }
`;

/** The netplan boot probe (host 34, ib0/ib1) as host `id` with interfaces `ifaces` shows it. */
function asHost(text: string, id: number, ifaces: readonly [string, string]): string {
  return text
    .replaceAll('172.16.34.', `172.16.${id}.`)
    .replace(/\bib0\b/g, ifaces[0])
    .replace(/\bib1\b/g, ifaces[1]);
}

/** The host as the inventory will describe it once onboarded, for the deployed-state fixture. */
function finalHost(
  id: number,
  ifaces: readonly [string, string],
  name = id === 16 ? 'cpuserver16' : 'memserver34',
): { host: Host; fleet: ReturnType<typeof loadInventory> } {
  const fleet = loadInventory(
    `fabric: { subnet: 172.16.0.0/16 }\nhosts:\n  ${id}: { name: ${name}, address: 10.0.0.${id}, interfaces: [${ifaces.join(', ')}] }\n`,
    'x.yaml',
  );
  return { host: fleet.hosts[0]!, fleet };
}

interface MachineOptions {
  readonly probe?: (text: string) => string;
  readonly applyFails?: boolean;
  /** Which pings answer; default all. */
  readonly ping?: (iface: string, to: string) => boolean;
  readonly connectError?: Error;
  /** The manager whose hook the deployed state carries. */
  readonly manager?: Manager;
  /** The name the inventory will give it (its deployed files' headers carry it). */
  readonly name?: string;
}

/** A machine that answers onboard's scripts: probe, apply (with the state after), capabilities, pings. */
function machine(id: number, ifaces: readonly [string, string], options: MachineOptions = {}): FakeHost {
  const before = (options.probe ?? ((t) => t))(asHost(boot, id, ifaces));
  const { host, fleet } = finalHost(id, ifaces, options.name);
  const deployed = deployedProbe(host, fleet, playbook, options.manager ?? 'netplan');
  // Only the chosen manager's hook is installed.
  const after = asHost(
    options.manager && options.manager !== 'netplan'
      ? deployed
          .split('\n')
          .filter((l) => !l.endsWith(' /etc/networkd-dispatcher/routable.d/50-ibfleet-routes'))
          .join('\n')
      : deployed,
    id,
    ifaces,
  );
  const frame = (n: string, code: number, text: string) => `@@cell ${n} ${code}\n${text}\n@@cell-end\n`;
  return {
    ...(options.connectError ? { connectError: options.connectError } : {}),
    respond: (script) => {
      if (script.includes(AFTER_MARK)) {
        return options.applyFails
          ? {
              code: 1,
              signal: undefined,
              stdout: 'ibfleet-routes: ib1: RTNETLINK answers: Operation not permitted\n',
              stderr: '',
            }
          : ok(`ibfleet-routes: configured\n${AFTER_MARK}\n${after}`);
      }
      if (script.includes('rdma-devices')) return ok('rdma-devices=\nrping=\nping=/usr/bin/ping\n');
      const jobs = [...script.matchAll(/^job (\d+) (.*) &$/gm)];
      if (jobs.length > 0) {
        return ok(
          jobs
            .map(([, n, command]) => {
              // verify pings from the NIC's address (ping -I ADDR): NIC n's address ends in .n.
              const [, from, to] = /-I (\S+) (\S+)$/.exec(command!)!;
              const iface = ifaces[Number(from!.split('.').at(-1)) - 1]!;
              return (options.ping ?? (() => true))(iface, to!)
                ? frame(
                    n!,
                    0,
                    '3 packets transmitted, 3 received, 0% packet loss\nrtt min/avg/max/mdev = 0.02/0.04/0.06/0.01 ms',
                  )
                : frame(n!, 1, '3 packets transmitted, 0 received, 100% packet loss');
            })
            .join(''),
        );
      }
      return ok(before);
    },
  };
}

/** An in-memory inventory file that records writes. */
function memoryFile(
  text: string,
  options: { failWrite?: boolean; onRead?: (n: number) => string | undefined } = {},
): InventoryFile & { text: string; writes: number } {
  let reads = 0;
  const file = {
    path: 'inventory/lab.yaml',
    baseDir: '/nowhere',
    text,
    writes: 0,
    read: async () => {
      reads++;
      const replaced = options.onRead?.(reads);
      if (replaced !== undefined) file.text = replaced;
      return file.text;
    },
    write: async (next: string) => {
      if (options.failWrite) throw new Error('EACCES: permission denied');
      file.writes++;
      file.text = next;
    },
  };
  return file;
}

/** Counts connections per host: onboard opens one per machine for the whole run. */
function counting(transport: Transport): Transport & { connects: Map<number, number> } {
  const connects = new Map<number, number>();
  return {
    connects,
    connect: (host, signal) => {
      connects.set(host.id, (connects.get(host.id) ?? 0) + 1);
      return transport.connect(host, signal);
    },
  };
}

const request: OnboardRequest = { owner: 'alice', cpu: 16, mem: 34, cpuAddress: '10.0.0.16', memAddress: '10.0.0.34' };

async function onboard(
  machines: Record<number, FakeHost>,
  options: {
    file?: ReturnType<typeof memoryFile>;
    request?: Partial<OnboardRequest>;
    interrupt?: AbortSignal;
    events?: OnboardEvents;
  } = {},
) {
  const fake = fakeTransport(machines);
  const transport = counting(fake);
  const file = options.file ?? memoryFile(INVENTORY);
  let built = 0;
  const report = await runOnboard({
    request: { ...request, ...options.request },
    inventory: file,
    playbook,
    transport: () => {
      built++;
      return transport;
    },
    concurrency: 8,
    timeoutMs: 5000,
    interrupt: options.interrupt ?? new AbortController().signal,
    ...(options.events ? { events: options.events } : {}),
  });
  const scripts = (id: number) =>
    (fake.log.scripts.get(id) ?? []).map((s) =>
      s.includes(AFTER_MARK)
        ? 'apply'
        : s.includes('rdma-devices')
          ? 'capabilities'
          : /^job \d+ ping/m.test(s)
            ? 'ping'
            : s.includes('@@ibfleet')
              ? 'probe'
              : 'other',
    );
  return { report, file, transport, scripts, built: () => built };
}

const cpuMachine = (o: MachineOptions = {}) => machine(16, ['ibs5f0', 'ibs5f1'], o);
const memMachine = (o: MachineOptions = {}) => machine(34, ['ib0', 'ib1'], o);

describe('onboard names a machine as it calls itself', () => {
  // As the probe prints a file's line: behind '|'.
  const withHostname = (name: string) => (t: string) =>
    t.replace('@@ibfleet uid\n', `@@ibfleet hostname\n|${name}\n@@ibfleet uid\n`);

  it('the discovered hostname, unless --cpu-name / --mem-name say otherwise', async () => {
    const { report, file } = await onboard(
      {
        16: cpuMachine({ probe: withHostname('gpu-a7'), name: 'gpu-a7' }),
        34: memMachine({ probe: withHostname('mem-b2'), name: 'alice-mem' }),
      },
      { request: { memName: 'alice-mem' } },
    );
    expect(report.outcome, report.problems.join('\n')).toBe('ok');
    expect(file.text).toContain('  16: { name: gpu-a7, address: 10.0.0.16, role: cpu');
    expect(file.text).toContain('  34: { name: alice-mem, address: 10.0.0.34, role: mem }');
  });
});

describe('what onboard prints names a host as the inventory will', () => {
  const withHostname = (name: string) => (t: string) =>
    t.replace('@@ibfleet uid\n', `@@ibfleet hostname\n|${name}\n@@ibfleet uid\n`);

  it('before discovery, a host the machine will name has no name yet; once found, the name written (not cpuserverN)', async () => {
    const lines: string[] = [];
    const events: OnboardEvents = {
      onStart: (hosts, unnamed) => lines.push(onboardStartLine('alice', hosts, 'lab.yaml', unnamed)),
      onDiscovered: (d, host) => lines.push(...formatDiscoveryLines(d, host)),
    };
    const { report, file } = await onboard(
      {
        16: cpuMachine({ probe: withHostname('node16'), name: 'node16' }),
        34: memMachine({ probe: withHostname('mem-b2'), name: 'alice-mem' }),
      },
      { request: { memName: 'alice-mem' }, events },
    );
    expect(report.outcome, report.problems.join('\n')).toBe('ok');
    expect(lines[0]).toBe(
      "ibfleet onboard: alice's pair · cpu 16 (10.0.0.16) · mem 34 alice-mem (10.0.0.34) · inventory lab.yaml",
    );
    expect(lines.slice(1).map((l) => l.split(' ').slice(0, 2).join(' '))).toEqual(['[16 node16]', '[34 alice-mem]']);
    expect(file.text).toContain('  16: { name: node16,');
    expect(lines.join('\n')).not.toContain('cpuserver16');
  });

  it('a host the inventory already names keeps that name from the first line', async () => {
    const lines: string[] = [];
    const file = memoryFile(`${INVENTORY}  16: { name: gpu-a7, address: 10.0.0.16, role: cpu }\n`);
    await onboard(
      { 16: cpuMachine({ name: 'gpu-a7' }), 34: memMachine() },
      {
        file,
        events: { onStart: (hosts, unnamed) => lines.push(onboardStartLine('alice', hosts, 'lab.yaml', unnamed)) },
      },
    );
    expect(lines).toEqual([
      "ibfleet onboard: alice's pair · cpu 16 gpu-a7 (10.0.0.16) · mem 34 (10.0.0.34) · inventory lab.yaml",
    ]);
  });
});

describe('what a machine says about itself is reduced before it reaches the inventory', () => {
  /** A probe whose os-release PRETTY_NAME and hostname are `pretty` and `hostname`. */
  const saying = (pretty: string, hostname: string) => (t: string) =>
    t
      .replace(/^\|PRETTY_NAME=.*$/m, `|PRETTY_NAME="${pretty}"`)
      .replace('@@ibfleet uid\n', `@@ibfleet hostname\n|${hostname}\n@@ibfleet uid\n`);
  // NEL ends a line for YAML 1.1 readers (PyYAML): the rest would be a host of its own.
  const FAKE_HOST = 'Ubuntu\u0085  41: {name: evil, address: 10.9.9.9, user: root}';
  /** Where a YAML 1.1 reader ends a line. */
  const YAML11_BREAK = /\r\n|[\r\n\u0085\u2028\u2029]/;

  it.each([
    [
      'NEL and a fake host line; a hostname that is a host number',
      FAKE_HOST,
      '16',
      'Ubuntu? 41: {name: evil, address: 10.9.9.9, user: root}',
    ],
    [
      '8-bit CSI, which YAML does not allow (onboard refused to run); hostname `all`',
      'Evil\u009b2J\u009b31mOS',
      'all',
      'Evil?2J?31mOS',
    ],
    [
      '3000 characters and a bidi override; a hostname that is a range',
      `\u202e${'L'.repeat(3000)}`,
      '16-20',
      `?${'L'.repeat(OS_NAME_MAX - 2)}…`,
    ],
    [
      'LINE and PARAGRAPH SEPARATOR; a hostname that is a range of one',
      'a\u2028  41: {name: evil}\u2029b',
      '34-34',
      'a? 41: {name: evil}?b',
    ],
  ])(
    '%s: onboarded, a YAML 1.1 reader finds the intended hosts, every line short and printable',
    async (_, pretty, hostname, os) => {
      const say = saying(pretty, hostname);
      const { report, file } = await onboard({ 16: cpuMachine({ probe: say }), 34: memMachine({ probe: say }) });
      expect(report.outcome, report.problems.join('\n') || report.summary).toBe('ok');
      const lines = file.text.split('\n');
      expect(file.text.split(YAML11_BREAK)).toEqual(lines);
      expect(file.text).not.toMatch(
        /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/,
      );
      // A hostname --hosts reads as a selection is not a name: the lab's names instead.
      expect(lines.filter((l) => /^ {2}(16|34):/.test(l))).toEqual([
        `  16: { name: cpuserver16, address: 10.0.0.16, role: cpu, interfaces: [ibs5f0, ibs5f1] } # alice's cpu server: ${os}, netplan (detected)`,
        `  34: { name: memserver34, address: 10.0.0.34, role: mem } # alice's mem server: ${os}, netplan (detected)`,
      ]);
      expect(Math.max(...lines.map((l) => l.length))).toBeLessThanOrEqual(220);
      const doc = parse(file.text, { version: '1.1' }) as { hosts: Record<string, { name: string }> };
      expect(Object.keys(doc.hosts)).toEqual(['16', '34', '40']);
    },
  );
});

describe('onboard: two fresh machines', () => {
  it('discovers, deploys over one connection per machine, adds both hosts and the pair, verifies, and gives the cheat sheet', async () => {
    const { report, file, transport, scripts } = await onboard({ 16: cpuMachine(), 34: memMachine() });
    expect(report.outcome).toBe('ok');
    expect(report.problems).toEqual([]);
    // In host-number order: 16 and 34 go above 40 and the comment that belongs to it.
    expect(file.text).toBe(`# the lab's machines
fabric:
  subnet: 172.16.0.0/16   # NIC n of host h = 172.16.h.n
hosts:
  16: { name: cpuserver16, address: 10.0.0.16, role: cpu, interfaces: [ibs5f0, ibs5f1] } # alice's cpu server: Ubuntu 18.04.6 LTS, netplan (detected)
  34: { name: memserver34, address: 10.0.0.34, role: mem } # alice's mem server: Ubuntu 18.04.6 LTS, netplan (detected)
  # a spare machine
  40: { name: node40, address: 10.0.0.40 }
pairs:
  - { owner: alice, cpu: 16, mem: 34 }
`);
    expect(report.inventory).toMatchObject({ change: 'written', addedHosts: [16, 34], addedPair: true });
    expect([...transport.connects]).toEqual([
      [16, 1],
      [34, 1],
    ]);
    // Deploy decides from discovery's probe: one probe per machine, not two.
    expect(scripts(16)).toEqual(['probe', 'apply', 'capabilities', 'ping']);
    expect(report.deploy.map((r) => [r.host.id, r.status, r.manager])).toEqual([
      [16, 'changed', 'netplan'],
      [34, 'changed', 'netplan'],
    ]);
    expect(report.discovered.map((d) => d.nics.map((n) => n.iface))).toEqual([
      ['ibs5f0', 'ibs5f1'],
      ['ib0', 'ib1'],
    ]);
    const cells = report.verify!.cells;
    expect(cells.filter((c) => c.method === 'ping').every((c) => c.ok === true)).toBe(true);
    expect(cells.filter((c) => c.method === 'rping').map((c) => c.ok)).toEqual(Array(8).fill(null));
    expect(report.cheatSheet!.ping[0]).toMatchObject({
      on: 'cpuserver16',
      command: 'ping -c 3 -I ibs5f0 172.16.34.1',
      checked: 'ok',
    });
    expect(report.cheatSheet!.notes[0]).toMatch(/^rping could not be checked here: no RDMA device on cpuserver16/);
    expect(report.summary).toBe(
      "alice's pair cpuserver16 (16) and memserver34 (34) is deployed and verified; inventory/lab.yaml now lists both hosts and the pair.",
    );
  });

  it('run again: nothing to add, the file is not rewritten, the hosts are unchanged and verified again', async () => {
    const first = await onboard({ 16: cpuMachine(), 34: memMachine() });
    const written = first.file.text;
    const again = await onboard(
      { 16: cpuMachine(), 34: memMachine() },
      { file: memoryFile(written), request: { cpuAddress: undefined, memAddress: undefined } },
    );
    expect(again.report.outcome).toBe('ok');
    expect(again.file.writes).toBe(0);
    expect(again.file.text).toBe(written);
    expect(again.report.inventory.change).toBe('unchanged');
  });

  it('a manager given with a flag is used and written; a non-root --user is written', async () => {
    const { report, file } = await onboard(
      { 16: cpuMachine(), 34: memMachine({ manager: 'ifupdown' }) },
      { request: { memManager: 'ifupdown', user: 'labadmin' } },
    );
    expect(report.outcome, report.summary).toBe('ok');
    expect(report.discovered[1]).toMatchObject({ manager: 'ifupdown', managerSource: 'flag' });
    expect(report.deploy[1]).toMatchObject({ status: 'changed', manager: 'ifupdown' });
    expect(file.text).toContain(
      "  34: { name: memserver34, address: 10.0.0.34, role: mem, user: labadmin, manager: ifupdown } # alice's mem server: Ubuntu 18.04.6 LTS, ifupdown\n",
    );
  });
});

describe("onboard keeps discovery's shell for the deploy", () => {
  it("deploy decides from discovery's probe and runs its change in the shell that ran it: one probe, one channel per machine for both", async () => {
    const { report, scripts } = await onboard({ 16: cpuMachine(), 34: memMachine() });
    expect(report.outcome, report.summary).toBe('ok');
    expect(scripts(16)).toEqual(['probe', 'apply', 'capabilities', 'ping']);
    expect(report.discovery.map((r) => r.channels)).toEqual([1, 1]);
    expect(report.deploy.map((r) => [r.status, r.channels])).toEqual([
      ['changed', 1],
      ['changed', 1],
    ]);
  });

  it('a refusal after discovery ends the shells the probes ran in: nothing more is sent, nothing waits', async () => {
    const { report, scripts } = await onboard({
      16: cpuMachine(),
      34: memMachine({ probe: (t) => t.replace(/^4: ib1 +inet .*\n/m, '') }),
    });
    expect(report.outcome).toBe('refused');
    expect(scripts(16)).toEqual(['probe']);
    expect(scripts(34)).toEqual(['probe']);
  });
});

describe('onboard: refusals (exit 2), before anything changes', () => {
  it.each<[string, Partial<OnboardRequest>, string | undefined, RegExp]>([
    [
      'cpu and mem the same host',
      { mem: 16 },
      undefined,
      /^--cpu and --mem are both host 16; a pair is two different machines$/,
    ],
    [
      'a host that is not in the inventory and has no address',
      { cpuAddress: undefined },
      undefined,
      /^host 16 is not in inventory\/lab\.yaml, so onboard needs its SSH address: add --cpu-address ADDRESS/,
    ],
    [
      'a host number that is in the inventory with other data',
      { mem: 40, memAddress: '10.0.0.99' },
      undefined,
      /^onboard refused:\n {2}- host 40 is already in inventory\/lab\.yaml \(line 6\) with other data: address 10\.0\.0\.40 \(onboard would write 10\.0\.0\.99\), role \(none\) \(onboard would write mem\)/,
    ],
    [
      "--mem-name that differs from the inventory's name for the host",
      { mem: 40, memName: 'alice-mem' },
      undefined,
      /with other data: name node40 \(onboard would write alice-mem\), address .*, role \(none\)/,
    ],
    [
      'an owner who has another pair',
      {},
      `${INVENTORY}  16: { name: cpuserver16 }\n  17: { name: cpuserver17 }\npairs:\n  - { owner: alice, cpu: 17, mem: 40 }\n`,
      /alice already has a pair in inventory\/lab\.yaml \(cpu 17, mem 40\)/,
    ],
  ])('%s: nothing is contacted', async (_, change, text, message) => {
    const file = memoryFile(text ?? INVENTORY);
    const run = onboard({ 16: cpuMachine(), 34: memMachine() }, { file, request: change });
    await expect(run).rejects.toThrow(UsageError);
    await expect(run).rejects.toThrow(message);
    expect(file.writes).toBe(0);
  });

  it('a machine off the convention (NIC 2 has no address): refused after discovery, nothing deployed, inventory untouched', async () => {
    const { report, file, scripts } = await onboard({
      16: cpuMachine(),
      34: memMachine({ probe: (t) => t.replace(/^4: ib1 +inet .*\n/m, '') }),
    });
    expect(report.outcome).toBe('refused');
    expect(report.problems).toEqual([
      'mem 34: no interface carries 172.16.34.2 (NIC 2 of host 34)',
      'mem 34: its fabric addresses: ib0 172.16.34.1/16; the convention is NIC n of host 34 = 172.16.34.n/16',
    ]);
    expect(file.writes).toBe(0);
    expect(scripts(16)).toEqual(['probe']);
    expect(scripts(34)).toEqual(['probe']);
    expect(report.summary).toMatch(
      /^onboard refused:\n {2}- mem 34: no interface carries 172\.16\.34\.2 .*\nNothing was deployed and inventory\/lab\.yaml was not changed; fix the above, then run the same onboard command again\.$/s,
    );
  });

  it('a host in the inventory whose interfaces are not what the machine has: refused after discovery', async () => {
    const text = `${INVENTORY}  34: { name: memserver34, address: 10.0.0.34, role: mem }\n`;
    const { report, file, scripts } = await onboard(
      { 16: cpuMachine(), 34: machine(34, ['ibp1s0', 'ibp2s0']) },
      { file: memoryFile(text), request: { memAddress: undefined } },
    );
    expect(report.outcome).toBe('refused');
    expect(report.problems).toEqual([
      expect.stringMatching(
        /^host 34 is already in inventory\/lab\.yaml \(line 7\) with other data: interfaces ib0, ib1 \(onboard would write ibp1s0, ibp2s0\)/,
      ),
    ]);
    expect(file.writes).toBe(0);
    expect(scripts(34)).toEqual(['probe']);
  });
});

describe('onboard: failures (exit 1), and what the student is told', () => {
  it('deploy fails on one machine: the inventory is not written, and the summary says what to do', async () => {
    const { report, file } = await onboard({ 16: cpuMachine(), 34: memMachine({ applyFails: true }) });
    expect(report.outcome).toBe('deploy-failed');
    expect(file.writes).toBe(0);
    expect(file.text).toBe(INVENTORY);
    expect(report.verify).toBeUndefined();
    expect(report.summary).toBe(
      'deploy failed on 34: apply: applying the change failed (exit 1): ibfleet-routes: ib1: RTNETLINK answers: Operation not permitted. inventory/lab.yaml was not changed (host 16 was deployed; running onboard again finds it done); fix the cause, then run the same onboard command again.',
    );
  });

  it('a machine cannot be reached: nothing deployed anywhere, inventory untouched', async () => {
    const { report, file, scripts } = await onboard({
      16: cpuMachine(),
      34: memMachine({ connectError: new ConnectError('connection refused by 10.0.0.34:22 (is sshd running?)', true) }),
    });
    expect(report.outcome).toBe('discovery-failed');
    expect(report.problems).toEqual(['34 (10.0.0.34): connection refused by 10.0.0.34:22 (is sshd running?)']);
    expect(report.summary).toMatch(
      /^discovery failed on 34 \(10\.0\.0\.34\): connection refused .*\. Nothing was deployed and inventory\/lab\.yaml was not changed; check the address and SSH access/,
    );
    expect(scripts(16)).toEqual(['probe']);
    expect(file.writes).toBe(0);
  });

  it('verify fails after both deploys: the hosts stay in the inventory (they carry the routing), with the failing cells', async () => {
    const { report, file } = await onboard({
      16: cpuMachine({ ping: (iface) => iface !== 'ibs5f1' }),
      34: memMachine(),
    });
    expect(report.outcome).toBe('verify-failed');
    expect(file.writes).toBe(1);
    expect(report.problems).toEqual([
      'ping cpuserver16/ibs5f1 → memserver34/ib0: 0/3 replies',
      'ping cpuserver16/ibs5f1 → memserver34/ib1: 0/3 replies',
    ]);
    expect(report.summary).toMatch(
      /^verify failed: 2 cells did not pass .* Both hosts are deployed and now in inventory\/lab\.yaml; fix the fabric, then check again with: ibfleet -i inventory\/lab\.yaml verify --pair alice$/,
    );
    expect(report.cheatSheet!.ping.filter((c) => c.checked === 'failed').map((c) => c.command)).toEqual([
      'ping -c 3 -I ibs5f1 172.16.34.1',
      'ping -c 3 -I ibs5f1 172.16.34.2',
    ]);
  });

  it('someone edits the inventory meanwhile: the addition is made to what is there now', async () => {
    const edited = INVENTORY.replace(
      '# a spare machine\n',
      '# a spare machine\n  39: { name: node39, address: 10.0.0.39 }\n',
    );
    const file = memoryFile(INVENTORY, { onRead: (n) => (n === 2 ? edited : undefined) });
    const { report } = await onboard({ 16: cpuMachine(), 34: memMachine() }, { file });
    expect(report.outcome).toBe('ok');
    expect(file.text).toContain('  39: { name: node39, address: 10.0.0.39 }\n  40:');
    expect(file.text).toContain('  16: { name: cpuserver16');
  });

  it('the inventory cannot be written: the student gets the lines to add by hand', async () => {
    const { report } = await onboard(
      { 16: cpuMachine(), 34: memMachine() },
      { file: memoryFile(INVENTORY, { failWrite: true }) },
    );
    expect(report.outcome).toBe('inventory-failed');
    expect(report.summary).toMatch(
      /^both hosts are deployed, but cannot write inventory\/lab\.yaml: EACCES: permission denied\. Add these lines to inventory\/lab\.yaml by hand:\n {4}16: \{ name: cpuserver16/,
    );
  });

  it('interrupted before deploying: nothing changed (exit 130)', async () => {
    const controller = new AbortController();
    controller.abort();
    const { report, file, scripts } = await onboard(
      { 16: cpuMachine(), 34: memMachine() },
      { interrupt: controller.signal },
    );
    expect(report.outcome).toBe('interrupted');
    expect(file.writes).toBe(0);
    expect(scripts(16)).toEqual([]);
  });
});

describe('writeFileAtomic', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ibfleet-onboard-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('replaces the content, keeps the mode, leaves no temp file; through a symlink it writes the target', async () => {
    const target = join(dir, 'fleet.yaml');
    writeFileSync(target, 'old\n');
    chmodSync(target, 0o640);
    symlinkSync(target, join(dir, 'link.yaml'));
    await writeFileAtomic(join(dir, 'link.yaml'), 'new\n');
    expect(readFileSync(target, 'utf8')).toBe('new\n');
    expect(statSync(target).mode & 0o777).toBe(0o640);
    expect(statSync(join(dir, 'link.yaml')).isFile()).toBe(true);
    expect(readFileSync(join(dir, 'link.yaml'), 'utf8')).toBe('new\n');
    const { readdirSync, lstatSync } = await import('node:fs');
    expect(lstatSync(join(dir, 'link.yaml')).isSymbolicLink()).toBe(true);
    expect(readdirSync(dir).sort()).toEqual(['fleet.yaml', 'link.yaml']);
  });
});

describe('ibfleet onboard (CLI): usage errors exit 2 before anything is contacted', () => {
  async function cli(argv: readonly string[]) {
    let stdout = '';
    let stderr = '';
    const io: Io = {
      stdout: { write: (c: string) => (stdout += c), isTTY: false },
      stderr: { write: (c: string) => (stderr += c), isTTY: false },
      stdin: Readable.from([]),
      env: {},
      cwd: new URL('../../', import.meta.url).pathname,
      interruptSignal: () => new AbortController().signal,
    };
    return { code: await main(argv, io), stdout, stderr };
  }

  it.each([
    [['onboard', '--cpu', '16', '--mem', '34'], /required option '--owner <name>' not specified/],
    [['onboard', '--cpu', '16', '--mem', '300', '--owner', 'bob'], /--mem is a host number 1\.\.254/],
    [['onboard', '--cpu', '16', '--mem', '34', '--owner', 'Bob!'], /--owner is a user-style name/],
    [
      ['onboard', '--cpu', '16', '--mem', '34', '--owner', 'bob', '--cpu-manager', 'systemd'],
      /--cpu-manager is one of networkmanager, ifupdown, netplan/,
    ],
    [
      ['onboard', '--cpu', '16', '--mem', '34', '--owner', 'bob'],
      /onboard refused:\n {2}- host 16 already belongs to alice's pair \(cpu 16, mem 34\); a machine serves one pair/,
    ],
    [
      ['onboard', '--cpu', '50', '--mem', '34', '--owner', 'bob'],
      /host 50 is not in inventory\/fleet\.yaml, so onboard needs its SSH address: add --cpu-address ADDRESS/,
    ],
    [
      ['onboard', '--cpu', '50', '--mem', '51', '--owner', 'bob', '--cpu-name', '16'],
      /--cpu-name is a host name --hosts can select: not a number, a range \(16-20\) or all/,
    ],
    [
      ['onboard', '--cpu', '50', '--mem', '51', '--owner', 'bob', '--mem-name', 'all'],
      /--mem-name is a host name --hosts can select/,
    ],
    [
      ['onboard', '--cpu', '50', '--mem', '51', '--owner', 'bob', '--mem-name', '16-20'],
      /--mem-name is a host name --hosts can select/,
    ],
  ])('%j', async (argv, message) => {
    const { code, stderr, stdout } = await cli(argv);
    expect(code).toBe(2);
    expect(stderr).toMatch(message);
    expect(stdout).toBe('');
  });
});
