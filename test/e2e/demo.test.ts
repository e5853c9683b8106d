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

noteIfNotRoot("test/e2e/demo.test.ts (the quick start's demo)");

describe.skipIf(!IS_ROOT)('npm run demo (needs root)', () => {
  let stateHome: string;
  let demo: RunResult;

  beforeAll(async () => {
    await labDown(LAB.name);
    // Its run logs go to a directory of the test's own, not to the machine's user.
    stateHome = mkdtempSync(join(tmpdir(), 'ibfleet-demo-state-'));
    demo = await run(
      ['bash', join(process.cwd(), 'scripts/demo'), '--name', LAB.name, '--mgmt-subnet', LAB.mgmtSubnet],
      {
        timeoutMs: 170_000,
        env: { PATH: process.env.PATH!, HOME: process.env.HOME ?? '/root', XDG_STATE_HOME: stateHome },
      },
    );
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

  it('shows the failure first, then the fix: NIC 1 ↔ NIC 1 only before deploy (ping and rping), the full matrix after, nothing to change the second time', () => {
    const summaries = demo.stdout.split('\n').filter((line) => line.startsWith('summary:'));
    expect(summaries).toEqual([
      expect.stringMatching(/^summary: 2 failed · matrix 4\/16 passed/),
      expect.stringMatching(/^summary: 3 changed · /),
      expect.stringMatching(/^summary: 3 ok · matrix 48\/48 passed/),
      expect.stringMatching(/^summary: 3 unchanged · /),
      expect.stringMatching(/^summary: 3 ok · /),
    ]);
  });

  it("shows rping failing through NIC 2 before deploy with RDMA CM's event and the likely cause", () => {
    expect(demo.stdout).toMatch(
      /^FAIL rping 16\/ibs5f1 \(172\.16\.16\.2\) → 34\/ib1 \(172\.16\.34\.2\): (REJECTED|UNREACHABLE|ADDR_ERROR) \(error -?\d+\) — likely: 16\/ibs5f1: no rule from 172\.16\.16\.2/m,
    );
  });

  it('shows the real managers inside the hosts', () => {
    expect(demo.stdout).toMatch(/^ibs5f1\s+ethernet\s+connected\s+ibs5f1/m);
    expect(demo.stdout).toMatch(/^\s*\d+ ib1\s+ether\s+routable/m);
  });

  it('prints no terminal escape codes when its output is not a terminal', () => {
    expect(demo.stdout).not.toContain('\u001b');
  });
});
