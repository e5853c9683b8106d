/**
 * The rendered routing script and hooks, run for real against the kernel in throw-away network
 * namespaces (test/helpers/netns.ts): two veth "NICs" in one /16, addressed like the convention,
 * whose peers sit on a bridge with another host's fabric address behind it. Every assertion is on
 * the exact kernel state afterwards. Needs root; skipped with a note otherwise.
 */
import { chmodSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Fleet, Host, Manager } from '../../../src/inventory/model.js';
import type { Playbook } from '../../../src/playbook/playbook.js';
import { renderHook } from '../../../src/steps/persist/hooks.js';
import { RELEASE_ROUTING_LOCK, TAKE_ROUTING_LOCK } from '../../../src/render/routing-lock.js';
import { LOCK_DIR, ROUTES_LOCK_PATH } from '../../../src/script/paths.js';
import { routesDataFor } from '../../../src/render/host-files.js';
import { writeRoutesProgram } from '../../helpers/routes-program.js';
import { hostOf, loadFixtureFleet, loadFixturePlaybook } from '../../fixtures/fixtures.js';
import { useFabrics, type ExecResult, type Fabric } from '../../helpers/netns.js';

// As root this runs (and fails loudly if namespaces cannot be made); otherwise it is skipped with a note.
const CAN_RUN = process.getuid?.() === 0;
if (!CAN_RUN) {
  console.warn(
    'test/root/render/execute.test.ts: skipped — running the generated scripts needs root, iproute2 and unshare ' +
      '(run `sudo npx vitest run test/root/render/execute.test.ts`; CI runs it as root).',
  );
}

const SUBNET = '172.16.0.0/16';
const PEER = '172.16.35.1';
const seeds = loadFixtureFleet('seeds.yaml');
const odd = loadFixtureFleet('odd-names.yaml');
const defaultPlaybook = loadFixturePlaybook();
const memserver34 = hostOf(seeds, 34);

const { work: workDir, createFor } = useFabrics('ibfleet-execute-');

// ---------------------------------------------------------------------------------------------
// Setting up and reading the kernel state

interface LabOptions {
  /** Interfaces of the host to leave out of the namespace. */
  readonly missing?: readonly string[];
  /** Interfaces created without their fabric address. */
  readonly unaddressed?: readonly string[];
}

/** A namespace holding `host`'s NICs, addressed as the inventory derives them. */
function labFor(host: Host, options: LabOptions = {}): Fabric {
  return createFor(host, { ...options, peerCidr: `${PEER}/16` });
}

let fileCounter = 0;
/** The program and the host's data, in a directory of their own. */
function writeScript(playbook: Playbook, host: Host, fleet: Fleet): string {
  return writeRoutesProgram(join(workDir, `routes-${++fileCounter}`), playbook, host, fleet);
}

/** `ip netns exec NS sh <rendered script> [IFACE...]`. */
function runRoutingScript(
  lab: Fabric,
  host: Host,
  fleet: Fleet,
  playbook: Playbook,
  ifaces: readonly string[] = [],
): ExecResult {
  return lab.exec(['sh', writeScript(playbook, host, fleet), ...ifaces]);
}

const lines = (text: string) =>
  text
    .split('\n')
    .map((l) => l.replace(/\s+/g, ' ').trim())
    .filter((l) => l !== '');

const rules = (lab: Fabric) => lines(lab.ip('-4', 'rule', 'show'));
/** Routes in a table; a table the kernel has never seen is empty. */
function table(lab: Fabric, t: number | string): string[] {
  const result = lab.exec(['ip', '-4', 'route', 'show', 'table', String(t)]);
  if (result.status !== 0 && result.stderr.includes('FIB table does not exist')) return [];
  if (result.status !== 0) throw new Error(`ip route show table ${t}: ${result.stderr}`);
  return lines(result.stdout);
}
/** Main-table routes to the fabric subnet (the only routes a fresh namespace has there). */
const mainFabricRoutes = (lab: Fabric) => table(lab, 'main').filter((l) => l.startsWith(`${SUBNET} `));
const routeGet = (lab: Fabric, from: string) => lines(lab.ip('-4', 'route', 'get', PEER, 'from', from))[0]!;
const neighbours = (lab: Fabric, iface: string) => lines(lab.ip('-4', 'neigh', 'show', 'dev', iface));

