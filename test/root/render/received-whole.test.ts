/**
 * "A script sent to a host runs nothing unless it arrived whole" (SPEC). Every script ibfleet sends
 * on stdin to `sh -s` is cut at many byte offsets — every offset of a small one, a dense sample of
 * a large one (each line end and its neighbours, both ends byte by byte, every few bytes between) —
 * and each piece is fed to dash (Debian's and Ubuntu's /bin/sh) and bash with xtrace on. No piece
 * may run a command: the only traced line allowed is the cut call of the entry function itself,
 * which the shell does not find. The pieces run in a sandbox (own mount, network and pid
 * namespaces, with /etc, /run, /var, /root and /tmp on empty tmpfs) so that a piece which did run
 * could change nothing real; a control proves the check sees commands run when a script is not
 * wrapped.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadInventory } from '../../../src/inventory/load.js';
import { PACKAGE_ROOT } from '../../../src/package-root.js';
import { readProbe } from '../../../src/plan/change-output.js';
import { planDeploy } from '../../../src/plan/host-plan.js';
import { planRestore } from '../../../src/plan/restore.js';
import { rollbackLines } from '../../../src/plan/rollback.js';
import { loadPlaybook } from '../../../src/playbook/playbook.js';
import { renderApplyScript, renderRollbackScript } from '../../../src/render/apply-script.js';
import { renderProbeScript } from '../../../src/render/probe-script.js';
import { renderRestoreScript } from '../../../src/render/restore-script.js';
import { renderSettleProbe } from '../../../src/render/settle-script.js';
import { receivedWhole, SCRIPT_ENTRIES } from '../../../src/script/shell.js';
import {
  renderCapabilityScript,
  renderPingScript,
  renderRpingClientScript,
  renderRpingServerScript,
} from '../../../src/render/verify-scripts.js';

const IS_ROOT = process.getuid?.() === 0;
if (!IS_ROOT)
  console.warn(
    'NOTE: test/root/render/received-whole.test.ts skipped: the sandbox needs root (unshare, tmpfs mounts); run the tests as root to include it',
  );

const fleet = loadInventory(readFileSync(join(PACKAGE_ROOT, 'test/fixtures/seeds.yaml'), 'utf8'), 'seeds.yaml');
const playbook = loadPlaybook(
  readFileSync(join(PACKAGE_ROOT, 'playbooks/dual-ib-routing.yaml'), 'utf8'),
  'dual-ib-routing.yaml',
);
const native = loadPlaybook(
  readFileSync(join(PACKAGE_ROOT, 'playbooks/dual-ib-routing-native.yaml'), 'utf8'),
  'dual-ib-routing-native.yaml',
);
const fixture = (name: string) => readFileSync(join(PACKAGE_ROOT, 'test/fixtures/probe', name), 'utf8');
const [h16, h34] = [fleet.hosts[0]!, fleet.hosts[1]!];
const nic = (host: typeof h16, index: number) => ({
  host: host.id,
  name: host.name,
  nic: index,
  iface: host.nics[index - 1]!.iface,
  ip: host.nics[index - 1]!.address,
});
const cell = { from: nic(h16, 2), to: nic(h34, 2), method: 'ping' as const };

/** Every script a run sends, as sent. */
const SCRIPTS: Record<string, string> = {
  probe: renderProbeScript(h34, fleet),
  'probe under the lock': renderProbeScript(h34, fleet, { lock: { kind: 'deploy', waitSeconds: 30, runId: 'c0ffee' } }),
  apply: renderApplyScript(
    h34,
    fleet,
    planDeploy(h34, fleet, playbook, readProbe(fixture('netplan-boot.txt'))),
    'c0ffee',
  ),
  'apply, native persistence': renderApplyScript(
    h16,
    fleet,
    planDeploy(h16, fleet, native, readProbe(fixture('nm-boot.txt'))),
    'c0ffee',
  ),
  rollback: renderRollbackScript(
    h16,
    fleet,
    rollbackLines(h16, fleet, readProbe(fixture('nm-native-deployed.txt'))),
    'c0ffee',
  ),
  settle: renderSettleProbe(h34, fleet, 'c0ffee', 30),
  restore: renderRestoreScript(
    h34,
    fleet,
    planRestore(h34, fleet, readProbe(fixture('netplan-deployed.txt')), [], 'ibfleet: created /etc/ibfleet\n'),
    'c0ffee-restore',
  ),
  capabilities: renderCapabilityScript(h34, fleet),
  ping: renderPingScript([{ id: 0, cell }]),
  'ping (fping)': renderPingScript([{ id: 0, cell }], 'fping'),
  'rping server': renderRpingServerScript([{ id: 1, cell, port: 7174 }]),
  'rping client': renderRpingClientScript([{ id: 1, cell, port: 7174 }]),
};

