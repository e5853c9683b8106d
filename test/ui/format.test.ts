/** Pure helpers as input → output tables. */
import { describe, expect, it } from 'vitest';
import { colorEnabled } from '../../src/ui/tui/color.js';
import { foldHosts } from '../../src/inventory/select.js';
import { foldResults } from '../../src/ui/text/fold.js';
import { formatDuration } from '../../src/ui/text/format.js';
import { oneLine, sanitizeLine, tailLines } from '../../src/ui/text/sanitize.js';
import { formatStageCounts } from '../../src/ui/tui/lines.js';
import { SPINNER_FRAMES, spinnerGlyph } from '../../src/ui/tui/spinner.js';
import { host } from './fixtures.js';

describe('formatDuration', () => {
  it.each([
    [0, '0.0s'],
    [-5, '0.0s'],
    [Number.NaN, '0.0s'],
    [49, '0.0s'],
    [1234, '1.2s'],
    [1299, '1.2s'],
    [12_345, '12.3s'],
    [59_999, '59.9s'],
    [60_000, '1m00s'],
    [65_400, '1m05s'],
    [3_599_999, '59m59s'],
    [3_600_000, '1h00m'],
    [3_725_000, '1h02m'],
  ])('%d ms → %s', (ms, text) => expect(formatDuration(ms)).toBe(text));
});

describe('sanitising remote output', () => {
  it.each([
    ['plain', 'plain'],
    ['\u001b[31mred\u001b[0m', 'red'],
    ['move\u001b[2J\u001b[Hcursor', 'movecursor'],
    ['title\u001b]0;pwned\u0007end', 'titleend'],
    ['tab\there', 'tab  here'],
    ['bell\u0007', 'bell?'],
    ['crlf\r', 'crlf'],
  ])('%j → %j', (input, output) => expect(sanitizeLine(input)).toBe(output));

  it('oneLine keeps the first non-blank line, squeezed', () => expect(oneLine('\n  a   b \n c')).toBe('a b'));
  it('tailLines drops blank lines and keeps the last n', () =>
    expect(tailLines('a\n\nb\n  \nc\nd\n', 3)).toEqual(['b', 'c', 'd']));
});

describe('folding', () => {
  it.each([
    [[16, 17, 18, 19, 20, 34], '16-20,34'],
    [[34, 16, 17, 16], '16-17,34'],
    [[1], '1'],
    [[], ''],
  ])('foldHosts(%j) → %s', (ids, text) => expect(foldHosts(ids)).toBe(text));

  it('groups by status and identical reasons, attention first, then by lowest host', () => {
    const groups = foldResults([
      { id: 34, status: 'ok', reasons: [] },
      { id: 16, status: 'ok', reasons: [] },
      { id: 42, status: 'drift', reasons: ['a', 'b'] },
      { id: 40, status: 'drift', reasons: ['a', 'b'] },
      { id: 44, status: 'drift', reasons: ['a'] },
      { id: 77, status: 'unreachable', reasons: ['refused'] },
      { id: 17, status: 'ok', reasons: [] },
    ]);
    expect(groups.map((g) => [g.status, g.hostSet, g.reasons.join('|')])).toEqual([
      ['unreachable', '77', 'refused'],
      ['drift', '40,42', 'a|b'],
      ['drift', '44', 'a'],
      ['ok', '16-17,34', ''],
    ]);
  });

  it('ignoreReasons folds by status only', () => {
    const groups = foldResults(
      [
        { id: 1, status: 'changed', reasons: ['x'] },
        { id: 2, status: 'changed', reasons: ['y'] },
      ],
      { ignoreReasons: true },
    );
    expect(groups).toEqual([{ status: 'changed', ids: [1, 2], hostSet: '1-2', reasons: [] }]);
  });
});

describe('colour', () => {
  const tty = { isTTY: true };
  it.each([
    [{}, tty, true],
    [{}, { isTTY: false }, false],
    [{ NO_COLOR: '1' }, tty, false],
    [{ NO_COLOR: '' }, tty, true],
    [{ NO_COLOR: '1', FORCE_COLOR: '1' }, tty, false],
    [{ FORCE_COLOR: '1' }, { isTTY: false }, true],
    [{ FORCE_COLOR: '0' }, tty, false],
    [{ FORCE_COLOR: 'false' }, tty, false],
    [{ TERM: 'dumb' }, tty, false],
  ])('env %j, stream %j → %s', (env, stream, enabled) => expect(colorEnabled(env, stream)).toBe(enabled));
});

describe('spinner', () => {
  it('cycles through its frames from one counter', () => {
    expect(spinnerGlyph(0)).toBe('⠋');
    expect(spinnerGlyph(SPINNER_FRAMES.length)).toBe('⠋');
    expect(spinnerGlyph(3)).toBe('⠸');
    expect(spinnerGlyph(-1)).toBe('⠏');
  });
});

describe('stage counts', () => {
  it('lists stages in pipeline order', () => {
    const at = (id: number, stage?: 'connect' | 'push' | 'apply') => ({ host: host(id), stage, startedAt: 0 });
    expect(formatStageCounts([at(1, 'apply'), at(2, 'connect'), at(3), at(4, 'apply'), at(5, 'push')])).toBe(
      'starting 1, connect 1, push 1, apply 2',
    );
  });
});
