/**
 * The restore after a failed verification, run for real in a throw-away network namespace (needs
 * root): a host whose state had odd corners (a foreign route in a NIC table, a foreign rule, main
 * routes in reverse order, strict rp_filter) is put back exactly after the routing script changed
 * it. Its planning and scripts: test/render/restore.test.ts.
 */
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readProbe as parseProbe } from '../../../src/plan/change-output.js';
import { planRestore, stateDifferences } from '../../../src/plan/restore.js';
import { AFTER_MARK } from '../../../src/render/apply-script.js';
import { writeRoutesProgram } from '../../helpers/routes-program.js';
import { renderProbeScript } from '../../../src/render/probe-script.js';
import { renderRestoreScript, type RestoreSpec } from '../../../src/render/restore-script.js';
import { REPAIR_TIMER_PATH } from '../../../src/steps/persist/paths.js';
import { repairUnitsAsRestored } from '../../../src/steps/persist/systemd.js';
import { hostOf, loadFixtureFleet, loadFixturePlaybook } from '../../fixtures/fixtures.js';
import { useFabrics, type Fabric } from '../../helpers/netns.js';

const CAN_RUN = process.getuid?.() === 0;
if (!CAN_RUN) console.warn('NOTE: test/root/render/restore-run.test.ts skipped: it needs root (network namespaces)');
const seeds = loadFixtureFleet('seeds.yaml');
const playbook = loadFixturePlaybook();
const host = hostOf(seeds, 34);
const { work, createFor, runScript } = useFabrics('ibfleet-restore-');

describe.runIf(CAN_RUN)('the restore, run for real in a network namespace', () => {
  const probe = (lab: Fabric) => parseProbe(runScript(lab, renderProbeScript(host, seeds)).stdout);
  const kernel = (lab: Fabric) => ({
    rules: lab.ip('-4', 'rule', 'show'),
    routes: lab.ip('-4', 'route', 'show', 'table', 'all'),
    sysctls: lab.exec([
      'sh',
      '-c',
      'cat /proc/sys/net/ipv4/conf/ib0/* /proc/sys/net/ipv4/conf/ib1/* 2>/dev/null | md5sum',
    ]).stdout,
  });

  it('puts back a foreign table route, a foreign rule, main routes in reverse order and strict rp_filter', () => {
    const lab = createFor(host);
    lab.ip('-4', 'route', 'add', '10.9.0.0/16', 'dev', 'ib0', 'table', '941');
    lab.ip('-4', 'rule', 'add', 'from', '172.16.34.2', 'lookup', '100', 'priority', '500');
    lab.ip('-4', 'route', 'del', '172.16.0.0/16', 'dev', 'ib0');
    lab.ip(
      '-4',
      'route',
      'append',
      '172.16.0.0/16',
      'dev',
      'ib0',
      'proto',
      'kernel',
      'scope',
      'link',
      'src',
      '172.16.34.1',
    );
    lab.exec(['sh', '-c', 'echo 1 > /proc/sys/net/ipv4/conf/ib0/rp_filter']);
    const before = probe(lab);
    const snapshot = kernel(lab);

    const routing = writeRoutesProgram(work, playbook, host, seeds);
    expect(lab.exec(['sh', routing]).status).toBe(0);
    expect(kernel(lab)).not.toEqual(snapshot);
    const changed = probe(lab);
    expect(stateDifferences(host, seeds, before, changed).length).toBeGreaterThan(3);

    const restore = runScript(
      lab,
      renderRestoreScript(host, seeds, { ...planRestore(host, seeds, before, [], ''), files: [] }, 'restore-test'),
    );
    expect(restore.status, restore.stderr).toBe(0);
    expect(kernel(lab)).toEqual(snapshot);
    const after = parseProbe(restore.stdout.slice(restore.stdout.indexOf(AFTER_MARK)));
    expect(stateDifferences(host, seeds, before, after)).toEqual([]);
  });

  it('tells systemd about the repair units it put back: reloads them, stops a timer the change added, restarts one it restored; where it does not run, nothing', () => {
    const lab = createFor(host);
    const timer = '[Timer]\nOnUnitActiveSec=30s\n';
    const sha256 = createHash('sha256').update(timer).digest('hex');
    const empty: RestoreSpec = { files: [], createdDirs: [], steps: [{ last: repairUnitsAsRestored() }] };
    /**
     * The restore under a systemctl that records its calls and says the system is `state`, with a
     * private /run holding /run/systemd/system either way (netplan generate writes it with or
     * without systemd), a private unit directory holding the timer, and a PID 1 that is not systemd
     * (whether systemd runs is then systemctl's answer alone).
     */
    const restoreUnder = (files: RestoreSpec['files'], state = 'running') => {
      const log = join(work, `systemctl-${Math.random().toString(36).slice(2)}.log`);
      const fake = join(work, `systemctl-${state}`);
      writeFileSync(fake, `#!/bin/sh\necho "$*" >>${log}\n[ "$1" != is-system-running ] || echo ${state}\n`, {
        mode: 0o755,
      });
      writeFileSync(log, '');
      const pid1 = join(work, 'pid1-comm');
      writeFileSync(pid1, 'init\n');
      const unitDir = REPAIR_TIMER_PATH.slice(0, REPAIR_TIMER_PATH.lastIndexOf('/'));
      const script = join(work, `restore-${Math.random().toString(36).slice(2)}.sh`);
      writeFileSync(script, renderRestoreScript(host, seeds, { ...empty, files }, 'restore-units'));
      const setup = [
        `mount --bind ${pid1} /proc/1/comm`,
        'mount -t tmpfs ibfleet-test /run && mkdir -p /run/systemd/system',
        `mount -t tmpfs ibfleet-test ${unitDir} && printf '%s' "$1" >${REPAIR_TIMER_PATH}`,
        `mount --bind ${fake} "$(command -v systemctl)"`,
        'exec sh "$0"',
      ].join(' && ');
      const result = lab.exec(['unshare', '--mount', '--propagation', 'private', 'sh', '-c', setup, script, timer]);
      expect(result.status, result.stderr).toBe(0);
      // The probe after the restore asks systemd too (is-active, is-enabled): only what changes its state counts here.
      return readFileSync(log, 'utf8')
        .split('\n')
        .filter((call) => call !== '' && !call.startsWith('is-'));
    };
    expect(restoreUnder([{ path: REPAIR_TIMER_PATH, before: null }])).toEqual([
      'daemon-reload',
      'stop ibfleet-routes-repair.timer',
    ]);
    expect(restoreUnder([{ path: REPAIR_TIMER_PATH, before: { mode: 0o644, sha256 } }])).toEqual([
      'daemon-reload',
      'restart ibfleet-routes-repair.timer',
    ]);
    // Where systemd does not run (systemctl says offline), nothing is asked of it, whatever /run/systemd/system holds.
    expect(restoreUnder([{ path: REPAIR_TIMER_PATH, before: null }], 'offline')).toEqual([]);
  });
});
