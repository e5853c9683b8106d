/**
 * The repair units are what a real systemd host receives: systemd's own verifier accepts them (the
 * lab's timer runner is a stand-in, so the units must be checked against the real thing somewhere).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { filesOf as renderHostFiles } from '../fixtures/fixtures.js';
import { ROUTING_SCRIPT_PATH } from '../../src/script/paths.js';
import { hostOf, loadFixtureFleet, loadFixturePlaybook } from '../fixtures/fixtures.js';

const verifier = spawnSync('systemd-analyze', ['--version'], { encoding: 'utf8' });
const dir = mkdtempSync(join(tmpdir(), 'ibfleet-units-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe.skipIf(verifier.error !== undefined)('the repair units under systemd-analyze verify', () => {
  const fleet = loadFixtureFleet('seeds.yaml');
  const units = renderHostFiles(hostOf(fleet, 34), fleet, loadFixturePlaybook(), 'netplan').filter(
    (f) => f.role === 'repair' && !f.path.endsWith('.conf'),
  );
  const verify = (files: readonly { name: string; content: string }[]) => {
    // The verifier insists that ExecStart's program exists on this machine: /bin/true stands in.
    for (const f of files) writeFileSync(join(dir, f.name), f.content.replace(ROUTING_SCRIPT_PATH, '/bin/true'));
    return spawnSync('systemd-analyze', ['verify', '--man=no', ...files.map((f) => join(dir, f.name))], {
      encoding: 'utf8',
      env: { ...process.env, SYSTEMD_UNIT_PATH: `${dir}:` },
    });
  };

  it('accepts the service and the timer', () => {
    const result = verify(units.map((u) => ({ name: u.path.slice(u.path.lastIndexOf('/') + 1), content: u.content })));
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
  });

  it('would refuse a broken timer (the check can fail)', () => {
    const timer = units.find((u) => u.path.endsWith('.timer'))!;
    const result = verify([
      {
        name: 'broken.timer',
        content: timer.content
          .replace(/^OnBootSec=.*$/m, 'OnBootSec=soon')
          .replace(/^OnUnitActiveSec=.*$/m, 'OnUnitActiveSec=often'),
      },
    ]);
    expect(result.status).not.toBe(0);
  });
});
