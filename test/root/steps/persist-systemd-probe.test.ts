/**
 * Whether systemd runs a host, asked by what runs — PID 1, and `systemctl is-system-running` — not
 * by /run/systemd/system, which `netplan generate` writes on hosts without systemd: the probe run
 * for real under each combination (a private /run, a file laid over /proc/1/comm, a systemctl that
 * answers as told). Needs root (unshare, mounts). What the plan and status decide from it:
 * test/steps/persist-systemd.test.ts.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { factOf } from '../../../src/facts/host-facts.js';
import { readProbe as parseProbe } from '../../../src/plan/change-output.js';
import { renderProbeScript } from '../../../src/render/probe-script.js';
import { SYSTEMD_FACT } from '../../../src/steps/persist/systemd.js';
import { hostOf, loadFixtureFleet } from '../../fixtures/fixtures.js';

const IS_ROOT = process.getuid?.() === 0;
if (!IS_ROOT)
  console.warn('NOTE: test/root/steps/persist-systemd-probe.test.ts skipped (it needs root: unshare, mounts)');
const seeds = loadFixtureFleet('seeds.yaml');
const host = hostOf(seeds, 34);
const work = mkdtempSync(join(tmpdir(), 'ibfleet-systemd-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/**
 * The probe's facts on a host whose PID 1 is `pid1` and whose systemctl prints `state` for
 * is-system-running (and `active` for is-active) — or has no systemctl at all — with
 * /run/systemd/system present, as netplan generate leaves it.
 */
function probeUnder(pid1: string, state: string | undefined, runDir = true) {
  const comm = join(work, `comm-${pid1}`);
  writeFileSync(comm, `${pid1}\n`);
  const fake = join(work, `systemctl-${state ?? 'none'}`);
  writeFileSync(
    fake,
    `#!/bin/sh\ncase $1 in is-system-running) echo ${state ?? ''} ;; is-active) echo active ;; esac\n`,
    { mode: 0o755 },
  );
  const script = join(work, 'probe.sh');
  writeFileSync(script, renderProbeScript(host, seeds));
  const systemctl =
    state === undefined
      ? 'mount --bind /dev/null "$(command -v systemctl)"'
      : `mount --bind ${fake} "$(command -v systemctl)"`;
  const setup = [
    `mount --bind ${comm} /proc/1/comm`,
    'mount -t tmpfs ibfleet-test /run',
    ...(runDir ? ['mkdir -p /run/systemd/system'] : []),
    systemctl,
    'exec sh "$0"',
  ].join(' && ');
  const result = spawnSync('unshare', ['--mount', '--propagation', 'private', 'sh', '-c', setup, script], {
    encoding: 'utf8',
  });
  expect(result.status, result.stderr).toBe(0);
  return parseProbe(result.stdout);
}

describe.skipIf(!IS_ROOT)('the probe tells a host systemd runs from one it does not', () => {
  it.each([
    ['PID 1 is systemd', 'systemd', 'offline', true],
    ['systemctl says running', 'init', 'running', true],
    ['systemctl says degraded (a failed unit)', 'init', 'degraded', true],
    ['systemctl says offline, /run/systemd/system notwithstanding', 'init', 'offline', false],
    ['systemctl cannot reach a bus (prints nothing)', 'sh', '', false],
    ['no systemctl that runs', 'tini', undefined, false],
  ] as const)('%s', (_, pid1, state, runs) => {
    const facts = probeUnder(pid1, state);
    expect(facts.complete).toBe(true);
    // The timer is asked after only where systemd runs.
    expect(factOf(facts, SYSTEMD_FACT)).toEqual({ runs, repairTimer: runs ? 'active' : undefined });
  });

  it('without /run/systemd/system (which systemd makes at boot) systemctl is not even asked: no systemd, one process fewer', () => {
    expect(factOf(probeUnder('init', 'running', false), SYSTEMD_FACT)).toEqual({ runs: false, repairTimer: undefined });
  });
});
