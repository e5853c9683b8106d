/** Running a command inside a lab host: its /etc, /root and /run, its hostname and its network. */
import { existsSync } from 'node:fs';
import { UsageError } from '../errors.js';
import { checkLabName, hostPaths } from './names.js';
import { enterArgs } from './scripts.js';
import { BASE_ENV, run, type RunResult } from './system.js';

export interface LabExecOptions {
  readonly input?: string;
  /** Added to a clean environment (PATH, LC_ALL=C, HOME=/root): nothing of the caller's leaks in. */
  readonly env?: Readonly<Record<string, string>>;
  readonly timeoutMs?: number;
}

export type LabRef = string | { readonly name: string };

/** `argv` runs directly (no shell) in the host's namespaces, from its `/`. */
export async function labExec(
  lab: LabRef,
  hostId: number,
  argv: readonly string[],
  options: LabExecOptions = {},
): Promise<RunResult> {
  const name = checkLabName(typeof lab === 'string' ? lab : lab.name);
  const paths = hostPaths(name, hostId);
  if (!existsSync(paths.netNs) || !existsSync(paths.mountNs))
    throw new UsageError(`host ${hostId} is not in lab ${name} (is the lab up? see ibfleet lab up)`);
  return run([...enterArgs(name, hostId), ...argv], {
    env: { ...BASE_ENV, HOME: '/root', ...options.env },
    ...(options.input !== undefined ? { input: options.input } : {}),
    ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
  });
}
