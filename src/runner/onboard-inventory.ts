/**
 * onboard's inventory write (src/runner/onboard.ts, step 4): the planned addition written once
 * both machines are deployed — planned again on the file as it is now when someone changed it
 * meanwhile (their change kept), a conflict reported rather than written over, and what was
 * written (or why not) as the report tells it.
 */
import { planInventoryAddition, type InventoryEdit } from '../inventory/edit.js';
import type { InventoryAddition } from '../inventory/entry.js';
import type { InventoryChange } from '../plan/onboard-summary.js';
import { HOST_OVERRIDES } from '../steps/registry.js';
import type { InventoryFile } from './files.js';

/** An addition planned on the inventory's text. */
export type Planned = Extract<InventoryEdit, { ok: true }>;

/**
 * Writes the planned text. The file is read again first: if someone changed it meanwhile, the
 * same addition is planned on what is there now (their change is kept), and a conflict is reported
 * rather than written over.
 */
export async function writeAddition(
  inventory: InventoryFile,
  original: string,
  planned: Planned,
  addition: InventoryAddition,
): Promise<{ inventory: InventoryChange; problem?: string }> {
  const unchanged = (added: typeof planned): InventoryChange => ({
    file: inventory.path,
    change: 'unchanged',
    addedHosts: added.addedHosts,
    addedPair: added.addedPair,
    addedLines: [],
  });
  // Nothing was written, and why: the lines stay those planned, for the report to show.
  const notWritten = (problem: string) => ({
    inventory: {
      file: inventory.path,
      change: 'not-written' as const,
      addedHosts: [],
      addedPair: false,
      addedLines: planned.addedLines,
    },
    problem,
  });
  let edit = planned;
  try {
    const current = await inventory.read();
    if (current !== original) {
      const again = planInventoryAddition(current, inventory.path, inventory.baseDir, addition, HOST_OVERRIDES);
      if (!again.ok) {
        return notWritten(
          `${inventory.path} changed while onboarding and now conflicts: ${again.conflicts.join('; ')}`,
        );
      }
      edit = again;
      if (again.text === current) return { inventory: unchanged(again) };
    } else if (planned.text === original) {
      return { inventory: unchanged(planned) };
    }
    await inventory.write(edit.text);
  } catch (error) {
    return notWritten(`cannot write ${inventory.path}: ${(error as Error).message}`);
  }
  return {
    inventory: {
      file: inventory.path,
      change: 'written',
      addedHosts: edit.addedHosts,
      addedPair: edit.addedPair,
      addedLines: edit.addedLines,
    },
  };
}
