/**
 * For end-to-end tests anywhere in the project: a real lab for one test file. `useLab` brings a
 * uniquely named lab up in beforeAll and always takes it down in afterAll — also when `up` or a
 * test failed — and first removes leftovers of an earlier, interrupted run of the same file.
 *
 * Tests run two files at once (maxWorkers: 2), so every file takes its own lab from `testLab`, and a
 * lab refuses a subnet another lab uses.
 *
 * While its lab is up, a file's view of the machine is watched (test/helpers/machine-view.ts): a
 * test under which the machine's /tmp, /etc or /run changed fails saying what changed and when.
 */
import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest';
import { labDown, labUp, type LabInfo, type LabUpOptions } from '../../src/lab/index.js';
import type { Suite } from '../../src/lab/suites.js';
import { run, type RunResult } from '../../src/lab/system.js';
import { watchMachineView, type ViewWatch } from '../helpers/machine-view.js';

export const IS_ROOT = process.getuid?.() === 0;

/**
 * Management subnets of the test suite's labs, 198.18.X.0/24, one per lab a test file brings up.
 * Each is a multiple of 10, so `IBFLEET_TEST_SLOT=k` (0..9) moves every lab of a run to X + k and
 * renames it `<name>-k`: two checkouts can run the suite at once on one machine without touching
 * each other's labs (useLab removes a leftover lab of its own name before it starts).
 */
export const TEST_LAB_OCTETS = {
  'e2e-demo': 50,
  'e2e-fleet': 60,
  'e2e-lab': 70,
  'e2e-crashed': 80,
  'e2e-tui': 90,
  'e2e-onboard': 100,
  'e2e-lab-clash': 110,
  'bench-smoke': 120,
  'e2e-managers-nm': 130,
  'e2e-managers-netplan': 140,
  'e2e-concurrent': 150,
  'e2e-hostile': 170,
  'e2e-fabric': 190,
  'e2e-hostile-files': 210,
  'e2e-native-nm': 230,
  'e2e-native-netplan': 240,
  'e2e-links': 160,
  'e2e-no-systemd': 200,
  'e2e-multirail': 30,
  'e2e-fit': 220,
  'e2e-generations': 20,
  'e2e-suites': 180,
  'e2e-export-links': 10,
  'e2e-links-managers': 40,
  'e2e-ops': 0,
} as const;

/**
 * More test labs, once 198.18's tens ran out: 198.19.X.0/24 for X here plus the slot. 198.19.60–99
 * is between the hand-made labs (198.19.0–59: a checkout's slot k uses 198.19.k and 198.19.k0–k9)
 * and the generation runs (198.19.100–254). All four are taken.
 */
export const MORE_TEST_LAB_OCTETS = {
  'e2e-readme': 90,
  'e2e-jobs': 70,
  'e2e-probers': 60,
  'e2e-routes-program': 80,
} as const satisfies Readonly<Record<string, number>>;

export interface TestLab {
  readonly name: string;
  readonly mgmtSubnet: string;
  /** The management address of host `id`. */
  address(id: number): string;
  /** The management subnet's first three octets, dots escaped, for regular expressions. */
  readonly addressPattern: string;
}

/**
 * Generation runs (test/e2e/on-suite/): a manager's end-to-end file run again with every host on
 * a Debian suite. Such a lab is named `<base>-<suite>` and lives in 198.19.X.0/24 — X from the file's
 * octet here plus the suite's hundred (bullseye 100, bookworm 150, trixie 200), plus the slot —
 * away from the ordinary labs (198.18.X) and the hand-made ones (198.19.0–99).
 */
export const GENERATION_OCTETS: Partial<Record<keyof typeof TEST_LAB_OCTETS, number>> = {
  'e2e-managers-nm': 0,
  'e2e-managers-netplan': 10,
  'e2e-native-nm': 20,
  'e2e-native-netplan': 30,
  'e2e-links': 40,
};
const SUITE_OCTET: Readonly<Record<Suite, number>> = { bullseye: 100, bookworm: 150, trixie: 200 };

const SUITE_KEY = Symbol.for('ibfleet.test.suite');
type SuiteGlobal = { [SUITE_KEY]?: Suite };

/** The suite this test file's labs run on: set by a generation file before it imports the file it repeats. */
export function testSuite(): Suite | undefined {
  return (globalThis as SuiteGlobal)[SUITE_KEY];
}

