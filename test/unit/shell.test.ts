import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { shellCommand, shellQuote } from '../../src/script/shell.js';

describe('shellQuote: every inventory value reaches a shell as exactly one literal word', () => {
  it.each([
    ['ib0', 'ib0'],
    ['ib0.8001', 'ib0.8001'],
    ['ib_fab-2', 'ib_fab-2'],
    ['172.16.0.0/16', '172.16.0.0/16'],
    [941, '941'],
    ['', "''"],
    ['a b', "'a b'"],
    ['ib0;reboot', "'ib0;reboot'"],
    ['$(x)', "'$(x)'"],
    ['`id`', "'`id`'"],
    ["it's", "'it'\\''s'"],
    ['*', "'*'"],
    ['~root', "'~root'"],
    ['line\nbreak', "'line\nbreak'"],
  ] as const)('%j → %s', (value, quoted) => {
    expect(shellQuote(value)).toBe(quoted);
  });

  it.each(['ib0', "it's", '$(touch /tmp/ibfleet-pwned)', 'a  b', '"q"', '\\', 'line\nbreak', '-n', '*'])(
    'sh reads %j back unchanged',
    (value) => {
      const echoed = execFileSync('sh', ['-c', `printf '%s' ${shellQuote(value)}`], { encoding: 'utf8' });
      expect(echoed).toBe(value);
    },
  );

  it('shellCommand quotes each argument on its own', () => {
    expect(shellCommand(['ip', 'rule', 'add', 'from', '172.16.34.1', 'lookup', 941, 'x y'])).toBe(
      "ip rule add from 172.16.34.1 lookup 941 'x y'",
    );
  });
});
