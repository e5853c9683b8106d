/**
 * ibfleet across the network managers' generations, end to end on hosts whose whole root is a
 * Debian release (lab up --suite): what an older or newer manager does differently from the
 * machine's own, and that ibfleet holds there.
 *
 * - netplan 0.101 (Debian 11) writes /run/NetworkManager/conf.d/netplan.conf on every `netplan
 *   generate`, whether or not NetworkManager runs: a fresh bullseye netplan host is still detected
 *   as netplan.
 * - systemd-networkd 257 (Debian 13) removes ibfleet's rules and table routes when a link is
 *   reconfigured or networkd restarts, and networkd-dispatcher then reports no `routable`: with the
 *   hook playbook and no repair timer, the routing is back within 5 s of `networkctl reconfigure`
 *   and of a restart of networkd, on Debian 11, 12 and 13, and on a host without systemd.
 *
 * Lab: 70 bullseye netplan, fresh; 71 trixie netplan; 72 trixie netplan without systemd;
 * 73 bullseye netplan; 74 bookworm netplan; 75 bullseye NetworkManager; 76 the same without systemd.
 * - NetworkManager 1.30 (Debian 11) sends no dispatcher event for `nmcli device reapply`: the
 *   repair timer brings the routing back within the bound docs/host.md states (repairEvery + 1 s),
 *   and on 76, without systemd, the route watcher within 2 s; a watcher killed by its pid is drift
 *   in status and --check, and deploy starts it again. Each reapply is watched with `ip monitor`
 *   from before it: the repair may run at any moment after it, before any look could see the route.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { labReboot, labRestartManager } from '../../src/lab/index.js';
import { withHostFunctions } from '../../src/script/host-functions.js';
import { json, statuses, type JsonRun } from '../helpers/cli.js';
import { IS_ROOT, noteIfNotRoot, testLab, useLab } from '../lab/helpers.js';
import { managerLab, REPAIR_BOUND_MS } from './managers.js';
import { NO_SYSTEMD_NOTE } from '../../src/steps/persist/systemd.js';

const LAB = testLab('e2e-generations');
const NETWORKD = [71, 72, 73, 74];
/** The bound docs/manager-versions.md states for the route watcher (NetworkManager before 1.42, no systemd). */
const WATCH_BOUND_MS = 2000;
/** The bound docs/host.md states: the routing is back within this of a reconfigure or restart of networkd. */
const BACK_WITHIN_MS = 5000;

noteIfNotRoot('test/e2e/generations.test.ts (manager generations)');

