/** One thing the assessment checks (src/plan/assess.ts), and what deploy changes when it fails. */
import type { Change, ChangeAction, ChangeKind } from '../vocabulary.js';

export interface Finding {
  /** Stable identifier, e.g. `rule ib0`, `file /etc/ibfleet/ibfleet-routes`. */
  readonly id: string;
  readonly ok: boolean;
  /** The state found, phrased as drift when not ok ("ib1: main-table route to 172.16.0.0/16 is back"). */
  readonly detail: string;
  /** What deploy changes to fix it; undefined for checks only verification can confirm. */
  readonly fix: Change | undefined;
}

export function change(kind: ChangeKind, action: ChangeAction, subject: string, text: string): Change {
  return { kind, action, subject, text };
}
