/**
 * The lab's systemctl stand-in, run for real in a private /run and unit directory: it answers what
 * ibfleet asks of systemd from the timer runner's marks, and refuses, as systemd would or loudly,
 * everything else — so no test passes on an answer systemd would not give. Needs root (unshare).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { renderSystemctlStandIn } from '../../../src/lab/systemctl-standin.js';

const IS_ROOT = process.getuid?.() === 0;
if (!IS_ROOT) console.warn('NOTE: test/root/lab/systemctl-standin.test.ts skipped: it needs root (unshare, mounts)');
const work = mkdtempSync(join(tmpdir(), 'ibfleet-systemctl-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** Each command's exit code and output, in one private /run and /etc/systemd/system holding `units`. */
function session(units: Record<string, string>, commands: readonly string[]): string[] {
  const standIn = join(work, 'systemctl');
  writeFileSync(standIn, renderSystemctlStandIn(), { mode: 0o755 });
  const setup = [
    'mount -t tmpfs ibfleet-test /run',
    'mount -t tmpfs ibfleet-test /etc/systemd/system',
    ...Object.entries(units).map(([name, text]) => `printf '%s' '${text}' >/etc/systemd/system/${name}`),
    ...commands.map((c) => `out=$(${standIn} ${c} 2>&1); echo "$? $out" | tr '\\n' ' '; echo`),
  ].join('\n');
  const result = spawnSync('unshare', ['--mount', '--propagation', 'private', 'sh', '-c', setup], { encoding: 'utf8' });
  expect(result.status, result.stderr).toBe(0);
  return result.stdout
    .trimEnd()
    .split('\n')
    .map((l) => l.trim());
}

describe.skipIf(!IS_ROOT)('the systemctl stand-in of a lab host that emulates systemd', () => {
  it("answers is-system-running, daemon-reload, and start/restart/stop/is-active of a timer by the runner's marks", () => {
    expect(
      session({ 'x.timer': '[Timer]\nOnUnitActiveSec=30s\n' }, [
        'is-system-running',
        'daemon-reload',
        'is-active x.timer',
        'restart x.timer',
        'is-active x.timer',
        'is-active --quiet x.timer',
        'start x.timer',
        'stop x.timer',
        'is-active x.timer',
      ]),
    ).toEqual(['0 running', '0', '3 inactive', '0', '0 active', '0', '0', '0', '3 inactive']);
  });

  it('fails as systemd does for a timer without a unit file, and loudly for anything it does not emulate', () => {
    expect(session({}, ['restart y.timer', 'restart systemd-networkd', 'enable x.timer', 'status --all'])).toEqual([
      '5 Failed to restart y.timer: Unit y.timer not found.',
      '1 systemctl (ibfleet lab stand-in): restart systemd-networkd is not emulated',
      '1 systemctl (ibfleet lab stand-in): enable is not emulated',
      '1 systemctl (ibfleet lab stand-in): option --all is not emulated',
    ]);
  });
});
