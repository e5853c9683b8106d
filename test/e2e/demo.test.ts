/**
 * The README's first command, run as a newcomer runs it (piped, no terminal): `npm run demo` brings
 * up three lab hosts, shows the seeds' failure, deploys, proves the matrix, deploys again without
 * change, reboots every host and finds the state back. If any step of the front door breaks, this
 * fails — not a newcomer's first minute.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { labDown } from '../../src/lab/index.js';
import { run, type RunResult } from '../../src/lab/system.js';
import { IS_ROOT, noteIfNotRoot, testLab } from '../lab/helpers.js';

const LAB = testLab('e2e-demo');

noteIfNotRoot('test/e2e/demo.test.ts (the quick start\'s demo)');

describe.skipIf(!IS_ROOT)('npm run demo (needs root)', () => {
  let stateHome: string;
  let demo: RunResult;

  beforeAll(async () => {
    await labDown(LAB.name);
    // Its run logs go to a directory of the test's own, not to the machine's user.
    stateHome = mkdtempSync(join(tmpdir(), 'ibfleet-demo-state-'));
    demo = await run(['bash', join(process.cwd(), 'scripts/demo'), '--name', LAB.name, '--mgmt-subnet', LAB.mgmtSubnet], {
      timeoutMs: 170_000,
      env: { PATH: process.env.PATH!, HOME: process.env.HOME ?? '/root', XDG_STATE_HOME: stateHome },
    });
  }, 180_000);

  afterAll(async () => {
    await labDown(LAB.name);
    rmSync(stateHome, { recursive: true, force: true });
  });

  it('runs every step to the end and leaves the lab up, with the commands to explore it', () => {
    expect(demo.stderr).not.toMatch(/^demo: /m);
    expect(demo.code, demo.stdout + demo.stderr).toBe(0);
    expect(demo.stdout).toContain(`lab ${LAB.name} is up: 3 host(s) 16,34,40`);
    expect(demo.stdout).toContain(`lab down --name ${LAB.name}`);
  });

  it('shows the failure first, then the fix: 2 of 8 cells before deploy, the full matrix after, nothing to change the second time', () => {
    const summaries = demo.stdout.split('\n').filter((line) => line.startsWith('summary:'));
    expect(summaries).toEqual([
      expect.stringMatching(/^summary: 2 failed · matrix 2\/8 passed/),
      expect.stringMatching(/^summary: 3 changed · /),
      expect.stringMatching(/^summary: 3 ok · matrix 24\/24 passed/),
      expect.stringMatching(/^summary: 3 unchanged · /),
      expect.stringMatching(/^summary: 3 ok · /),
    ]);
  });

  it('shows the real managers inside the hosts', () => {
    expect(demo.stdout).toMatch(/^ibs5f1\s+ethernet\s+connected\s+ibs5f1/m);
    expect(demo.stdout).toMatch(/^\s*\d+ ib1\s+ether\s+routable/m);
  });

  it('prints no terminal escape codes when its output is not a terminal', () => {
    expect(demo.stdout).not.toContain('\u001b');
  });
});