const SYSCTLS = ['arp_ignore', 'arp_announce', 'rp_filter', 'accept_local'] as const;
function sysctls(lab: Fabric, iface: string): Record<(typeof SYSCTLS)[number], number> {
  const out = lab.exec([
    'sh',
    '-c',
    'for k in arp_ignore arp_announce rp_filter accept_local; do cat "/proc/sys/net/ipv4/conf/$1/$k"; done',
    'sh',
    iface,
  ]);
  const values = lines(out.stdout).map(Number);
  return Object.fromEntries(SYSCTLS.map((k, i) => [k, values[i]])) as Record<(typeof SYSCTLS)[number], number>;
}

/** Everything a hook or script could change, for "nothing changed" assertions. */
function snapshot(lab: Fabric, host: Host) {
  return {
    rules: rules(lab),
    routes: lines(lab.ip('-4', 'route', 'show', 'table', 'all')),
    sysctls: host.nics.map((n) => sysctls(lab, n.iface)),
    neighbours: lines(lab.ip('-4', 'neigh', 'show')),
  };
}

const KERNEL_RULES = {
  local: '0: from all lookup local',
  main: '32766: from all lookup main',
  default: '32767: from all lookup default',
};
const tableRoute = (iface: string, address: string) => `${SUBNET} dev ${iface} proto kernel scope link src ${address}`;
const SEEDS_SYSCTLS = { arp_ignore: 2, arp_announce: 2, rp_filter: 2, accept_local: 1 };
const UNTOUCHED_SYSCTLS = { arp_ignore: 0, arp_announce: 0, rp_filter: 0, accept_local: 0 };

/** The complete desired state of `host` after the default playbook, NIC by NIC. */
function expectConfigured(lab: Fabric, host: Host, options: { mainRoutes?: 'remove' | 'keep' } = {}): void {
  expect(rules(lab)).toEqual([
    KERNEL_RULES.local,
    ...host.nics.map((n) => `${n.priority}: from ${n.address} lookup ${n.table}`),
    KERNEL_RULES.main,
    KERNEL_RULES.default,
  ]);
  for (const n of host.nics) {
    expect(table(lab, n.table)).toEqual([tableRoute(n.iface, n.address)]);
    expect(routeGet(lab, n.address)).toBe(`${PEER} from ${n.address} dev ${n.iface} table ${n.table} uid 0`);
  }
  expect(mainFabricRoutes(lab)).toEqual(
    options.mainRoutes === 'keep' ? host.nics.map((n) => tableRoute(n.iface, n.address)) : [],
  );
}

// ---------------------------------------------------------------------------------------------

