/** Running the machine's tools for the lab: argv in, exit code and output back. The lab's only child_process use. */
import { spawn } from 'node:child_process';
import { LabError, tail } from '../errors.js';
import { HOOK_PATH_ENV } from './scripts.js';

export interface RunResult {
  /** Exit code; 128 + n when killed by signal n (as a shell reports it). */
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

export interface RunOptions {
  readonly input?: string;
  /** The whole environment of the command (not merged with ibfleet's). */
  readonly env?: Readonly<Record<string, string>>;
  readonly timeoutMs?: number;
}

/** A predictable environment: root's PATH and the C locale, so tool output parses the same everywhere. */
export const BASE_ENV: Readonly<Record<string, string>> = { PATH: HOOK_PATH_ENV, LC_ALL: 'C' };

const SIGNALS: Readonly<Record<string, number>> = { SIGHUP: 1, SIGINT: 2, SIGKILL: 9, SIGTERM: 15 };

export function run(argv: readonly string[], options: RunOptions = {}): Promise<RunResult> {
  const [command, ...args] = argv;
  return new Promise((resolve) => {
    const child = spawn(command!, args, { env: { ...(options.env ?? BASE_ENV) }, stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let timedOut = false;
    const timer =
      options.timeoutMs === undefined
        ? undefined
        : setTimeout(() => ((timedOut = true), child.kill('SIGKILL')), options.timeoutMs);
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    child.stdin.on('error', () => undefined);
    child.on('error', (error) => {
      clearTimeout(timer);
      resolve({ code: 127, stdout: '', stderr: `${command}: ${error.message}\n` });
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const stderr =
        Buffer.concat(err).toString('utf8') + (timedOut ? `${command}: killed after ${options.timeoutMs} ms\n` : '');
      resolve({
        code: code ?? 128 + (SIGNALS[signal ?? ''] ?? 0),
        stdout: Buffer.concat(out).toString('utf8'),
        stderr,
      });
    });
    child.stdin.end(options.input ?? '');
  });
}

/** Runs and insists on exit 0; the error names the step and carries the tool's last words. */
export async function runOk(step: string, argv: readonly string[], options: RunOptions = {}): Promise<RunResult> {
  const result = await run(argv, options);
  if (result.code !== 0) {
    throw new LabError(step, `${step} failed: ${argv[0]} exited with ${result.code}`, {
      exitCode: result.code,
      stderrTail: tail(result.stderr || result.stdout, 8),
    });
  }
  return result;
}
