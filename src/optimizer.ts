/**
 * V8's optimizing compiler (TurboFan), held off while an ibfleet run starts and let loose once the
 * inventory is read, before any work that repeats per host. Start-up code — zod building and
 * checking every host entry, the YAML lexer over the inventory and the playbook, loading the
 * commands' modules — runs warm but once: TurboFan still compiled it, on a background thread, ~50
 * ms of CPU in every deploy, status and rollback (of status --hosts 1's ~360) that the run never
 * earned back. Code that runs per host is worth compiling, and is, as before, from startOptimizing()
 * on. Only the CLI process holds it off (cli.ts when run as the program), never a module importer.
 */
import { setFlagsFromString } from 'node:v8';

/** A command that never reads an inventory (lab up from --hosts, lab down) still gets it back soon. */
const HOLD_AT_MOST_MS = 1000;

/**
 * How much bytecode a function runs before V8 weighs optimizing it: 16 times V8's own budget
 * (66 KiB in Node 20). With V8's, TurboFan compiled hundreds of functions of a 100-host deploy that
 * run some hundred times each, ~0.2 s of CPU (of ~1.45 s) the run never earned back; with this
 * one, deploy, status and an unchanged deploy take 10–15 % less CPU, and what runs per cell of a
 * full matrix (39 600 cells at 100 hosts) is still compiled, as fast as before.
 */
const INTERRUPT_BUDGET = 16 * 66 * 1024;

let held = false;

export function holdOptimizer(): void {
  held = true;
  setFlagsFromString(`--interrupt-budget=${INTERRUPT_BUDGET}`);
  setFlagsFromString('--no-turbofan');
  setTimeout(startOptimizing, HOLD_AT_MOST_MS).unref();
}

/** TurboFan compiles hot code again (V8 reads the flag at each decision); idempotent, and a no-op unless held. */
export function startOptimizing(): void {
  if (!held) return;
  held = false;
  setFlagsFromString('--turbofan');
}
