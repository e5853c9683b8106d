/**
 * `ibfleet exec`: one admin's command on one host, over the host's one SSH connection and in the
 * same root shell every ibfleet script gets (`sh -s`, through sudo where the inventory says so,
 * the -K password as other commands send it). The command line is the admin's own argv, each word
 * single-quoted for the remote shell, its stdin /dev/null (the shell reads the script from stdin:
 * a command reading it would swallow the rest). Output is kept bounded: each stream's last
 * EXEC_OUTPUT_MAX characters, and how much was cut.
 */
import { shellCommand } from '../script/shell.js';
import type { ExecOutput } from '../vocabulary.js';
import type { HostOutcome, HostTask } from './fanout.js';
import type { ExecResult, Transport } from './transport.js';

/** The most of each stream kept of one host's output (the run log has up to what the transport kept). */
export const EXEC_OUTPUT_MAX = 64 * 1024;

/** The script sent for `argv`: the words quoted, stdin closed. Pure. */
export function execScript(argv: readonly string[]): string {
  return `${shellCommand(argv)} </dev/null\n`;
}

/** `text`'s last `max` characters and how many went before them (never half a surrogate pair). */
export function keepTail(text: string, max = EXEC_OUTPUT_MAX): { text: string; cut: number } {
  if (text.length <= max) return { text, cut: 0 };
  let start = text.length - max;
  if (/[\uDC00-\uDFFF]/.test(text[start]!)) start++;
  return { text: text.slice(start), cut: start };
}

/** A host's result as exec keeps it. Pure. */
export function execOutput(result: ExecResult, max = EXEC_OUTPUT_MAX): ExecOutput {
  const stdout = keepTail(result.stdout, max);
  const stderr = keepTail(result.stderr, max);
  const cut = {
    ...(stdout.cut ? { stdout: stdout.cut } : {}),
    ...(stderr.cut ? { stderr: stderr.cut } : {}),
    ...(result.cut ? { more: true } : {}),
  };
  return {
    exitCode: result.code,
    ...(result.signal && result.code === null ? { signal: result.signal } : {}),
    stdout: stdout.text,
    stderr: stderr.text,
    ...(Object.keys(cut).length ? { cut } : {}),
  };
}

/** The fan-out's work for exec: connect, run, keep the output; a non-zero exit fails the host. */
export function execHost(transport: Transport, argv: readonly string[]) {
  const script = execScript(argv);
  return async (task: HostTask): Promise<HostOutcome> => {
    task.stage('connect');
    const session = await transport.connect(task.host, task.signal);
    try {
      task.stage('run');
      task.record('command (sent on stdin to sh -s as root)', script);
      const result = await session.run(script, { signal: task.signal });
      task.record(`output (exit ${result.code ?? `signal ${result.signal ?? '?'}`})`, result.stdout);
      if (result.stderr !== '') task.record('stderr', result.stderr);
      const exec = execOutput(result);
      const ssh = { connections: 1, channels: session.channels };
      if (result.code === 0) return { status: 'ok', reasons: [...session.notes], exec, ...ssh };
      const message = result.code === null ? `killed by ${result.signal ?? 'a signal'}` : `exit ${result.code}`;
      return {
        status: 'failed',
        reasons: [...session.notes, message],
        exec,
        error: { stage: 'run', message, stderrTail: '', ...(result.code === null ? {} : { exitCode: result.code }) },
        ...ssh,
      };
    } finally {
      session.close();
    }
  };
}