/**
 * Offsets to cut at: every one of a small script; of a large one both ends byte by byte, each line
 * end and the byte after it, and every 23rd byte. The last byte (the final newline) is left out:
 * a piece missing only that has arrived whole, and the shell runs a last line without newline.
 */
function offsets(text: string): number[] {
  const last = text.length - 1;
  if (last <= 2500) return Array.from({ length: last }, (_, i) => i);
  const set = new Set<number>();
  for (let i = 0; i < 100; i++) set.add(i).add(last - 1 - i);
  for (let i = 0; i < last; i += 23) set.add(i);
  for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) set.add(i).add(i + 1);
  return [...set].filter((k) => k >= 0 && k < last).sort((a, b) => a - b);
}

const work = mkdtempSync(join(tmpdir(), 'ibfleet-cut-'));
/** Loops feeding cuts to the shells at once: the two cores CI has. */
const WORKERS = 2;
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** The namespaces the driver runs in: a private mount table, no network, and a pid namespace it is the first process of. */
const SANDBOX = ['--mount', '--net', '--pid', '--fork', '--propagation', 'private'];

/**
 * The sandbox's driver, run as `sh -c DRIVER driver WORK SCRIPT` under `unshare SANDBOX`: it covers
 * /etc, /run, /var, /root and /tmp with empty tmpfs, then feeds each cut of WORK/SCRIPT (cuts in
 * SCRIPT.cuts) to each shell and prints the traced lines.
 */
function cutDriver(shells: readonly string[]): string {
  return `
    set -u
    # Only as the first process of a pid namespace of its own (unshare --pid --fork, in SANDBOX): a
    # copy of this driver run by hand anywhere else would cover the machine's own /etc, /run, /var,
    # /root and /tmp, for every process on it, until unmounted.
    if [ "$$" != 1 ]; then echo "received-whole driver: not in its sandbox (unshare ${SANDBOX.join(' ')}); nothing covered" >&2; exit 3; fi
    # The work directory stays reachable as the current directory once /tmp is covered.
    cd "$1" || exit 3
    for d in /etc /run /var /root /tmp; do mount -t tmpfs ibfleet-cut "$d" || exit 3; done
    script=$2
    cuts() { # $1: this loop's number, of ${WORKERS}: the cuts n with n % ${WORKERS} = $1
      for sh in ${shells.join(' ')}; do
        n=0
        while read -r k; do
          n=$((n + 1))
          [ $((n % ${WORKERS})) -eq "$1" ] || continue
          if [ "$sh" = dash ]; then
            head -c "$k" "$script" | PATH=/usr/bin:/bin "$sh" -x -s >/dev/null 2>"trace$1"
          else
            [ $((n % 3)) -eq 0 ] || continue
            head -c "$k" "$script" >"piece$1"
            PATH=/usr/bin:/bin "$sh" -x -s <"piece$1" >/dev/null 2>"trace$1"
          fi
          while IFS= read -r line; do case $line in +*) echo "$sh@$k: $line" ;; esac; done <"trace$1"
        done <"$script.cuts"
      done >"traced$1"
    }
    w=0; while [ $w -lt ${WORKERS} ]; do cuts $w & w=$((w + 1)); done
    wait
    w=0; while [ $w -lt ${WORKERS} ]; do cat "traced$w" || exit 3; w=$((w + 1)); done
    exit 0`;
}

/**
 * Feeds `script` cut at each offset to each shell inside the sandbox; returns, per cut, the
 * commands the trace shows ran (`shell@offset: + command`). The cuts are dealt out to WORKERS
 * loops that run side by side, each cut to one of them, every shell of a cut in the same loop.
 */
