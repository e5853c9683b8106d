/**
 * Reading what a change script said: the output of an apply, rollback or restore cut at AFTER_MARK
 * into what the change itself printed and the facts its closing probe found, and what a host whose
 * lock another run holds said about it. Pure.
 */
import { parseProbe, withOpening, type HostFacts } from '../facts/host-facts.js';
import { AFTER_MARK } from '../render/apply-script.js';
import { STEP_FACTS } from '../steps/registry.js';

/** A probe's output as facts, the steps' own facts included. */
export function readProbe(output: string): HostFacts {
  return parseProbe(output, STEP_FACTS);
}

/**
 * What the change printed before its closing probe, and the facts that probe found (incomplete when
 * the mark or the probe's end never came). `opening`: the facts of the probe before the change,
 * for a closing probe that left out what no change alters (ProbeOptions.closing); without it the
 * closing probe was whole (a change looked at on a new connection).
 */
export function readChangeOutput(stdout: string, opening?: HostFacts): { changeOutput: string; after: HostFacts } {
  const at = stdout.indexOf(`${AFTER_MARK}\n`);
  const mark = stdout.indexOf(AFTER_MARK);
  const after = readProbe(at < 0 ? '' : stdout.slice(at + AFTER_MARK.length + 1));
  return {
    changeOutput: mark < 0 ? stdout : stdout.slice(0, mark),
    after: opening ? withOpening(after, opening) : after,
  };
}

/** What a host whose lock another run holds said about it (the apply script's last stderr line). */
export function lockedMessage(stderr: string): string {
  return stderr.trim().split('\n').pop() || 'the host lock is held';
}
