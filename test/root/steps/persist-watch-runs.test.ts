/**
 * watch_runs (the routing program's: status's probe and --check ask it whether the route watcher
 * runs) against real processes, its paths moved into a directory of the test's (the machine's own
 * /run/ibfleet is not touched): it knows the watcher only by a pidfile that is no link and holds a
 * pid, of a process of root's whose arguments are the watcher's `--run`. Needs root (a process of
 * another user's). What status makes of it: test/steps/persist-watch.test.ts.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { HOST_FUNCTIONS } from '../../../src/script/host-functions.js';

const IS_ROOT = process.getuid?.() === 0;
if (!IS_ROOT)
  console.warn('NOTE: test/root/steps/persist-watch-runs.test.ts skipped (it needs root: a process of another user)');

describe.skipIf(!IS_ROOT)('watch_runs', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ibfleet-watch-runs-'));
  const program = join(dir, 'ibfleet-routes-watch');
  const pidfile = join(dir, 'watch.pid');
  writeFileSync(program, '#!/bin/sh\nsleep 60\n');
  chmodSync(program, 0o755);
  const started: ChildProcess[] = [];
  afterAll(() => {
    for (const p of started) p.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });
  const start = (cmd: string, args: string[]) => {
    const p = spawn(cmd, args, { stdio: 'ignore' });
    started.push(p);
    return p.pid!;
  };
  const fn = HOST_FUNCTIONS.get('watch_runs')!
    .text.replaceAll('/run/ibfleet/watch.pid', pidfile)
    .replaceAll('/etc/ibfleet/ibfleet-routes-watch', program);
  const runs = (pid: string) => {
    rmSync(pidfile, { force: true });
    writeFileSync(pidfile, `${pid}\n`);
    return spawnSync('sh', ['-c', `${fn}\nwatch_runs && echo "runs $watch_pid"`], { encoding: 'utf8' }).stdout.trim();
  };

  it('knows the watcher by its pidfile, its owner and its arguments', async () => {
    const watcher = start('sh', [program, '--run']);
    const otherArgs = start('sh', [program, '--start']);
    const namedLikeIt = start('sleep', ['60', program, '--run']);
    await new Promise((r) => setTimeout(r, 200));
    expect(runs(String(watcher))).toBe(`runs ${watcher}`);
    expect(runs(String(otherArgs))).toBe('');
    expect(runs(String(namedLikeIt))).toBe('');
    // Not a number the pidfile may hold: a path, a pid with words after it, none.
    for (const bad of [`../${watcher}`, `${watcher} x`, `0${watcher}`, '']) expect(runs(bad), bad).toBe('');
    // A link at the pidfile's place is not read.
    rmSync(pidfile, { force: true });
    symlinkSync(join(dir, 'elsewhere'), pidfile);
    writeFileSync(join(dir, 'elsewhere'), `${watcher}\n`);
    expect(spawnSync('sh', ['-c', `${fn}\nwatch_runs && echo runs`], { encoding: 'utf8' }).stdout).toBe('');
  });

  it("a process of another user's with the watcher's arguments is not it", async () => {
    const impostor = start('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', 'sh', program, '--run']);
    await new Promise((r) => setTimeout(r, 200));
    expect(runs(String(impostor))).toBe('');
  });

  it('a watcher that ended is not running', async () => {
    const p = spawn('true');
    await new Promise((r) => p.on('exit', r));
    expect(runs(String(p.pid))).toBe('');
  });
});