/**
 * Starts a generation run: every lab the file imported next brings up (testLab + useLab) runs its
 * hosts on `suite`. `defects` are the file's cases known to fail on that suite — a product defect
 * not fixed yet, or an expectation of the machine's own manager version — by their full name
 * ("describe > it") and why: skipped there, with the reason said, only in this run, never in the
 * file's own.
 */
export function onSuite(suite: Suite, defects: Readonly<Record<string, string>> = {}): void {
  (globalThis as SuiteGlobal)[SUITE_KEY] = suite;
  beforeEach((ctx) => {
    const names: string[] = [];
    for (
      let t: { name: string; suite?: unknown } | undefined = ctx.task;
      t;
      t = (t as { suite?: { name: string; suite?: unknown } }).suite
    )
      if (t.name) names.unshift(t.name);
    const defect = defects[names.join(' > ')];
    if (defect !== undefined) {
      console.warn(`SKIPPED on ${suite}: ${names.join(' > ')} — ${defect}`);
      ctx.skip();
    }
  });
}

export function testLab(base: keyof typeof TEST_LAB_OCTETS | keyof typeof MORE_TEST_LAB_OCTETS): TestLab {
  const raw = process.env.IBFLEET_TEST_SLOT ?? '0';
  if (!/^\d$/.test(raw)) throw new Error(`IBFLEET_TEST_SLOT is one digit 0..9, not ${JSON.stringify(raw)}`);
  const slot = Number(raw);
  const suite = testSuite();
  if (suite !== undefined) {
    const octet = GENERATION_OCTETS[base as keyof typeof TEST_LAB_OCTETS];
    if (octet === undefined) throw new Error(`${base} has no generation subnet; add it to GENERATION_OCTETS`);
    const prefix = `198.19.${SUITE_OCTET[suite] + octet + slot}`;
    return {
      name: `${base}-${suite}${slot === 0 ? '' : `-${slot}`}`,
      mgmtSubnet: `${prefix}.0/24`,
      address: (id) => `${prefix}.${id}`,
      addressPattern: prefix.replace(/\./g, '\\.'),
    };
  }
  const prefix =
    base in MORE_TEST_LAB_OCTETS
      ? `198.19.${(MORE_TEST_LAB_OCTETS as Readonly<Record<string, number>>)[base]! + slot}`
      : `198.18.${TEST_LAB_OCTETS[base as keyof typeof TEST_LAB_OCTETS] + slot}`;
  return {
    name: slot === 0 ? base : `${base}-${slot}`,
    mgmtSubnet: `${prefix}.0/24`,
    address: (id) => `${prefix}.${id}`,
    addressPattern: prefix.replace(/\./g, '\\.'),
  };
}

/** Printed once per file that skips: a skipped lab suite must be visible, not silently green. */
export function noteIfNotRoot(what: string): void {
  if (!IS_ROOT)
    console.warn(
      `NOTE: ${what} skipped: the lab needs root (network namespaces, mounts, sshd); run the tests as root to include it`,
    );
}

export function useLab(options: LabUpOptions & { readonly name: string; readonly mgmtSubnet: string }): () => LabInfo {
  let info: LabInfo | undefined;
  let failure: unknown;
  // The machine as the story sees it (test/helpers/machine-view.ts): a test it changed under fails saying so, and when.
  let view: ViewWatch | undefined;
  beforeAll(async () => {
    if (!IS_ROOT) return;
    view = watchMachineView();
    await labDown(options.name);
    // A generation run: every host on its suite, unless the file chose suites itself.
    const suite = testSuite();
    try {
      info = await labUp(
        suite !== undefined && options.suites === undefined ? { ...options, suites: { all: suite } } : options,
      );
    } catch (error) {
      failure = error;
      throw error;
    }
  });
  afterEach(() => {
    const changed = view?.take();
    if (changed) throw new Error(changed);
  });
  afterAll(async () => {
    if (!IS_ROOT) return;
    const changed = view?.take();
    view?.stop();
    try {
      await labDown(options.name);
    } catch (error) {
      // lab down reads /run/ibfleet-lab and /run/netns: where they were covered, that is its reason.
      if (changed && error instanceof Error) error.message += `\n${changed}`;
      throw error;
    }
    if (changed) throw new Error(changed);
  });
  return () => {
    if (!info)
      throw new Error(`lab ${options.name} is not up${failure instanceof Error ? `: ${failure.message}` : ''}`);
    return info;
  };
}

/** OpenSSH's own client against a lab host: strict host-key checking against the lab's known_hosts, only the lab key. */
export function labSsh(
  lab: LabInfo,
  hostId: number,
  command: string,
  knownHosts = lab.knownHostsPath,
): Promise<RunResult> {
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
