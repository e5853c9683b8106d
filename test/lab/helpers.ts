/**
 * For end-to-end tests anywhere in the project: a real lab for one test file. `useLab` brings a
 * uniquely named lab up in beforeAll and always takes it down in afterAll — also when `up` or a
 * test failed — and first removes leftovers of an earlier, interrupted run of the same file.
 *
 * Tests run two files at once (maxWorkers: 2), so every file picks its own lab name and management
 * subnet, and a lab refuses a subnet another lab uses. Taken (198.18.X.0/24): 61, 63, 161
 * test/lab/lab.test.ts · 62 test/e2e/fleet.test.ts · 65 test/e2e/tui.test.ts · 66
 * test/e2e/onboard.test.ts · 67 test/bench/smoke.test.ts.
 */
import { afterAll, beforeAll } from 'vitest';
import { labDown, labUp, type LabInfo, type LabUpOptions } from '../../src/lab/index.js';
import { run, type RunResult } from '../../src/lab/system.js';

export const IS_ROOT = process.getuid?.() === 0;

/** Printed once per file that skips: a skipped lab suite must be visible, not silently green. */
export function noteIfNotRoot(what: string): void {
  if (!IS_ROOT) console.warn(`NOTE: ${what} skipped: the lab needs root (network namespaces, mounts, sshd); run the tests as root to include it`);
}

export function useLab(options: LabUpOptions & { readonly name: string; readonly mgmtSubnet: string }): () => LabInfo {
  let info: LabInfo | undefined;
  let failure: unknown;
  beforeAll(async () => {
    if (!IS_ROOT) return;
    await labDown(options.name);
    try {
      info = await labUp(options);
    } catch (error) {
      failure = error;
      throw error;
    }
  });
  afterAll(async () => {
    if (IS_ROOT) await labDown(options.name);
  });
  return () => {
    if (!info) throw new Error(`lab ${options.name} is not up${failure instanceof Error ? `: ${failure.message}` : ''}`);
    return info;
  };
}

/** OpenSSH's own client against a lab host: strict host-key checking against the lab's known_hosts, only the lab key. */
export function labSsh(lab: LabInfo, hostId: number, command: string, knownHosts = lab.knownHostsPath): Promise<RunResult> {
  const host = lab.hosts.find((h) => h.id === hostId);
  if (!host) throw new Error(`host ${hostId} is not in lab ${lab.name}`);
  return run(
    [
      'ssh',
      '-F',
      '/dev/null',
      '-o',
      'BatchMode=yes',
      '-o',
      'StrictHostKeyChecking=yes',
      '-o',
      `UserKnownHostsFile=${knownHosts}`,
      '-o',
      'IdentitiesOnly=yes',
      '-o',
      'ConnectTimeout=5',
      '-i',
      lab.identityPath,
      `root@${host.address}`,
      command,
    ],
    { timeoutMs: 15_000 },
  );
}

