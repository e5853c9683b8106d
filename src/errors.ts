/**
 * The small, closed set of errors ibfleet raises. Only src/cli.ts turns them into exit codes:
 * UsageError and ConfigError → 2 (nothing was contacted), HostError is reported per host and
 * folded into exit 1, LabError (the lab's own work on this machine) is 1, anything else is a
 * BugError / unexpected and also ends with 1 after a message that asks for a bug report.
 */
import type { Stage } from './stages.js';

/** Where in a YAML file a problem sits; line and column are 1-based. */
export interface SourcePosition {
  readonly file: string;
  readonly line: number;
  readonly column: number;
}

export interface InventoryProblem {
  readonly position: SourcePosition;
  /** What is wrong, naming the offending value. */
  readonly message: string;
  /** What is allowed / how to fix it. */
  readonly hint?: string;
}

/**
 * Input quoted back in a message, cut to `max` characters: a problem line names the offending
 * value, and a hostile or mistaken file (a binary, a megabyte on one line) must not turn one
 * line of output into megabytes.
 */
export function clipInput(text: string, max = 60): string {
  if (text.length <= max) return text;
  const chars = [...text];
  return chars.length <= max ? text : `${chars.slice(0, max).join('')}…`;
}

/** The longest problem line printed; messages quote input, which clipInput keeps short, so this only guards. */
const MAX_PROBLEM_LINE = 400;

export function formatProblem(p: InventoryProblem): string {
  const where = `${p.position.file}:${p.position.line}:${p.position.column}`;
  return clipInput(p.hint ? `${where}: ${p.message} (${p.hint})` : `${where}: ${p.message}`, MAX_PROBLEM_LINE);
}

/**
 * At most this many problems are kept and shown: beyond a screenful the reader fixes the first
 * ones and runs again, and a file that is not YAML at all (a binary) would otherwise give one
 * problem per garbled line.
 */
export const MAX_PROBLEMS = 20;

/** Which of the user's files a ConfigError is about; under --json it is the error's kind. */
export type ConfigKind = 'inventory' | 'playbook' | 'ssh-config';

/**
 * An inventory, playbook or ssh config file is invalid; carries the problems found (the first
 * MAX_PROBLEMS), each with its position.
 */
export class ConfigError extends Error {
  readonly kind: ConfigKind;
  readonly problems: readonly InventoryProblem[];
  /** How many problems were found in all; more than `problems.length` when some were left out. */
  readonly total: number;
  constructor(kind: ConfigKind, problems: readonly InventoryProblem[]) {
    const shown = problems.slice(0, MAX_PROBLEMS);
    const left = problems.length - shown.length;
    super(
      [
        ...shown.map(formatProblem),
        ...(left > 0 ? [`… and ${left} more problem${left === 1 ? '' : 's'} not shown (fix these first)`] : []),
      ].join('\n'),
    );
    this.name = 'ConfigError';
    this.kind = kind;
    this.problems = shown;
    this.total = problems.length;
  }
}

/** The user asked for something that cannot be done as asked (bad option, unknown host). */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/** One host failed at one stage; other hosts carry on. */
export class HostError extends Error {
  readonly stage: Stage;
  readonly exitCode: number | undefined;
  readonly stderrTail: string;
  constructor(stage: Stage, message: string, options: { exitCode?: number; stderrTail?: string } = {}) {
    super(message);
    this.name = 'HostError';
    this.stage = stage;
    this.exitCode = options.exitCode;
    this.stderrTail = options.stderrTail ?? '';
  }
}

/**
 * A step of the rehearsal lab's own work on this machine failed (bringing a host up, removing a
 * lab, a tool it ran): it names the step and carries the tool's last words.
 */
export class LabError extends Error {
  readonly step: string;
  readonly exitCode: number | undefined;
  readonly stderrTail: string;
  constructor(step: string, message: string, options: { exitCode?: number; stderrTail?: string } = {}) {
    super(message);
    this.name = 'LabError';
    this.step = step;
    this.exitCode = options.exitCode;
    this.stderrTail = options.stderrTail ?? '';
  }
}

/** The user interrupted the run (Ctrl-C); exit 130. */
export class InterruptedError extends Error {
  constructor() {
    super('interrupted');
    this.name = 'InterruptedError';
  }
}

/** Something that should not happen did: a defect in ibfleet, not in the user's input. */
export class BugError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BugError';
  }
}

/** The last `lines` lines of a command's output, for one-line reasons and error tails. */
export function tail(text: string, lines = 5): string {
  const all = text.trimEnd().split('\n');
  return all.slice(Math.max(0, all.length - lines)).join('\n');
}
