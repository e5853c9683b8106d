/**
 * What the per-manager end-to-end files share: a lab whose hosts run one real network manager, the
 * built CLI against it, and the checks every scenario step ends with — status ok and the full
 * matrix passing, or, once persistence is gone, drift and failing cells.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect } from 'vitest';
import { labExec, type LabInfo } from '../../src/lab/index.js';
import { ibfleet, json, statuses, type JsonRun } from '../helpers/cli.js';

/**
 * The repair timer's interval in these tests: the shipped 30 s, shortened so a test waits seconds —
 * but long enough that a status run on a loaded CI machine fits between two repairs.
 */
export const REPAIR_EVERY_S = 15;
/** The bound the tests hold the repair to: the interval, the lab timer runner's 1 s poll, and slack for a loaded CI machine. */
export const REPAIR_BOUND_MS = (REPAIR_EVERY_S + 1) * 1000 + 6000;

/**
 * How many times a step's closing matrix is asked before its failures count. A manager's event
 * (`nmcli connection up`, a reapply) can still be settling when status already reads ok: CI once saw
 * one ping of three lost (`2/3 replies`) right after `nmcli connection up`. A rule or route that is
 * missing fails every ask; a packet lost while the manager finishes does not fail the next.
 */
export const MATRIX_ASKS = 3;

export interface ManagerLab {
  readonly run: (...args: string[]) => ReturnType<typeof ibfleet>;
  /** A copy of the lab inventory (its ssh: paths made absolute) with `edit` applied: its path. */
  readonly variant: (name: string, edit: (text: string) => string) => string;
  /** The CLI against another inventory (a variant). */
  readonly runOn: (inventory: string, ...args: string[]) => ReturnType<typeof ibfleet>;
  readonly sh: (id: number, script: string) => Promise<string>;
  /** The shipped playbook with repairEvery shortened; and one with the same routing but nothing persisted (no persist or fabric-sysctl step). */
  readonly persisted: string;
  readonly unpersisted: string;
  /** Status against `playbook`: the host → status map and every host's drift reasons. */
  readonly status: (playbook?: string) => Promise<{ statuses: Record<number, string>; reasons: string[] }>;
  /** The full matrix of the lab: the cells that failed. */
  readonly failingCells: () => Promise<string[]>;
  /**
   * The full matrix asked until it passes, at most MATRIX_ASKS times a second apart: the cells that
   * failed the last ask, and every ask's failures, in order, for the message.
   */
  readonly settledCells: () => Promise<{ cells: string[]; asks: string[] }>;
  /** Status ok and every cell passing. */
  readonly expectHealthy: (step: string) => Promise<void>;
  /** Polls status until every host is ok; the milliseconds it took, or throws after `timeoutMs`. */
  readonly untilOk: (timeoutMs: number) => Promise<number>;
}

export function managerLab(lab: () => LabInfo): ManagerLab {
  const work = mkdtempSync(join(tmpdir(), 'ibfleet-e2e-managers-'));
  afterAll(() => rmSync(work, { recursive: true, force: true }));
  const shipped = readFileSync(new URL('../../playbooks/dual-ib-routing.yaml', import.meta.url), 'utf8');
  const persisted = join(work, 'repair-fast.yaml');
  writeFileSync(persisted, shipped.replace(/^ {2}- persist$/m, `  - persist:\n      repairEvery: ${REPAIR_EVERY_S}`));
  const unpersisted = join(work, 'no-persist.yaml');
  // Nothing persisted: no hook, and no sysctl file either — the lab's boot applies /etc/sysctl.d to
  // each NIC as udev would, and loose rp_filter alone would let ping through the wrong NIC.
  writeFileSync(
    unpersisted,
    shipped
      .replace(/^ {2}- persist$/m, '')
      .replace(/^ {2}- fabric-sysctl:\n(?: {6}.*\n)+/m, '')
      .replace('name: dual-ib-routing', 'name: no-persist'),
  );

  const run = (...args: string[]) => ibfleet(['-i', lab().inventoryPath, ...args]);
  const runOn = (inventory: string, ...args: string[]) => ibfleet(['-i', inventory, ...args]);
  const variant = (name: string, edit: (text: string) => string) => {
    const text = readFileSync(lab().inventoryPath, 'utf8')
      .replace('knownHosts: known_hosts', `knownHosts: ${lab().knownHostsPath}`)
      .replace('identityFile: id_ed25519', `identityFile: ${lab().identityPath}`);
    const path = join(work, name);
    writeFileSync(path, edit(text));
    return path;
  };
  const status = async (playbook = persisted) => {
    const doc = json(await run('status', '--playbook', playbook, '--json'));
    return {
      statuses: statuses(doc),
      reasons: doc.hosts.flatMap((h) => (h.reasons ?? []).map((r) => `${h.id}: ${r}`)),
    };
  };
  const failingCells = async () => {
    const doc = json<JsonRun>(await run('verify', '--no-rping', '--json'));
    return doc
      .matrix!.filter((c) => !c.ok)
      .map((c) => `${c.from.host}.${c.from.nic} → ${c.to.host}.${c.to.nic}: ${c.detail}`);
  };
  const settledCells = async () => {
    const asks: string[] = [];
    for (let ask = 1; ; ask++) {
      const cells = await failingCells();
      asks.push(`ask ${ask}: ${cells.length === 0 ? 'every cell passed' : `\n  ${cells.join('\n  ')}`}`);
      // A pass after a failed ask is said where CI's log shows it: settling, not silence.
      if (cells.length === 0 && ask > 1) console.warn(`the matrix passed on ask ${ask}; before:\n${asks.join('\n')}`);
      if (cells.length === 0 || ask === MATRIX_ASKS) return { cells, asks };
      await new Promise((r) => setTimeout(r, 1000));
    }
  };
  const allOk = (s: Record<number, string>) => Object.values(s).every((v) => v === 'ok');
  return {
    run,
    variant,
    runOn,
    sh: async (id, script) => (await labExec(lab().name, id, ['sh', '-c', script])).stdout.trim(),
    persisted,
    unpersisted,
    status,
    failingCells,
    settledCells,
    expectHealthy: async (step) => {
      const s = await status();
      expect(s.reasons, `status after ${step}`).toEqual([]);
      expect(allOk(s.statuses), `status after ${step}`).toBe(true);
      const { cells, asks } = await settledCells();
      if (cells.length > 0) throw new Error(`matrix after ${step}, asked ${asks.length} times:\n${asks.join('\n')}`);
    },
    untilOk: async (timeoutMs) => {
      const started = Date.now();
      for (;;) {
        const s = await status();
        if (allOk(s.statuses)) return Date.now() - started;
        if (Date.now() - started > timeoutMs)
          throw new Error(`still drifting after ${timeoutMs} ms: ${s.reasons.join('; ')}`);
        await new Promise((r) => setTimeout(r, 500));
      }
    },
  };
}
