/** Running the built CLI as a user would: a child process, real exit codes, stdout and stderr. */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));

export interface CliResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
  readonly ms: number;
}

export function ibfleet(
  args: readonly string[],
  options: { input?: string; env?: Record<string, string>; cwd?: string } = {},
): Promise<CliResult> {
  const started = Date.now();
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [CLI, ...args],
      {
        env: { ...process.env, NO_COLOR: '1', ...options.env },
        cwd: options.cwd,
        maxBuffer: 64 * 1024 * 1024,
        timeout: 180_000,
      },
      (error, stdout, stderr) => {
        const code =
          error && typeof (error as { code?: unknown }).code === 'number'
            ? (error as { code: number }).code
            : error
              ? 1
              : 0;
        resolve({ code, stdout, stderr, ms: Date.now() - started });
      },
    );
    child.stdin?.end(options.input ?? '');
  });
}

/** The --json document of a run; fails loudly with stderr when the output is not JSON. */
export function json<T = JsonRun>(result: CliResult): T {
  try {
    return JSON.parse(result.stdout) as T;
  } catch {
    throw new Error(`not JSON (exit ${result.code}):\n${result.stdout}\n${result.stderr}`);
  }
}

export interface JsonHost {
  readonly id: number;
  readonly name: string;
  readonly status: string;
  readonly error: string | null;
  readonly manager: string | null;
  readonly os: string | null;
  readonly reasons: string[];
  readonly ssh?: { connections: number; channels: number };
  /** What a change did (deploy, rollback), kind by kind. */
  readonly changes?: { kind: string; action: string; subject: string; text: string }[];
}

export interface JsonRun {
  readonly command: string;
  readonly ok: boolean;
  readonly hosts: JsonHost[];
  readonly summary: Record<string, number>;
  readonly matrix?: {
    from: { host: number; nic: number; iface: string; ip: string };
    to: { host: number; nic: number; iface: string; ip: string };
    ok: boolean | null;
    method: string;
    detail: string;
    reproduce: string;
    /** A failed or not-run cell's likely causes (docs/commands.md). */
    causes?: { kind: string; host: number; iface?: string; text: string }[];
  }[];
}

export function statuses(run: JsonRun): Record<number, string> {
  return Object.fromEntries(run.hosts.map((h) => [h.id, h.status]));
}