describe.runIf(CAN_RUN)('the routing script, run for real in a network namespace', () => {
  it("before it runs, the seeds' failure is there: traffic from NIC 2 leaves through NIC 1", () => {
    const lab = labFor(memserver34);
    expect(routeGet(lab, '172.16.34.2')).toMatch(/ dev ib0 /);
    expect(mainFabricRoutes(lab)).toEqual([tableRoute('ib0', '172.16.34.1'), tableRoute('ib1', '172.16.34.2')]);
  });

  it.each([34, 16])(
    'host %i, one run: one rule per address at its fixed priority, each table routes the subnet through its NIC, nothing in main',
    (id) => {
      const host = hostOf(seeds, id);
      const lab = labFor(host);
      const result = runRoutingScript(lab, host, seeds, defaultPlaybook);
      expect(result.status).toBe(0);
      expectConfigured(lab, host);
      expect(lines(result.stdout)).toEqual(
        expect.arrayContaining(host.nics.map((n) => `ibfleet-routes: ${n.iface}: configured`)),
      );
    },
  );

  it('three runs leave exactly the state of one, and the second and third say "unchanged"', () => {
    const lab = labFor(memserver34);
    expect(runRoutingScript(lab, memserver34, seeds, defaultPlaybook).status).toBe(0);
    const once = snapshot(lab, memserver34);
    for (let run = 2; run <= 3; run++) {
      const result = runRoutingScript(lab, memserver34, seeds, defaultPlaybook);
      expect(result.status).toBe(0);
      expect(lines(result.stdout)).toEqual(['ibfleet-routes: ib0: unchanged', 'ibfleet-routes: ib1: unchanged']);
    }
    expect(snapshot(lab, memserver34)).toEqual(once);
    expectConfigured(lab, memserver34);
  });

  it('runs started together (hooks, the repair timer, a deploy) wait for each other: every one exits 0, one rule per address', () => {
    const lab = labFor(memserver34);
    const script = writeScript(defaultPlaybook, memserver34, seeds);
    // Eight at once, each reporting its own exit status: two that both find a rule missing would both add it.
    const result = lab.exec([
      'sh',
      '-c',
      'for i in 1 2 3 4 5 6 7 8; do { sh "$0" --quiet; echo "exit $?"; } & done; wait',
      script,
    ]);
    expect(
      lines(result.stdout).filter((l) => l.startsWith('exit ')),
      result.stdout + result.stderr,
    ).toEqual(Array(8).fill('exit 0'));
    expect(result.stderr).not.toContain('File exists');
    expectConfigured(lab, memserver34);
  });

  it('a native change holds the same lock: a run a manager event starts meanwhile waits until the change lets go, then configures', () => {
    const lab = labFor(memserver34);
    const script = writeScript(defaultPlaybook, memserver34, seeds);
    const change = [
      `mkdir -p ${LOCK_DIR}`, // the change script's host lock made it
      TAKE_ROUTING_LOCK,
      // Started as a manager's event starts it: without the change's open lock descriptor.
      '{ sh "$0" --quiet; echo "routes exit $?"; } 7>&- &',
      `if flock -n ${ROUTES_LOCK_PATH} true; then echo "lock free"; else echo "lock held"; fi`,
      // Time enough for a run that did not wait to add its rules (one alone takes a fraction of that).
      'sleep 2',
      'echo "rules while held: $(ip -4 rule show | grep -c " lookup 94")"',
      RELEASE_ROUTING_LOCK,
      'wait',
    ].join('\n');
    const result = lab.exec(['sh', '-c', change, script]);
    expect(
      lines(result.stdout).filter((l) => !l.startsWith('ibfleet-routes: ')),
      result.stderr,
    ).toEqual(['lock held', 'rules while held: 0', 'routes exit 0']);
    expectConfigured(lab, memserver34);
  });

  it.each(['removed', 'replaced'] as const)(
    "a run that waited while a change %s its data (native persistence took over, or a new deploy) changes nothing: the rules stay the manager's",
    (how) => {
      const lab = labFor(memserver34);
      const script = writeScript(defaultPlaybook, memserver34, seeds);
      const data = join(dirname(script), 'routes.conf');
      const change = [
        `mkdir -p ${LOCK_DIR}`,
        TAKE_ROUTING_LOCK,
        // A hook or the repair timer started it before the change took its files away: it has read its data and waits.
        'sh "$0" --quiet 7>&- & run=$!',
        'n=0; until pgrep -x -P "$run" flock >/dev/null || [ "$n" -gt 200 ]; do sleep 0.05; n=$((n + 1)); done',
        how === 'removed' ? 'rm "$1"' : 'cp -p "$1" "$1.new" && mv -f "$1.new" "$1"',
        // What networkd then makes from ibfleet's netplan file, as the change waits for it.
        ...memserver34.nics.flatMap((n) => [
          `ip -4 route add ${SUBNET} dev ${n.iface} src ${n.address} table ${n.table} proto static scope link`,
          `ip -4 rule add from ${n.address} lookup ${n.table} priority ${n.priority} proto static`,
        ]),
        RELEASE_ROUTING_LOCK,
        'wait "$run"; echo "routes exit $?"',
      ].join('\n');
      const result = lab.exec(['sh', '-c', change, script, data]);
      expect(lines(result.stdout), result.stderr).toEqual([
        `ibfleet-routes: ${data} was removed or replaced while this run waited for a change to end; nothing to do`,
        'routes exit 0',
      ]);
      expect(rules(lab)).toEqual([
        KERNEL_RULES.local,
        ...memserver34.nics.map((n) => `${n.priority}: from ${n.address} lookup ${n.table} proto static`),
        KERNEL_RULES.main,
        KERNEL_RULES.default,
      ]);
      for (const n of memserver34.nics)
        expect(table(lab, n.table)).toEqual([`${SUBNET} dev ${n.iface} proto static scope link src ${n.address}`]);
      // The kernel's main-table routes stay: a hook's run would have taken them away.
      expect(mainFabricRoutes(lab)).toEqual(memserver34.nics.map((n) => tableRoute(n.iface, n.address)));
    },
  );

  it('per IFACE: a run for ib1 touches only ib1; a run for ib0 then completes the host; a repeat changes nothing', () => {
    const lab = labFor(memserver34);
    expect(runRoutingScript(lab, memserver34, seeds, defaultPlaybook, ['ib1']).status).toBe(0);
    expect(rules(lab)).toEqual([
      KERNEL_RULES.local,
      '942: from 172.16.34.2 lookup 942',
      KERNEL_RULES.main,
      KERNEL_RULES.default,
    ]);
    expect(table(lab, 942)).toEqual([tableRoute('ib1', '172.16.34.2')]);
    expect(table(lab, 941)).toEqual([]);
    expect(mainFabricRoutes(lab)).toEqual([tableRoute('ib0', '172.16.34.1')]);
    expect(sysctls(lab, 'ib0')).toEqual(UNTOUCHED_SYSCTLS);
    expect(sysctls(lab, 'ib1')).toEqual(SEEDS_SYSCTLS);

    expect(runRoutingScript(lab, memserver34, seeds, defaultPlaybook, ['ib0']).status).toBe(0);
    expectConfigured(lab, memserver34);
    const done = snapshot(lab, memserver34);
    for (const iface of ['ib0', 'ib1', 'ib1']) {
      const again = runRoutingScript(lab, memserver34, seeds, defaultPlaybook, [iface]);
      expect(lines(again.stdout)).toEqual([`ibfleet-routes: ${iface}: unchanged`]);
    }
    expect(snapshot(lab, memserver34)).toEqual(done);
  });

  it('mainRoutes: keep leaves both main-table subnet routes and still adds the tables and rules', () => {
    const lab = labFor(memserver34);
    const keep = loadFixturePlaybook('keep-main-routes.yaml');
    expect(runRoutingScript(lab, memserver34, seeds, keep).status).toBe(0);
    expect(runRoutingScript(lab, memserver34, seeds, keep).status).toBe(0);
    expectConfigured(lab, memserver34, { mainRoutes: 'keep' });
  });

  it.each([
    ['the default playbook', undefined, SEEDS_SYSCTLS],
    ['custom-sysctl.yaml', 'custom-sysctl.yaml', { arp_ignore: 1, arp_announce: 1, rp_filter: 0, accept_local: 0 }],
  ] as const)("sets each fabric interface's sysctls as %s says", (_, file, expected) => {
    const lab = labFor(memserver34);
    // Start from values no playbook here asks for (3 where the kernel takes it, else 1).
    for (const iface of ['ib0', 'ib1'])
      lab.exec([
        'sh',
        '-c',
        `for k in arp_ignore arp_announce rp_filter accept_local; do echo 3 >/proc/sys/net/ipv4/conf/${iface}/$k 2>/dev/null || echo 1 >/proc/sys/net/ipv4/conf/${iface}/$k; done`,
      ]);
    expect(runRoutingScript(lab, memserver34, seeds, loadFixturePlaybook(file)).status).toBe(0);
    expect(sysctls(lab, 'ib0')).toEqual(expected);
    expect(sysctls(lab, 'ib1')).toEqual(expected);
  });

  it('a playbook without fabric-sysctl leaves the kernel settings alone', () => {
    const lab = labFor(memserver34);
    expect(runRoutingScript(lab, memserver34, seeds, loadFixturePlaybook('routes-only.yaml')).status).toBe(0);
    expectConfigured(lab, memserver34);
    expect(sysctls(lab, 'ib0')).toEqual(UNTOUCHED_SYSCTLS);
    expect(sysctls(lab, 'ib1')).toEqual(UNTOUCHED_SYSCTLS);
  });

  it("from the seeds' hand-made state (duplicate rules at automatic priorities, a stray rule, a main route already gone, a wrong table route) one run converges", () => {
    const lab = labFor(memserver34);
    lab.ip('route', 'del', SUBNET, 'dev', 'ib0');
    lab.ip(
      'route',
      'add',
      SUBNET,
      'dev',
      'ib0',
      'proto',
      'kernel',
      'scope',
      'link',
      'src',
      '172.16.34.1',
      'table',
      '941',
    );
    lab.ip(
      'route',
      'add',
      SUBNET,
      'dev',
      'ib0',
      'proto',
      'kernel',
      'scope',
      'link',
      'src',
      '172.16.34.1',
      'table',
      '942',
    );
    lab.ip('rule', 'add', 'from', '172.16.34.1', 'table', '941');
    lab.ip('rule', 'add', 'from', '172.16.34.1', 'table', '941');
    lab.ip('rule', 'add', 'from', '172.16.34.2', 'table', '942');
    lab.ip('rule', 'add', 'from', 'all', 'lookup', '942');
    expect(rules(lab)).toHaveLength(7);

    const result = runRoutingScript(lab, memserver34, seeds, defaultPlaybook);
    expect(result.status).toBe(0);
    expectConfigured(lab, memserver34);
    const converged = snapshot(lab, memserver34);
    expect(runRoutingScript(lab, memserver34, seeds, defaultPlaybook).stdout).not.toContain('configured');
    expect(snapshot(lab, memserver34)).toEqual(converged);
  });

  it('neighbour entries of a NIC are flushed after a change to it, and kept after a run that changes nothing', () => {
    const lab = labFor(memserver34);
    const stale = (iface: string, last: number) =>
      lab.ip(
        'neigh',
        'replace',
        `172.16.35.${last}`,
        'lladdr',
        `02:00:00:00:00:${String(last).padStart(2, '0')}`,
        'dev',
        iface,
        'nud',
        'stale',
      );
    stale('ib0', 10);
    stale('ib1', 20);
    expect(runRoutingScript(lab, memserver34, seeds, defaultPlaybook).status).toBe(0);
    expect(neighbours(lab, 'ib0')).toEqual([]);
    expect(neighbours(lab, 'ib1')).toEqual([]);

    stale('ib0', 11);
    stale('ib1', 21);
    expect(runRoutingScript(lab, memserver34, seeds, defaultPlaybook).status).toBe(0);
    expect(neighbours(lab, 'ib0')).toEqual(['172.16.35.11 lladdr 02:00:00:00:00:11 STALE']);
    expect(neighbours(lab, 'ib1')).toEqual(['172.16.35.21 lladdr 02:00:00:00:00:21 STALE']);

    // Only the NIC that changed is flushed.
    lab.ip('rule', 'del', 'from', '172.16.34.2', 'lookup', '942');
    expect(runRoutingScript(lab, memserver34, seeds, defaultPlaybook).status).toBe(0);
    expect(neighbours(lab, 'ib0')).toEqual(['172.16.35.11 lladdr 02:00:00:00:00:11 STALE']);
    expect(neighbours(lab, 'ib1')).toEqual([]);
  });

  it('a missing interface: exit 1 with a line naming it, and the other NIC is still configured', () => {
    const lab = labFor(memserver34, { missing: ['ib1'] });
    const result = runRoutingScript(lab, memserver34, seeds, defaultPlaybook);
    expect(result.status).toBe(1);
    expect(lines(result.stdout)).toContain('ibfleet-routes: ib1: no such interface');
    expect(rules(lab)).toEqual([
      KERNEL_RULES.local,
      '941: from 172.16.34.1 lookup 941',
      KERNEL_RULES.main,
      KERNEL_RULES.default,
    ]);
    expect(table(lab, 941)).toEqual([tableRoute('ib0', '172.16.34.1')]);
  });

  it('an interface without its derived address: exit 1 with a line naming the address, and nothing done for it', () => {
    const lab = labFor(memserver34, { unaddressed: ['ib1'] });
    const result = runRoutingScript(lab, memserver34, seeds, defaultPlaybook);
    expect(result.status).toBe(1);
    expect(lines(result.stdout)).toContain(
      'ibfleet-routes: ib1: does not carry 172.16.34.2 (is it up, with the address the inventory derives?)',
    );
    expect(table(lab, 942)).toEqual([]);
    expect(rules(lab)).not.toContain('942: from 172.16.34.2 lookup 942');
    expect(sysctls(lab, 'ib1')).toEqual(UNTOUCHED_SYSCTLS);
  });

  it('an argument that is not a fabric NIC is reported and changes nothing (exit 0)', () => {
    const lab = labFor(memserver34);
    const before = snapshot(lab, memserver34);
    const result = runRoutingScript(lab, memserver34, seeds, defaultPlaybook, ['eth0']);
    expect(result.status).toBe(0);
    expect(lines(result.stdout)).toEqual(['ibfleet-routes: eth0: not a fabric NIC of this host, nothing to do']);
    expect(snapshot(lab, memserver34)).toEqual(before);
  });

  describe('data it cannot take: exit 2 with the line and why, before anything is changed', () => {
    const good = () => routesDataFor(defaultPlaybook, memserver34, seeds);
    it.each([
      [
        'data of another version',
        (d: string) => d.replace(/^ibfleet-routes \d+$/m, 'ibfleet-routes 99'),
        /version 99; this program is version/,
      ],
      [
        'a malformed NIC row',
        (d: string) => d.replace('nic ib1 172.16.34.2 942 942 2', 'nic ib1 172.16.34.2 942 x 2'),
        /line \d+: nic ib1: table, priority and index are numbers/,
      ],
      [
        'a word the shell would take for more',
        (d: string) => d.replace('nic ib1 ', 'nic ib1;reboot '),
        /line \d+: it holds characters no setting has/,
      ],
      ['a setting it does not know', (d: string) => `${d}frobnicate 1\n`, /line \d+: unknown setting frobnicate/],
      ['a NIC twice', (d: string) => d.replace(/^(nic ib0 .*)$/m, '$1\n$1'), /nic ib0 twice/],
      ['no data at all', () => '', /it holds no settings/],
    ] as const)('%s', (_, damage, why) => {
      const lab = labFor(memserver34);
      const before = snapshot(lab, memserver34);
      const program = writeScript(defaultPlaybook, memserver34, seeds);
      writeFileSync(join(dirname(program), 'routes.conf'), damage(good()));
      for (const mode of [[], ['--check'], ['--snapshot']]) {
        const result = lab.exec(['sh', program, ...mode]);
        expect(result.status).toBe(2);
        expect(result.stdout).toBe('');
        expect(result.stderr).toMatch(why);
        expect(result.stderr).toContain('nothing changed');
      }
      expect(snapshot(lab, memserver34)).toEqual(before);
    });

    it('without its data the program says so and changes nothing', () => {
      const lab = labFor(memserver34);
      const before = snapshot(lab, memserver34);
      const program = writeScript(defaultPlaybook, memserver34, seeds);
      rmSync(join(dirname(program), 'routes.conf'));
      const result = lab.exec(['sh', program]);
      expect([result.status, result.stderr]).toEqual([
        2,
        `ibfleet-routes: ${dirname(program)}/routes.conf is missing; nothing changed (ibfleet deploy installs it)\n`,
      ]);
      expect(snapshot(lab, memserver34)).toEqual(before);
    });
  });

  it('odd but valid names (ib0.8001, ib_fab-2): configured, sysctls written through /proc despite the dot', () => {
    const host = hostOf(odd, 7);
    const lab = labFor(host);
    expect(runRoutingScript(lab, host, odd, defaultPlaybook).status).toBe(0);
    expectConfigured(lab, host);
    expect(sysctls(lab, 'ib0.8001')).toEqual(SEEDS_SYSCTLS);
    expect(sysctls(lab, 'ib_fab-2')).toEqual(SEEDS_SYSCTLS);
    expect(lines(runRoutingScript(lab, host, odd, defaultPlaybook).stdout)).toEqual([
      'ibfleet-routes: ib0.8001: unchanged',
      'ibfleet-routes: ib_fab-2: unchanged',
    ]);
  });
});

