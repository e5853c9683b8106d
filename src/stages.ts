/**
 * The stages a host moves through in a run, in order. A word of the run's vocabulary
 * (src/vocabulary.ts hands it on) that the errors need too — a HostError says at which stage a
 * host failed — so it stands on its own, below both.
 */

/**
 * Not every command uses every stage. `wait`: another ibfleet run holds the host's lock, and this
 * one waits for it (deploy, rollback). `run`: exec runs the admin's command.
 */
export const STAGES = ['connect', 'wait', 'probe', 'plan', 'push', 'apply', 'verify', 'check', 'run'] as const;
export type Stage = (typeof STAGES)[number];
