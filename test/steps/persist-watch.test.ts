/**
 * The route watcher (steps/persist/watch.ts): rendered only for a NetworkManager host before 1.42
 * that runs no systemd (nothing else follows `nmcli device reapply` there), its program (host/ibfleet-routes-watch) clean under shellcheck,
 * and reacting only to a route to the fabric subnet in the main table — not to the routing
 * script's own table routes, nor to a deletion. Status asks whether it runs (watch_runs, the
 * routing program's, which its --check asks too), and that test knows the watcher only by a process
 * of root's with the watcher's own arguments — not a reused pid, not a process that calls itself so
 * (test/root/steps/persist-watch-runs.test.ts runs it against real processes).
 * The behaviour on a real NetworkManager 1.30 host: test/e2e/generations.test.ts.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PACKAGE_ROOT } from '../../src/package-root.js';
import { ROUTES_PROGRAM, ROUTES_WATCH_PROGRAM } from '../../src/script/routes-program.js';
import type { RenderedFile } from '../../src/script/rendered-file.js';
import {
  needsWatch,
  WATCH_FACT,
  WATCH_NOT_RUNNING,
  WATCH_PATH,
  WATCH_STOP,
  watchFinding,
} from '../../src/steps/persist/watch.js';
import { loadFixtureFleet } from '../fixtures/fixtures.js';
import { expectShellcheckClean } from '../helpers/tools.js';
import { SCRIPT_PERSISTENCE, type RenderContext } from '../../src/steps/step.js';
import type { HostFacts } from '../../src/facts/host-facts.js';

const seeds = loadFixtureFleet('seeds.yaml');
const host = seeds.hosts[0]!;
const ROUTES_WATCH_SOURCE = join(PACKAGE_ROOT, 'host', 'ibfleet-routes-watch');

function context(version: string | undefined, systemd: boolean, manager: RenderContext['manager'] = 'networkmanager') {
  const facts = {
    nm: version === undefined ? undefined : { version, active: new Map(), profiles: [] },
    extra: new Map([['systemd', { runs: systemd }]]),
  } as unknown as HostFacts;
  return { host, fleet: seeds, playbook: 'dual-ib-routing', manager, persistence: SCRIPT_PERSISTENCE, facts };
}

describe('the route watcher', () => {
  it.each([
    ['NetworkManager 1.30, no systemd', context('1.30.6', false), true],
    ['NetworkManager 1.22, no systemd', context('1.22.10', false), true],
    ['NetworkManager 1.30 with systemd (the repair timer)', context('1.30.6', true), false],
    ['NetworkManager 1.42, no systemd (the reapply event)', context('1.42.4', false), false],
    ['a netplan host without systemd', context(undefined, false, 'netplan'), false],
  ])('%s: installed %s', (_what, ctx, installed) => {
    expect(needsWatch(ctx)).toBe(installed);
  });

  it('passes shellcheck', () => {
    expectShellcheckClean(ROUTES_WATCH_SOURCE);
    expect(WATCH_PATH).toBe('/etc/ibfleet/ibfleet-routes-watch');
  });

  it("status and the routing program's --check say a stopped watcher alike; the fix is deploy's start", () => {
    expect(ROUTES_PROGRAM).toContain(`drift '${WATCH_NOT_RUNNING}'`);
    const files = [{ path: WATCH_PATH }] as RenderedFile[];
    const facts = (runs: string | undefined) =>
      ({ extra: new Map([['watch', WATCH_FACT.parse(new Map(runs ? [[runs, []]] : []))]]) }) as unknown as HostFacts;
    expect(watchFinding(facts('watch stopped'), files)).toEqual([
      expect.objectContaining({
        ok: false,
        detail: WATCH_NOT_RUNNING,
        fix: expect.objectContaining({ action: 'start', subject: WATCH_PATH }),
      }),
    ]);
    expect(watchFinding(facts('watch running'), files)).toEqual([expect.objectContaining({ ok: true })]);
    // Not installed yet (the file's own finding says so), or not a host that gets it: nothing.
    expect(watchFinding(facts(undefined), files)).toEqual([]);
    expect(watchFinding(facts('watch stopped'), [])).toEqual([]);
  });

  it('a rollback without the program kills only what watch_runs knows as the watcher', () => {
    expect(WATCH_STOP).toContain('! watch_runs || kill -s KILL -- "-$watch_pid"');
    expect(ROUTES_WATCH_PROGRAM).toContain('setsid "$SELF" --run');
  });
});