// ---------------------------------------------------------------------------------------------
// Hooks, run the way each manager runs them, with /etc/ibfleet private to the test.

/** A private /etc/ibfleet holding the rendered routing script, and the hook file to run. */
function installHook(
  manager: Manager,
  host: Host,
  fleet: Fleet,
  options: { withScript?: boolean } = {},
): { etc: string; hook: string } {
  const dir = join(workDir, `hook-${++fileCounter}`);
  const etc = join(dir, 'ibfleet');
  mkdirSync(etc, { recursive: true });
  if (options.withScript !== false) {
    writeRoutesProgram(etc, defaultPlaybook, host, fleet);
  }
  const hook = join(dir, '50-ibfleet-routes');
  writeFileSync(hook, renderHook(manager, host, defaultPlaybook.name));
  chmodSync(hook, 0o755);
  return { etc, hook };
}

interface HookEvent {
  readonly env?: Readonly<Record<string, string>>;
  readonly args?: readonly string[];
}

/** How each manager announces "ib1 is up". */
const IB1_UP: Readonly<Record<Manager, HookEvent>> = {
  netplan: {
    env: { IFACE: 'ib1', STATE: 'routable', AdministrativeState: 'configured', OperationalState: 'routable' },
  },
  ifupdown: {
    env: { IFACE: 'ib1', LOGICAL: 'ib1', ADDRFAM: 'inet', METHOD: 'static', MODE: 'start', PHASE: 'post-up' },
  },
  networkmanager: { args: ['ib1', 'up'], env: { DEVICE_IFACE: 'ib1', CONNECTION_ID: 'ib1' } },
};

