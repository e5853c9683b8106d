/**
 * What the native-persistence end-to-end files share: the built CLI against a lab of real managers,
 * the shipped hook and native playbooks, and the checks each scenario step ends with — status ok
 * under the playbook deployed and the full matrix passing.
 */
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import type { LabInfo } from '../../src/lab/index.js';
import { hostProcesses } from '../../src/lab/processes.js';
import { ibfleet, json, type JsonRun } from '../helpers/cli.js';
import { managerLab, type ManagerLab } from './managers.js';

export const NATIVE = fileURLToPath(new URL('../../playbooks/dual-ib-routing-native.yaml', import.meta.url));
export const HOOK = fileURLToPath(new URL('../../playbooks/dual-ib-routing.yaml', import.meta.url));

/** How long a manager may take to set things right after an event, on a loaded CI machine. */
export const SETTLE_MS = 30_000;

export interface NativeLab {
  readonly run: (...args: string[]) => ReturnType<typeof ibfleet>;
  readonly variant: ManagerLab['variant'];
  readonly runOn: ManagerLab['runOn'];
  readonly deploy: (playbook: string, hosts?: string) => Promise<JsonRun & { code: number; text: string }>;
  readonly sh: (id: number, script: string) => Promise<string>;
  readonly status: (playbook: string) => Promise<{ statuses: Record<number, string>; reasons: string[] }>;
  readonly failingCells: () => Promise<string[]>;
  readonly settledCells: ManagerLab['settledCells'];
  readonly expectHealthy: (step: string, playbook: string) => Promise<void>;
  readonly untilOk: (playbook: string, timeoutMs?: number) => Promise<number>;
  /** `nmcli -g ipv4.routing-rules,ipv4.route-table connection show <profile>`, as an admin checks it. */
  readonly profile: (id: number, name: string) => Promise<string>;
}

/**
 * A deploy's failed hosts and their errors, one line each, ahead of its whole output in an
 * assertion's message: a message is cut (the flaky reporter keeps its first lines), and the JSON of
 * the hosts that changed would fill the cut before the host that failed.
 */
function failedFirst(doc: JsonRun): string {
  return doc.hosts
    .filter((h) => h.error !== null || h.status === 'failed')
    .map((h) => `host ${h.id} ${h.status}: ${h.error ?? '(no error given)'}\n`)
    .join('');
}

/** Each host's addresses, rules, fabric routes and neighbours: what an admin reads when a cell fails. */
async function kernelState(ids: number[], sh: NativeLab['sh']): Promise<string> {
  const script = 'ip -4 -br addr; ip -4 rule; ip -4 route show table all | grep "^172\\.16\\."; ip -4 neigh';
  const blocks = await Promise.all(ids.map(async (id) => `\n--- host ${id}\n${await sh(id, script)}`));
  return blocks.join('');
}

export function nativeLab(lab: () => LabInfo): NativeLab {
  const { run, variant, runOn, sh, status, failingCells, settledCells } = managerLab(lab);
  const allOk = (s: Record<number, string>) => Object.values(s).every((v) => v === 'ok');
  return {
    run,
    variant,
    runOn,
    deploy: async (playbook, hosts = 'all') => {
      const result = await run('deploy', '--hosts', hosts, '--playbook', playbook, '--json');
      const doc = json(result);
      return { ...doc, code: result.code, text: failedFirst(doc) + result.stdout + result.stderr };
    },
    sh,
    status,
    failingCells,
    settledCells,
    expectHealthy: async (step, playbook) => {
      const s = await status(playbook);
      expect(s.reasons, `status after ${step}`).toEqual([]);
      expect(allOk(s.statuses), `status after ${step}`).toBe(true);
      const { cells, asks } = await settledCells();
      if (cells.length === 0) return;
      // Every ask's cells in full, and each host's kernel state: a cut array (`[ …(8) ]`), or an
      // expected string cut by the assertion, told nothing of a failure seen once in CI.
      const state = await kernelState(
        lab().hosts.map((h) => h.id),
        sh,
      );
      throw new Error(`matrix after ${step}, asked ${asks.length} times:\n${asks.join('\n')}${state}`);
    },
    untilOk: async (playbook, timeoutMs = SETTLE_MS) => {
      const started = Date.now();
      for (;;) {
        const s = await status(playbook);
        if (allOk(s.statuses)) return Date.now() - started;
        if (Date.now() - started > timeoutMs)
          throw new Error(`still drifting after ${timeoutMs} ms: ${s.reasons.join('; ')}`);
        await new Promise((r) => setTimeout(r, 500));
      }
    },
    profile: (id, name) => sh(id, `nmcli -g ipv4.routing-rules,ipv4.route-table connection show ${name}`),
  };
}

/** Whether strace is on this machine (scripts/setup installs it): withSlowNetworkd's means. */
const HAS_STRACE = spawnSync('strace', ['-V'], { stdio: 'ignore' }).status === 0;

/**
 * `run` while the lab host's systemd-networkd is slow, as on a loaded machine: strace holds it
 * `delayMs` after each message it sends (a D-Bus answer, a netlink request). `networkctl reload`
 * and `reconfigure` return before networkd acts on the link (it asks the kernel for the link first);
 * slowed, networkd acts well after they return, every time — where a CI machine's load made that a
 * rare race. Without strace the run is not slowed, and says so.
 */
export async function withSlowNetworkd<T>(
  lab: string,
  id: number,
  run: () => Promise<T>,
  delayMs = 50,
  /** recvmsg: networkd reads the kernel's answers late, so it acts on a link well after networkctl's command returned. */
  syscall: 'sendmsg' | 'recvmsg' = 'sendmsg',
): Promise<T> {
  if (!HAS_STRACE) {
    console.warn(`NOTE: no strace (scripts/setup installs it): host ${id}'s systemd-networkd is not slowed`);
    return run();
  }
  const networkd = (await hostProcesses(lab, id)).find((p) => /^\S*\/systemd-networkd(\s|$)/.test(p.command));
  if (!networkd) throw new Error(`no systemd-networkd runs in lab host ${id}`);
  const args = [
    '-q',
    '-p',
    String(networkd.pid),
    '-e',
    `trace=${syscall}`,
    '-e',
    `inject=${syscall}:delay_exit=${delayMs * 1000}`,
  ];
  const strace = spawn('strace', [...args, '-o', '/dev/null'], { stdio: 'ignore' });
  const exited = new Promise<void>((resolve) => strace.once('exit', () => resolve()));
  try {
    // Attached once networkd names strace as its tracer.
    const tracer = () => /^TracerPid:\s*(\d+)/m.exec(readFileSync(`/proc/${networkd.pid}/status`, 'utf8'))?.[1];
    for (let i = 0; tracer() !== String(strace.pid); i++) {
      if (i > 100 || strace.exitCode !== null)
        throw new Error(`strace did not attach to systemd-networkd ${networkd.pid}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    return await run();
  } finally {
    // SIGTERM: strace detaches and networkd runs on untouched.
    strace.kill('SIGTERM');
    await exited;
  }
}
