/** `ibfleet exec`'s folding (clush -b), the quoting of the admin's words, and the output bound. */
import { describe, expect, it } from 'vitest';
import { execOutput, execScript, keepTail } from '../../src/runner/exec.js';
import { execLines } from '../../src/ui/text/exec-fold.js';
import type { ExecOutput, HostResult } from '../../src/vocabulary.js';

function host(id: number, exec?: Partial<ExecOutput>, status: HostResult['status'] = 'ok'): HostResult {
  const ref = { id, name: `h${id}`, target: `10.0.0.${id}` };
  if (!exec)
    return {
      host: ref,
      status,
      durationMs: 1,
      reasons: [],
      error: { stage: 'connect', message: `connect to 10.0.0.${id}:22: timed out`, stderrTail: '' },
    };
  return { host: ref, status, durationMs: 1, reasons: [], exec: { exitCode: 0, stdout: '', stderr: '', ...exec } };
}

describe('exec folding', () => {
  it.each([
    [
      'identical output and exit fold under one header, ids as ranges',
      [
        host(16, { stdout: 'Linux\n' }),
        host(17, { stdout: 'Linux\n' }),
        host(18, { stdout: 'Linux\n' }),
        host(34, { stdout: 'Linux\n' }),
      ],
      ['---------------- 16-18,34 (exit 0)', 'Linux', 'exec: 4 hosts — exit 0: 16-18,34'],
    ],
    [
      'same output, other exit: two headers',
      [host(16, { stdout: 'x\n' }), host(34, { stdout: 'x\n', exitCode: 3 }, 'failed')],
      [
        '---------------- 16 (exit 0)',
        'x',
        '---------------- 34 (exit 3)',
        'x',
        'exec: 2 hosts — exit 0: 16; exit 3: 34',
      ],
    ],
    [
      'stderr counts: same stdout, other stderr do not fold',
      [host(16, { stdout: 'x\n' }), host(34, { stdout: 'x\n', stderr: 'warn\n' })],
      [
        '---------------- 16 (exit 0)',
        'x',
        '---------------- 34 (exit 0)',
        'x',
        'warn',
        'exec: 2 hosts — exit 0: 16,34',
      ],
    ],
    [
      'an unreachable host: a header saying why, no body; sorted by id',
      [host(60, undefined, 'unreachable'), host(16, { stdout: 'a\n' })],
      [
        '---------------- 16 (exit 0)',
        'a',
        '---------------- 60 (unreachable: connect to 10.0.0.60:22: timed out)',
        'exec: 2 hosts — exit 0: 16; unreachable: 60',
      ],
    ],
    [
      'a killed command',
      [host(16, { exitCode: null, signal: 'KILL' }, 'failed')],
      ['---------------- 16 (killed by KILL)', 'exec: 1 host — killed: 16'],
    ],
    [
      'hostile text: escapes dropped, controls shown as ?',
      [host(16, { stdout: 'a\u001b[31mred\u001b[0m\rb\u202e\n' })],
      ['---------------- 16 (exit 0)', 'ared?b?', 'exec: 1 host — exit 0: 16'],
    ],
    [
      'a cut stream says how much went before',
      [host(16, { stdout: 'tail\n', cut: { stdout: 1000 } })],
      [
        '---------------- 16 (exit 0)',
        '[stdout: 1000 characters cut before what follows; the run log has more]',
        'tail',
        'exec: 1 host — exit 0: 16',
      ],
    ],
  ] as const)('%s', (_what, results, lines) => {
    expect(execLines(results as readonly HostResult[])).toEqual(lines);
  });
});

describe('exec quoting: each word reaches the remote shell as itself, stdin closed', () => {
  it.each([
    [['uname', '-r'], 'uname -r </dev/null\n'],
    [['sh', '-c', 'ip -br a | grep ib'], "sh -c 'ip -br a | grep ib' </dev/null\n"],
    [['echo', "it's; rm -rf /"], "echo 'it'\\''s; rm -rf /' </dev/null\n"],
    [['echo', '$(id)', '`id`', ''], "echo '$(id)' '`id`' '' </dev/null\n"],
    [['printf', '%s\n', 'a b'], "printf '%s\n' 'a b' </dev/null\n"],
  ])('%j', (argv, script) => {
    expect(execScript(argv)).toBe(script);
  });
});

describe('exec output bound', () => {
  it('keeps the last characters of each stream and says how many went before', () => {
    expect(keepTail('abcdef', 4)).toEqual({ text: 'cdef', cut: 2 });
    expect(keepTail('abc', 4)).toEqual({ text: 'abc', cut: 0 });
    // Never half a surrogate pair.
    expect(keepTail('a😀b', 2)).toEqual({ text: 'b', cut: 3 });
    expect(
      execOutput(
        {
          code: 0,
          signal: undefined,
          stdout: 'x'.repeat(10),
          stderr: 'e',
          cut: { stream: 'stdout', afterTurn: false },
        },
        4,
      ),
    ).toEqual({ exitCode: 0, stdout: 'xxxx', stderr: 'e', cut: { stdout: 6, more: true } });
  });
});