function tracedCommands(name: string, script: string, shells: readonly string[], cuts: readonly number[]): string[] {
  // bash, slower to start, takes every third cut; dash (the hosts' /bin/sh) takes every one.
  // dash reads its piece from a pipe, as from sshd. bash reads a pipe one byte per read(2) (it
  // must not read past a command that reads stdin itself): tens of thousands of calls for a piece
  // of the apply script, most of this file's time. So bash reads the same bytes from a file of
  // the piece, in blocks; it parses and runs them the same way, command by command.
  const file = join(work, `${name.replace(/\W/g, '_')}.sh`);
  writeFileSync(file, script);
  writeFileSync(`${file}.cuts`, `${cuts.join('\n')}\n`);
  const out = execFileSync('unshare', [...SANDBOX, 'sh', '-c', cutDriver(shells), 'driver', work, basename(file)], {
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  // In the order one loop would have given: shell by shell, each cut's lines as its shell traced them.
  const at = (line: string) => {
    const [sh, k] = line.slice(0, line.indexOf(':')).split('@');
    return [shells.indexOf(sh!), Number(k)] as const;
  };
  return out
    .split('\n')
    .filter(Boolean)
    .sort((a, b) => at(a)[0] - at(b)[0] || at(a)[1] - at(b)[1]);
}

/**
 * The one traced line a cut piece may show: the shell trying to run a cut-off call of the entry
 * function, or its name alone from the first line — not defined (yet), so not found, nothing run.
 */
function isCutCall(line: string, script: string): boolean {
  const command = line.replace(/^[^:]+: \++ /, '');
  const entry = SCRIPT_ENTRIES.find((e) => script.endsWith(`\n${e}\n`))!;
  return command.length > 0 && entry.startsWith(command);
}

const shells = ['dash', 'bash'].filter((sh) => spawnSync('sh', ['-c', `command -v ${sh}`]).status === 0);

describe.skipIf(!IS_ROOT)('every script ibfleet sends runs nothing unless it arrived whole', () => {
  it('every entry function has a name no prefix of which is a command, a shell builtin or another entry', () => {
    for (const entry of SCRIPT_ENTRIES) {
      for (let n = 1; n < entry.length; n++) {
        const prefix = entry.slice(0, n);
        for (const sh of shells)
          expect(spawnSync(sh, ['-c', `command -v -- '${prefix}'`]).status, `${sh}: ${prefix}`).not.toBe(0);
        expect(SCRIPT_ENTRIES.filter((other) => other !== entry && other.startsWith(entry))).toEqual([]);
      }
    }
  });

  it.each(Object.keys(SCRIPTS))(
    '%s: cut anywhere, nothing runs',
    (name) => {
      const script = SCRIPTS[name]!;
      expect(script.endsWith('\n')).toBe(true);
      const traced = tracedCommands(name, script, shells, offsets(script));
      // A piece whose trace shows more than the cut call ran something.
      const cutsThatRan = new Set(traced.filter((line) => !isCutCall(line, script)).map((line) => line.split(':')[0]));
      expect(traced.filter((line) => cutsThatRan.has(line.split(':')[0]))).toEqual([]);
      // Hundreds of shells per script: a few seconds alone, over a minute on a machine busy with other suites.
    },
    240_000,
  );

  it('the driver covers nothing outside its sandbox: a copy run by hand (not the first process of its own pid namespace) refuses before it mounts', () => {
    // Run here in a private mount namespace, so that a driver without the check covers only that
    // one; the machine's namespace, where a copy run by hand would cover /tmp for every process, is never tried.
    const result = spawnSync(
      'unshare',
      [
        '--mount',
        '--propagation',
        'private',
        'sh',
        '-c',
        'sh -c "$1" driver "$2" none.sh; echo "exit $?"; findmnt -n -o SOURCE /tmp; true',
        'outer',
        cutDriver(shells),
        work,
      ],
      { encoding: 'utf8' },
    );
    expect(result.stdout, result.stderr).toBe('exit 3\n');
    expect(result.stderr).toContain('received-whole driver: not in its sandbox (unshare --mount --net --pid --fork');
  });

  it('the check sees commands run when a script is not wrapped (control)', () => {
    const body = 'set -u\necho first\nmkdir -p /etc/ibfleet-control\n';
    const plain = tracedCommands('control-plain', body, shells.slice(0, 1), [body.indexOf('mkdir')]);
    expect(plain.some((line) => line.includes('echo first'))).toBe(true);
    const wrapped = receivedWhole('__ibfleet_probe_main', body);
    expect(
      tracedCommands('control-wrapped', wrapped, shells.slice(0, 1), [wrapped.indexOf('mkdir')]).filter(
        (l) => !isCutCall(l, wrapped),
      ),
    ).toEqual([]);
    // And whole, it runs: the trace shows the call and the body.
    const whole = tracedCommands('control-whole', wrapped, shells.slice(0, 1), [wrapped.length]);
    expect(whole.some((line) => line.includes('echo first'))).toBe(true);
  });
});
