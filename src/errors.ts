/**
 * The small, closed set of errors ibfleet raises. Only src/cli.ts turns them into exit codes:
 * UsageError and InventoryError → 2 (nothing was contacted), HostError is reported per host and
 * folded into exit 1, anything else is a BugError / unexpected and also ends with 1 after a
 * message that asks for a bug report.
 */

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

export function formatProblem(p: InventoryProblem): string {
  const where = `${p.position.file}:${p.position.line}:${p.position.column}`;
  return p.hint ? `${where}: ${p.message} (${p.hint})` : `${where}: ${p.message}`;
}

/** The inventory or playbook file is invalid; carries every problem found, each with its position. */
export class InventoryError extends Error {
  readonly problems: readonly InventoryProblem[];
  constructor(problems: readonly InventoryProblem[]) {
    super(problems.map(formatProblem).join('\n'));
    this.name = 'InventoryError';
    this.problems = problems;
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
  readonly stage: string;
  readonly exitCode: number | undefined;
  readonly stderrTail: string;
  constructor(stage: string, message: string, options: { exitCode?: number; stderrTail?: string } = {}) {
    super(message);
    this.name = 'HostError';
    this.stage = stage;
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
