/**
 * What the engine asks of whoever makes the routing last, and nothing else asks: one typed
 * interface in place of seven hooks every step had to leave empty. The persist step answers it with
 * its parameters (index.ts, persisterFor); a playbook without persist gets NO_PERSISTER — the
 * routing script deploy runs, with no hook, no timer and no manager's configuration of ibfleet's.
 * The manager-specific parts (which hook a manager runs, which manager installed files show, what
 * native persistence binds to: ManagerBinding) stay behind it. Pure.
 */
import type { HostFacts } from '../../facts/host-facts.js';
import type { Manager } from '../../inventory/model.js';
import { SCRIPT_PERSISTENCE, type HostContext, type Persistence } from '../step.js';

/** How the routing persists on a host, and what the plan says about that choice. */
export interface PersistenceChoice {
  readonly persistence: Persistence;
  /** Said with the plan: why a native playbook gets the routing script here, what native mode cannot do here. */
  readonly notes: readonly string[];
  /** Why the host cannot be deployed as the playbook asks; nothing is changed. */
  readonly blockers: readonly string[];
}

export interface Persister {
  /** What the host must have for the routing to persist at all (a manager's dispatcher); the host fails the plan. */
  prerequisite(manager: Manager, facts: HostFacts): string | undefined;
  /** How the routing persists on the host, decided from its probe and what the steps provide the NICs. */
  choose(ctx: Omit<HostContext, 'persistence'>): PersistenceChoice;
  /** How it persists where no host is asked (`ibfleet render`). */
  preview(manager: Manager): Persistence;
  /** The manager a host's installed files show a deploy chose, where the manager cannot be told otherwise. */
  installedManager(facts: HostFacts): Manager | undefined;
  /** What status says of the host besides drift (a host without systemd has no repair timer): the host stays ok. */
  statusNotes(ctx: HostContext): readonly string[];
  /**
   * What runs once ibfleet's files are written or removed (systemd told about changed units): the
   * persist step's change runs it itself; `ibfleet export ansible` renders it for the hosts it
   * cannot probe.
   */
  afterFiles(written: readonly string[], removed: readonly string[]): readonly string[];
  /**
   * ibfleet's files beyond the steps' own paths that a host deployed with these settings must not
   * have (the textfile of a monitor the playbook dropped): deploy removes them when its probe finds
   * them; `ibfleet export ansible`'s role, which has no probe, removes them on every run.
   */
  unwantedFiles(): readonly string[];
}

/** A playbook without persist: the routing script deploy runs, nothing that brings it back. */
export const NO_PERSISTER: Persister = {
  prerequisite: () => undefined,
  choose: () => ({ persistence: SCRIPT_PERSISTENCE, notes: [], blockers: [] }),
  preview: () => SCRIPT_PERSISTENCE,
  installedManager: () => undefined,
  statusNotes: () => [],
  afterFiles: () => [],
  unwantedFiles: () => [],
};
