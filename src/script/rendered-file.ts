/** A file ibfleet installs on a host, as data: path, mode and exact content, and how the engine treats it. Pure. */
import type { Manager } from '../inventory/model.js';

export interface RenderedFile {
  /** Absolute path on the host. */
  readonly path: string;
  /** Octal permission bits, e.g. 0o755; owner is always root:root. */
  readonly mode: number;
  readonly content: string;
  /** What the file is for, as `ibfleet render` names it (`routing-script`, `hook`, `repair`, `sysctl`, `netplan`). */
  readonly role: string;
  /** For hooks: which manager runs it. */
  readonly manager?: Manager;
  /** The kind of change installing or replacing it is, for summaries (`hook installed`). */
  readonly kind: string;
  /** How findings name it (`hook /etc/…`); the bare path when absent. */
  readonly label?: string;
  /**
   * Staged one directory up, outside the directory it is installed in: a runner scans that
   * directory and must never see a half-written file (the managers' hook directories).
   */
  readonly stageOutside?: boolean;
  /**
   * Its content carries the fabric's tables and addresses (the routing script, the netplan file, the
   * ownership record): another tableBase or subnet changes it, which is no hand edit.
   */
  readonly routing?: boolean;
  /**
   * Where the file belongs, when not on every host: the routing program's --check looks for it only
   * there. `systemd`: only where systemd runs (the program's systemd_runs) — the repair units. It is
   * the WHERE word of routes.conf's `file` line; the program is the same on every host.
   */
  readonly checkWhere?: CheckWhere;
  /**
   * The routing script's check groups the files only some managers get by this (default: the
   * role), one manager's set installed whole: netplan's networkd setting goes with its hooks.
   */
  readonly checkGroup?: string;
}

/** Where routes.conf's `file WHERE …` line has a file checked besides everywhere (`always`). */
export type CheckWhere = 'systemd';

export function formatMode(mode: number): string {
  return mode.toString(8).padStart(4, '0');
}
