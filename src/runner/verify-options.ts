/**
 * What a verify run is given: the hosts, the matrix mode, the transport, the limits and where its
 * events go. Its own module so that verify.ts (connecting, choosing, judging) and verify-cells.ts
 * (running the cells on the hosts) both read it without importing each other.
 */
import type { Fleet, Host } from '../inventory/model.js';
import type { MatrixMode, RpingMode } from '../plan/matrix.js';
import type { RunEvents } from '../vocabulary.js';
import type { Transport } from './transport.js';

export interface VerifyOptions {
  /** The inventory the hosts come from: a failed cell is explained from its NICs' derived state. */
  readonly fleet: Fleet;
  readonly hosts: readonly Host[];
  readonly mode: MatrixMode;
  /** Why verify chose `mode` when none was asked for (chooseMatrixMode); shown with the matrix. */
  readonly modeReason?: string;
  readonly rping: RpingMode;
  readonly transport: Transport;
  readonly concurrency: number;
  readonly timeoutMs: number;
  readonly interrupt: AbortSignal;
  readonly events: RunEvents;
  readonly basePort?: number;
  readonly now?: () => number;
}