describe.skipIf(!IS_ROOT)('manager generations on Debian 11, 12 and 13 (needs root)', () => {
  const lab = useLab({
    name: LAB.name,
    mgmtSubnet: LAB.mgmtSubnet,
    hosts: [70, ...NETWORKD, 75, 76],
    managers: {
      70: 'netplan',
      71: 'netplan',
      72: 'netplan',
      73: 'netplan',
      74: 'netplan',
      75: 'networkmanager',
      76: 'networkmanager',
    },
    fresh: [70],
    noSystemd: [72, 76],
    suites: {
      hosts: {
        70: 'bullseye',
        71: 'trixie',
        72: 'trixie',
        73: 'bullseye',
        74: 'bookworm',
        75: 'bullseye',
        76: 'bullseye',
      },
    },
  });
  const m = managerLab(lab);
  /** The shipped hook playbook without the repair timer: only what the managers run can bring the routing back. */
  const work = mkdtempSync(join(tmpdir(), 'ibfleet-e2e-generations-'));
  afterAll(() => rmSync(work, { recursive: true, force: true }));
  const hooksOnly = join(work, 'hooks-only.yaml');
  const shipped = readFileSync(new URL('../../playbooks/dual-ib-routing.yaml', import.meta.url), 'utf8');
  writeFileSync(hooksOnly, shipped.replace(/^ {2}- persist$/m, '  - persist:\n      repairEvery: 0'));
  const networkdInventory = () => m.variant('networkd.yaml', (t) => t.replace(/^ {2}(70|75|76): .*\n/gm, ''));
  const statusOf = async () => {
    const doc = json(await m.runOn(networkdInventory(), 'status', '--playbook', hooksOnly, '--json'));
    return { statuses: statuses(doc), reasons: doc.hosts.flatMap((h) => h.reasons.map((r) => `${h.id}: ${r}`)) };
  };
  /** Every networkd host ok, `ms` after `since`: what status says then. */
  const okAt = async (since: number, ms: number) => {
    await new Promise((r) => setTimeout(r, Math.max(0, since + ms - Date.now())));
    return statusOf();
  };
  const allOk = Object.fromEntries(NETWORKD.map((id) => [id, 'ok']));
  /**
   * `nmcli device reapply ib1` on `id`, with the kernel's route events recorded from before it (the
   * monitor proves it listens: a route of its own in a table nothing uses shows first) until the
   * subnet route in main is deleted again, at most `boundMs`: what NetworkManager and ibfleet did,
   * whenever each did it — no look that a repair running first could miss.
   */
  const reapplyWatched = (id: number, boundMs: number) =>
    m.sh(
      id,
      [
        'ip -4 monitor route >/tmp/route-events & mon=$!',
        // Added and deleted each time: a route added again as it is makes no event.
        'until grep -q "^blackhole 192\\.0\\.2\\.1 table 4242" /tmp/route-events; do ip -4 route add blackhole 192.0.2.1/32 table 4242; ip -4 route del blackhole 192.0.2.1/32 table 4242; sleep 0.05; done',
        'nmcli device reapply ib1 >/dev/null',
        `for i in $(seq 1 ${boundMs / 100}); do grep -q '^Deleted 172\\.16\\.0\\.0/16 dev ib1 ' /tmp/route-events && break; sleep 0.1; done`,
        'kill $mon; grep -E "^(Deleted )?172\\.16\\.0\\.0/16 dev ib1 " /tmp/route-events | grep -v " table " | sed -E "s/( dev ib1) .*/\\1/"; rm -f /tmp/route-events',
      ].join('\n'),
    );

  it('a fresh netplan 0.101 host, where netplan generate wrote /run/NetworkManager/conf.d/netplan.conf and NetworkManager does not run, is detected as netplan', async () => {
    expect(
      await m.sh(
        70,
        "dpkg-query -W -f '${Version}\\n' netplan.io; ls /run/NetworkManager/conf.d; nmcli -t -f RUNNING general >/dev/null 2>&1 || echo 'nm: not running'",
      ),
    ).toMatch(/^0\.101-\S+\nnetplan\.conf\nnm: not running$/);
    const planned = json(await m.run('deploy', '--hosts', '70', '--dry-run', '--json'));
    expect(planned.hosts[0]!.reasons.join('\n')).not.toMatch(/cannot tell which network manager/);
    expect(planned.hosts[0]).toMatchObject({ manager: 'netplan' });
  });

  it("an IPoIB mode on netplan only where the host's netplan (0.105+) and networkd (250+) set one: refused on bullseye (0.101, 247), allowed on bookworm (0.106, 252) and trixie (1.1.2, 257)", async () => {
    // The check a deploy runs before a links file asking a mode goes live (the lab's NICs are veths: no mode to set).
    const check = withHostFunctions('netplan_ipoib_mode 2>&1; echo "rc $?"');
    expect(await m.sh(73, check)).toBe(
      "ibfleet: this host's netplan has no infiniband-mode (it came with netplan 0.105), so it cannot set an IPoIB mode; leave mode out of the links settings for this host; nothing was changed\nrc 1",
    );
    expect(await m.sh(74, check)).toBe('rc 0');
    expect(await m.sh(71, check)).toBe('rc 0');
  });

  it('deploy with the hooks and no repair timer: every networkd host ok (networkd 247, 252, 257; 72 without systemd)', async () => {
    const deployed = await m.runOn(networkdInventory(), 'deploy', '--hosts', 'all', '--playbook', hooksOnly, '--json');
    expect(deployed.code, deployed.stdout + deployed.stderr).toBe(0);
    expect(await m.sh(71, 'networkctl --version | head -1')).toMatch(/^systemd 257 /);
    expect(await statusOf()).toEqual({ statuses: allOk, reasons: [] });
  });

  it(`networkctl reconfigure ib1: the rules and table routes are back within ${BACK_WITHIN_MS / 1000} s on every networkd host`, async () => {
    const since = Date.now();
    await Promise.all(NETWORKD.map((id) => m.sh(id, 'networkctl reconfigure ib1')));
    expect(await okAt(since, BACK_WITHIN_MS)).toEqual({ statuses: allOk, reasons: [] });
  });

  // Each restart returns once networkd is configured again and networkd-dispatcher knows it (~12 s
  // on Debian 12), so the bound is measured from networkd being up, while the restart waits.
  it(
    `a restart of systemd-networkd (a package upgrade): back within ${BACK_WITHIN_MS / 1000} s of networkd being up again`,
    {
      timeout: 150_000,
    },
    async () => {
      // The four hosts restart side by side, as a fleet-wide upgrade restarts them; each host's bound
      // runs from its own networkd being up, and only its own reasons count (another may be restarting).
      // Every restart ends before any is judged: none is left running into the next case.
      const restarts = await Promise.all(
        NETWORKD.map(async (id) => {
          let back: ReturnType<typeof okAt> | undefined;
          const restarted = await labRestartManager(lab().name, id, () => (back = okAt(Date.now(), BACK_WITHIN_MS)));
          return { id, restarted, status: await back };
        }),
      );
      for (const { id, restarted, status } of restarts) {
        expect(restarted.ok, `host ${id}: ${JSON.stringify(restarted.result)}`).toBe(true);
        expect(
          status!.reasons.filter((r) => r.startsWith(`${id}: `)),
          `host ${id}`,
        ).toEqual([]);
      }
      // And a reconfigure after the restart, when networkd runs with ibfleet's networkd.conf drop-in.
      const since = Date.now();
      await Promise.all(NETWORKD.map((id) => m.sh(id, 'networkctl reconfigure ib0; networkctl reconfigure ib1')));
      expect(await okAt(since, BACK_WITHIN_MS)).toEqual({ statuses: allOk, reasons: [] });
      const matrix = json<JsonRun>(await m.runOn(networkdInventory(), 'verify', '--no-rping', '--json')).matrix!;
      expect(
        matrix.filter((c) => !c.ok).map((c) => `${c.from.host}.${c.from.nic} → ${c.to.host}.${c.to.nic}: ${c.detail}`),
      ).toEqual([]);
    },
  );

  it('rollback removes the hooks and the networkd drop-in', async () => {
    const rolled = await m.runOn(networkdInventory(), 'rollback', '--hosts', 'all', '--json');
    expect(rolled.code, rolled.stdout).toBe(0);
    for (const id of NETWORKD)
      expect(
        await m.sh(
          id,
          'ls /etc/networkd-dispatcher/routable.d /etc/networkd-dispatcher/configured.d; ls /etc/systemd/networkd.conf.d 2>/dev/null; true',
        ),
        `host ${id}`,
      ).not.toMatch(/ibfleet/);
  });

  it('NetworkManager 1.30: after nmcli device reapply ib1 (no dispatcher event) the repair timer brings the routing back within repairEvery + 1 s', async () => {
    const nmOnly = m.variant('nm.yaml', (t) => t.replace(/^ {2}7[0-4]: .*\n/gm, ''));
    const deployed = await m.runOn(nmOnly, 'deploy', '--hosts', 'all', '--playbook', m.persisted, '--json');
    expect(deployed.code, deployed.stdout + deployed.stderr).toBe(0);
    expect(await m.sh(75, 'nmcli -t -f VERSION general')).toMatch(/^1\.30\./);
    // NetworkManager puts the kernel's subnet route back in main and no hook runs; the repair timer
    // takes it out again, at its next run (every 15 s: the reapply can fall anywhere in that period,
    // just before a run too, so a look after the reapply may come too late to see the route at all).
    expect(await reapplyWatched(75, REPAIR_BOUND_MS)).toBe('172.16.0.0/16 dev ib1\nDeleted 172.16.0.0/16 dev ib1');
    const started = Date.now();
    for (;;) {
      const doc = json(await m.runOn(nmOnly, 'status', '--playbook', m.persisted, '--json'));
      if (statuses(doc)[75] === 'ok' && statuses(doc)[76] === 'ok') break;
      if (Date.now() - started > REPAIR_BOUND_MS) expect(doc.hosts[0]!.reasons, 'status of 75').toEqual([]);
      await new Promise((r) => setTimeout(r, 500));
    }
  });

  describe('NetworkManager 1.30 without systemd (76): no event and no timer follow a reapply, so the route watcher does (issue 30)', () => {
    /** `nmcli device reapply ib1`, with the kernel's route events around it: what NetworkManager and the watcher did. */
    const reapply = () => reapplyWatched(76, WATCH_BOUND_MS);
    const nmOnly = () => m.variant('nm.yaml', (t) => t.replace(/^ {2}7[0-4]: .*\n/gm, ''));
    /** Status of `id` ok, asked every half second for up to 30 s (NetworkManager brings the NICs up after a boot). */
    const waitOk = async (inventory: string, id: number) => {
      const started = Date.now();
      for (;;) {
        const doc = json(
          await m.runOn(inventory, 'status', '--hosts', String(id), '--playbook', m.persisted, '--json'),
        );
        if (statuses(doc)[id] === 'ok') return;
        if (Date.now() - started > 30_000) expect(doc.hosts[0]!.reasons, `status of ${id}`).toEqual([]);
        await new Promise((r) => setTimeout(r, 500));
      }
    };

    it(`the reapply puts the subnet route back in main, and the watcher takes it out again within ${WATCH_BOUND_MS / 1000} s`, async () => {
      expect(await m.sh(76, 'nmcli -t -f VERSION general; [ -d /run/systemd/system ] || echo no-systemd')).toMatch(
        /^1\.30\.\S+\nno-systemd$/,
      );
      expect(await reapply()).toBe('172.16.0.0/16 dev ib1\nDeleted 172.16.0.0/16 dev ib1');
      expect(
        statuses(json(await m.runOn(nmOnly(), 'status', '--hosts', '76', '--playbook', m.persisted, '--json')))[76],
      ).toBe('ok');
    });

    /**
     * The route watcher's processes of this host alone: the lab's hosts share the machine's process
     * table, so `ps` also lists the watchers of every other lab's hosts (another engineer's run of
     * this file among them); a process is this host's when its network namespace is.
     */
    const WATCHERS =
      'for p in $(pgrep -f \'[i]bfleet-routes-watch|[i]p -4 monitor\'); do [ "$(readlink /proc/$p/ns/net)" = "$(readlink /proc/self/ns/net)" ] && ps -o pid=,ppid=,pgid=,lstart=,args= -p "$p"; done';

    it("a watcher killed by its pidfile's pid is drift in status and in --check, with the fix; deploy starts it again, and it follows the next reapply", async () => {
      // The watcher's processes: those of the process group its pidfile names (a killed one's may stay
      // zombies until reaped: they are gone, they hold nothing).
      const group = (pid: string) =>
        m.sh(
          76,
          `ps -eo pgid=,stat=,args= | awk -v g=${pid} '$1 == g && $2 !~ /^Z/ { $1 = $2 = ""; print substr($0, 3) }'`,
        );
      const killed = await m.sh(76, 'cat /run/ibfleet/watch.pid');
      expect(await group(killed)).toBe('/bin/sh /etc/ibfleet/ibfleet-routes-watch --run\nip -4 monitor route');
      await m.sh(76, `kill -s KILL ${killed}; sleep 0.3`);
      // Nothing of it is left: ip monitor died with it, and nothing holds its lock.
      expect(await group(killed)).toBe('');
      expect(await m.sh(76, `${WATCHERS}; true`)).toBe('');
      const stopped = json(await m.runOn(nmOnly(), 'status', '--hosts', '76', '--playbook', m.persisted, '--json'));
      expect(statuses(stopped)[76]).toBe('drift');
      const said =
        'route watcher /etc/ibfleet/ibfleet-routes-watch is not running: nothing takes the subnet route out of main after nmcli device reapply (NetworkManager before 1.42, no systemd); ibfleet deploy starts it';
      expect(stopped.hosts[0]!.reasons).toEqual([said, NO_SYSTEMD_NOTE]);
      expect(await m.sh(76, '/etc/ibfleet/ibfleet-routes --check; echo "exit $?"')).toBe(`${said}\nexit 1`);
      const deployed = json(await m.runOn(nmOnly(), 'deploy', '--hosts', '76', '--playbook', m.persisted, '--json'));
      expect(deployed.ok, JSON.stringify(deployed.hosts[0])).toBe(true);
      expect(deployed.hosts[0]!.changes).toEqual([
        expect.objectContaining({ kind: 'hook', action: 'start', subject: '/etc/ibfleet/ibfleet-routes-watch' }),
      ]);
      expect(
        statuses(json(await m.runOn(nmOnly(), 'status', '--hosts', '76', '--playbook', m.persisted, '--json')))[76],
      ).toBe('ok');
      // A new watcher: its shell and its ip monitor, in the process group its pidfile names.
      const started = await m.sh(76, 'cat /run/ibfleet/watch.pid');
      expect(started).not.toBe(killed);
      expect(await group(started)).toBe('/bin/sh /etc/ibfleet/ibfleet-routes-watch --run\nip -4 monitor route');
      expect(await reapply()).toBe('172.16.0.0/16 dev ib1\nDeleted 172.16.0.0/16 dev ib1');
    });

    it('after a boot the dispatcher hook starts it again; rollback stops it and leaves nothing running', async () => {
      await m.sh(76, '/etc/ibfleet/ibfleet-routes-watch --stop');
      await labReboot(LAB.name, [76]);
      await waitOk(nmOnly(), 76);
      expect(await reapply()).toBe('172.16.0.0/16 dev ib1\nDeleted 172.16.0.0/16 dev ib1');
      const ps = await m.sh(76, `${WATCHERS}; cat /run/ibfleet/watch.pid; true`);
      const rolled = await m.runOn(nmOnly(), 'rollback', '--hosts', '76', '--json');
      const after = await m.sh(76, `sleep 1; ip route show table main; ${WATCHERS}; true`);
      expect(rolled.code, `${ps}\n---\n${after}`).toBe(0);
      expect(await m.sh(76, `${WATCHERS}; true`)).toBe('');
      expect(
        await m.sh(
          76,
          'ls /run/ibfleet/watch.pid /etc/ibfleet/ibfleet-routes-watch 2>&1 | grep -vc "No such file"; true',
        ),
      ).toBe('0');
    });
  });
});
