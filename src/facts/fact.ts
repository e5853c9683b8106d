/**
 * A fact, as pyinfra has them: the few probe lines that read one thing on a host, and the parser
 * that turns what they printed into data. The probe (src/render/probe-script.ts) is one script made
 * of the common facts every decision needs and the facts the playbook's steps declare; each fact
 * prints sections of its own (`@@ibfleet <name> …`), so adding one never touches another's parser.
 * Pure.
 */
import type { Host } from '../inventory/model.js';

export interface ProbeOptions {
  /**
   * Netplan files and the managers' configuration, read to decide which manager a host uses. The
   * probe an apply script runs after its change leaves them out: the change does not touch them,
   * and verification does not read them.
   */
  readonly managerEvidence: boolean;
  /**
   * Every interface the host has, not only the inventory's names for its NICs: onboard probes a
   * machine before it knows what its interfaces are called, and plans the deploy from that same
   * probe.
   */
  readonly everyInterface?: boolean;
  /**
   * The whole text of ibfleet's files on the host, for `status --diff` / `render --diff`. Without
   * it the probe reads only each file's first lines: the header names the host and the ibfleet
   * version it was generated for, which tells a renamed host's file from a hand edit.
   */
  readonly fileContents?: boolean;
  /**
   * What only status and planning read and no change touches (the fabric's RDMA ports, the
   * neighbour table limits). Default true; the probe closing a change leaves them out.
   */
  readonly fabric?: boolean;
  /**
   * What the playbook's steps ask of this host's probe beyond what every probe reads: a reading
   * that costs the host processes (a port's active MTU from ibv_devinfo) is made only where a
   * step needs it. Named by the steps (Step.probeWants); empty: none.
   */
  readonly wants?: ReadonlySet<string>;
}

/** A fact's own sections of the probe's output: key (the text after the mark) → lines. */
export type FactSections = ReadonlyMap<string, readonly string[]>;

export interface Fact<T> {
  /** Unique among facts; every section the fact prints has this name as its first word. */
  readonly name: string;
  /** Lines of the probe, inside its command substitution (one tab deep); `s KEY` starts a section. */
  probe(host: Host, options: ProbeOptions): readonly string[];
  /** Its sections (keys starting with the name) → the value; an empty map gives the value of a host that printed nothing. */
  parse(sections: FactSections): T;
}
