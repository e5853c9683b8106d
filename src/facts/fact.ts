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
  /**
   * The probe closing a change (render/apply-script.ts afterProbe), in the shell whose opening probe
   * ran just before: it leaves out what no change alters — who runs it, the machine's name, OS
   * release and tools, what stands in the way of ibfleet's files (a change writes regular files and
   * makes directories where the plan found nothing in the way) — and the controller takes those from
   * the opening probe (facts/host-facts.ts withOpening). Every section a change can alter is read
   * again: the kernel's links, addresses, rules and routes, sysctls, ibfleet's files, the steps'
   * facts, NetworkManager's profiles, the hook directories and ifupdown's state. Of ibfleet's
   * files it reads the mode, owner and checksum, not their first lines: those only say why a file
   * differs from the one wanted (generated for another host), which after a change that wrote it
   * is no longer the question; they are not taken from the opening probe either.
   */
  readonly closing?: boolean;
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