function runHook(lab: Fabric, installed: { etc: string; hook: string }, event: HookEvent): ExecResult {
  return lab.execWithEtc(installed.etc, [installed.hook, ...(event.args ?? [])], event.env);
}

describe.runIf(CAN_RUN)('the persistence hooks, run as each network manager runs them', () => {
  // systemd-networkd drops every rule it did not make when it reconfigures one link, and announces
  // only that link: whichever interface comes up, the hook restores every fabric NIC.
  it.each(['netplan', 'ifupdown', 'networkmanager'] as const)(
    '%s: ib1 coming up restores every fabric NIC, ib0 included',
    (manager) => {
      const lab = labFor(memserver34);
      const result = runHook(lab, installHook(manager, memserver34, seeds), IB1_UP[manager]);
      expect(result.status).toBe(0);
      expect(result.stdout).toContain('ibfleet-routes: ib0: configured');
      expect(result.stdout).toContain('ibfleet-routes: ib1: configured');
      expectConfigured(lab, memserver34);
      expect(routeGet(lab, '172.16.34.2')).toBe(`${PEER} from 172.16.34.2 dev ib1 table 942 uid 0`);
    },
  );

  it.each(['netplan', 'ifupdown', 'networkmanager'] as const)(
    "%s: a NIC not up yet (boot: ib1 comes up after ib0's hook) is left for its own event, and the hook succeeds",
    (manager) => {
      const lab = labFor(memserver34, { unaddressed: ['ib1'] });
      const event =
        manager === 'networkmanager' ? { args: ['ib0', 'up'] } : { env: { ...IB1_UP[manager].env, IFACE: 'ib0' } };
      const result = runHook(lab, installHook(manager, memserver34, seeds), event);
      expect(result.status).toBe(0);
      expect(result.stderr).toBe('');
      expect(rules(lab)).toEqual([
        KERNEL_RULES.local,
        '941: from 172.16.34.1 lookup 941',
        KERNEL_RULES.main,
        KERNEL_RULES.default,
      ]);
      expect(sysctls(lab, 'ib0')).toEqual(SEEDS_SYSCTLS);
      expect(sysctls(lab, 'ib1')).toEqual(UNTOUCHED_SYSCTLS);
    },
  );

  it.each([
    ['netplan', { env: { IFACE: 'eth0', STATE: 'routable' } }],
    ['ifupdown', { env: { IFACE: 'eth0', MODE: 'start', PHASE: 'post-up' } }],
    ['ifupdown', { env: { IFACE: '--all', MODE: 'start', PHASE: 'post-up' } }],
    ['networkmanager', { args: ['eth0', 'up'] }],
    ['networkmanager', { args: ['ib0', 'reapply'] }],
    ['networkmanager', { args: ['ib0', 'dhcp4-change'] }],
  ] as const)(
    '%s: %j also restores every fabric NIC (another link reconfigured may have cost them their rules)',
    (manager, event) => {
      const lab = labFor(memserver34);
      expect(runHook(lab, installHook(manager, memserver34, seeds), event).status).toBe(0);
      expectConfigured(lab, memserver34);
    },
  );

  it.each(['netplan', 'ifupdown', 'networkmanager'] as const)(
    '%s: every fabric NIC coming up, again and again, ends in the full desired state',
    (manager) => {
      const lab = labFor(memserver34);
      const installed = installHook(manager, memserver34, seeds);
      for (const iface of ['ib0', 'ib1', 'ib0', 'ib1']) {
        const event =
          manager === 'networkmanager' ? { args: [iface, 'up'] } : { env: { ...IB1_UP[manager].env, IFACE: iface } };
        expect(runHook(lab, installed, event).status).toBe(0);
      }
      expectConfigured(lab, memserver34);
    },
  );

  const NOT_FABRIC_UP: readonly (readonly [Manager, string, HookEvent])[] = [
    ['netplan', 'lo routable', { env: { IFACE: 'lo', STATE: 'routable' } }],
    ['netplan', 'ib0 degraded', { env: { IFACE: 'ib0', STATE: 'degraded' } }],
    ['netplan', 'ib0 carrier', { env: { IFACE: 'ib0', STATE: 'carrier' } }],
    ['netplan', 'ib0 off', { env: { IFACE: 'ib0', STATE: 'off' } }],
    ['netplan', 'no IFACE at all', { env: { STATE: 'routable' } }],
    ['ifupdown', 'lo up', { env: { IFACE: 'lo', MODE: 'start', PHASE: 'post-up' } }],
    ['ifupdown', 'ib0 going down (MODE=stop)', { env: { IFACE: 'ib0', MODE: 'stop', PHASE: 'post-down' } }],
    ['networkmanager', 'lo up', { args: ['lo', 'up'] }],
    ['networkmanager', 'hostname (interface "none")', { args: ['none', 'hostname'] }],
    ['networkmanager', 'hostname (empty interface)', { args: ['', 'hostname'] }],
    ['networkmanager', 'ib0 down', { args: ['ib0', 'down'] }],
    ['networkmanager', 'ib0 pre-down', { args: ['ib0', 'pre-down'] }],
    ['networkmanager', 'connectivity-change', { args: ['', 'connectivity-change'] }],
    ['networkmanager', 'no arguments', { args: [] }],
  ];

  it.each(NOT_FABRIC_UP)('%s: %s (not an interface coming up) → exit 0 and nothing changed', (manager, _, event) => {
    const lab = labFor(memserver34);
    const before = snapshot(lab, memserver34);
    const result = runHook(lab, installHook(manager, memserver34, seeds), event);
    expect(result.status).toBe(0);
    expect(result.stdout).toBe('');
    expect(snapshot(lab, memserver34)).toEqual(before);
  });

  it.each(['netplan', 'ifupdown', 'networkmanager'] as const)(
    '%s: exits 0 and logs the reason when the routing script fails (a failing if-up.d hook would fail ifup)',
    (manager) => {
      const lab = labFor(memserver34);
      const installed = installHook(manager, memserver34, seeds);
      writeFileSync(
        join(installed.etc, 'ibfleet-routes'),
        '#!/bin/sh\necho "ibfleet-routes: ib1: cannot add rule from 172.16.34.2 lookup 942"\nexit 1\n',
      );
      const result = runHook(lab, installed, IB1_UP[manager]);
      expect(result.status).toBe(0);
      expect(result.stdout).toContain('ibfleet-routes: ib1: cannot add rule');
      expect(result.stderr).toContain('ibfleet-routes hook: ib1: routing script failed (exit 1)');
    },
  );

  it.each(['netplan', 'ifupdown', 'networkmanager'] as const)(
    '%s: exits 0 and says to deploy when the routing script is not installed',
    (manager) => {
      const lab = labFor(memserver34);
      const before = snapshot(lab, memserver34);
      const result = runHook(lab, installHook(manager, memserver34, seeds, { withScript: false }), IB1_UP[manager]);
      expect(result.status).toBe(0);
      expect(result.stderr).toContain(
        'ibfleet-routes hook: ib1: /etc/ibfleet/ibfleet-routes is missing; run ibfleet deploy',
      );
      expect(snapshot(lab, memserver34)).toEqual(before);
    },
  );
});
