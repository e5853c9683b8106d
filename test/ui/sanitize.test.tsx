/**
 * The one rule for text a host sent (src/host-text.ts), class by class, and every display that
 * shows such text through it: plain lines, the TUI's rows, the run log (its host header with the
 * OS name included), stderr's error report — and --json, which carries the text exactly but writes
 * each such character as a `\uXXXX` escape.
 */
import { render } from 'ink-testing-library';
import { describe, expect, it } from 'vitest';
import { OS_NAME_MAX, printable, printableLine } from '../../src/host-text.js';
import { plainHandler } from '../../src/ui/plain.js';
import { runLogHeader, runLogHostBlock } from '../../src/ui/text/run-log.js';
import { jsonText, oneLine, sanitizeLine, sanitizeLines, tailLines } from '../../src/ui/text/sanitize.js';
import { toFinishedHost } from '../../src/ui/tui/finished-host.js';
import { TuiApp } from '../../src/ui/tui/tui-app.js';
import { cpu16, fold, plain, result, runStart, start, T0 } from './fixtures.js';

/** One of each class the rule covers, with the name a failing row prints. */
const CLASSES: readonly (readonly [string, string])[] = [
  ['NUL (C0)', '\u0000'],
  ['BEL (C0)', '\u0007'],
  ['BS (C0)', '\u0008'],
  ['LF (C0): a line never holds two', '\n'],
  ['VT (C0)', '\u000b'],
  ['CR (C0) inside a line', '\r'],
  ['lone ESC (C0)', '\u001b'],
  ['US (C0)', '\u001f'],
  ['DEL', '\u007f'],
  ['PAD (C1, first)', '\u0080'],
  ['NEL (C1): a line break to YAML 1.1', '\u0085'],
  ['CSI (C1): ESC [ to 8-bit terminals', '\u009b'],
  ['APC (C1, last)', '\u009f'],
  ['ALM (bidi mark)', '\u061c'],
  ['LRM (bidi mark)', '\u200e'],
  ['RLM (bidi mark)', '\u200f'],
  ['LINE SEPARATOR', '\u2028'],
  ['PARAGRAPH SEPARATOR', '\u2029'],
  ['LRE (bidi embedding)', '\u202a'],
  ['RLE (bidi embedding)', '\u202b'],
  ['PDF (bidi pop)', '\u202c'],
  ['LRO (bidi override)', '\u202d'],
  ['RLO (bidi override)', '\u202e'],
  ['LRI (bidi isolate)', '\u2066'],
  ['RLI (bidi isolate)', '\u2067'],
  ['FSI (bidi isolate)', '\u2068'],
  ['PDI (bidi isolate)', '\u2069'],
];

/** Printable characters next to those classes that must pass unchanged. */
const KEPT: readonly (readonly [string, string])[] = [
  ['space', ' '],
  ['tilde, the last ASCII', '~'],
  ['NBSP, the first after C1', '\u00a0'],
  ['é', 'é'],
  ['ZWNJ, next to the marks (joins, does not reorder)', '\u200c'],
  ['EN DASH', '–'],
  ['U+2027, before LINE SEPARATOR', '\u2027'],
  ['U+202F, after the overrides', '\u202f'],
  ['U+2065, before the isolates', '\u2065'],
  ['U+206A, after them', '\u206a'],
  ['ellipsis', '…'],
  ['CJK', '漢'],
  ['emoji (a surrogate pair)', '🙂'],
  ['replacement character (bytes that were not UTF-8)', '\ufffd'],
];

describe('printable: each class becomes `?`, printable text is kept', () => {
  it.each(CLASSES)('%s → ?', (_, c) => {
    expect(printable(`a${c}b`)).toBe('a?b');
    expect(sanitizeLine(`a${c}b`)).toBe('a?b');
    expect(sanitizeLine(`a${c}b`, 'keep')).toBe('a?b');
  });
  it.each(KEPT)('%s is kept', (_, c) => expect(printable(`a${c}b`)).toBe(`a${c}b`));
});

describe('sanitizeLine: the dense table', () => {
  it.each([
    ['plain', 'plain', 'plain'],
    ['colour', '\u001b[31mred\u001b[0m', 'red'],
    ['cursor and clear', 'move\u001b[2J\u001b[Hcursor', 'movecursor'],
    ['a title (OSC … BEL)', 'title\u001b]0;pwned\u0007end', 'titleend'],
    ['a title (OSC … ST)', 'title\u001b]0;pwned\u001b\\end', 'titleend'],
    ['a hyperlink (OSC 8) keeps its text', '\u001b]8;;http://x\u001b\\link\u001b]8;;\u001b\\', 'link'],
    ['8-bit CSI is no escape sequence: shown, its parameters as text', '\u009b31mred', '?31mred'],
    ['a CRLF line end', 'crlf\r', 'crlf'],
    ['a CR mid-line (overwrites on a terminal)', 'ok\rFAIL', 'ok?FAIL'],
    ['bell', 'bell\u0007', 'bell?'],
    ['right-to-left override: `exe.png` shown as itself', 'file \u202egnp.exe', 'file ?gnp.exe'],
    ['an isolate pair', '\u2067abc\u2069', '?abc?'],
    ['NEL and a fake inventory line', 'Debian\u0085  41: {name: evil}', 'Debian?  41: {name: evil}'],
    ['LINE SEPARATOR and a fake plain line', 'x\u2028[41 node41] changed', 'x?[41 node41] changed'],
    ['a tab, expanded for the TUI', 'tab\there', 'tab  here'],
  ])('%s', (_, input, output) => expect(sanitizeLine(input)).toBe(output));

  it('plain lines and the run log keep tabs', () => expect(sanitizeLine('a\tb', 'keep')).toBe('a\tb'));
  it('lines of a block, each sanitised', () => expect(sanitizeLines('a\u202eb\nc\u0085d\n\n')).toEqual(['a?b', 'c?d']));
  it('oneLine and tailLines use the same rule', () => {
    expect(oneLine('\n  \u202eabc  \u2066x')).toBe('?abc ?x');
    expect(tailLines('one\n\u009b2J two\n', 1)).toEqual(['?2J two']);
  });
});

describe('printableLine: what a host says about itself, reduced', () => {
  const long = 'A'.repeat(3000);
  it.each([
    ['as it is', 'Ubuntu 18.04.6 LTS', 'Ubuntu 18.04.6 LTS'],
    ['white space squeezed, trimmed', '  Debian \t GNU/Linux   12 ', 'Debian GNU/Linux 12'],
    [
      'NEL and a fake host line stay on the line, visibly',
      'Debian\u0085  41: {name: evil, address: 10.9.9.9, user: root}',
      'Debian? 41: {name: evil, address: 10.9.9.9, user: root}',
    ],
    ['8-bit CSI', 'Evil\u009b2J OS', 'Evil?2J OS'],
    ['a bidi override', 'Ubuntu \u202e', 'Ubuntu ?'],
    ['line separators', 'a\u2028b\u2029c\nd', 'a?b?c?d'],
    ['exactly the cap', 'B'.repeat(OS_NAME_MAX), 'B'.repeat(OS_NAME_MAX)],
    ['one over the cap: cut, with an ellipsis', 'B'.repeat(OS_NAME_MAX + 1), `${'B'.repeat(OS_NAME_MAX - 1)}…`],
    ['3000 characters', long, `${'A'.repeat(OS_NAME_MAX - 1)}…`],
    ['characters, not UTF-16 units, are counted', '🙂'.repeat(OS_NAME_MAX + 5), `${'🙂'.repeat(OS_NAME_MAX - 1)}…`],
    ['nothing left', ' \t ', ''],
  ])('%s', (_, input, output) => {
    const reduced = printableLine(input, OS_NAME_MAX);
    expect(reduced).toBe(output);
    expect([...reduced].length).toBeLessThanOrEqual(OS_NAME_MAX);
  });
});

describe('--json carries what the host said, escaped', () => {
  const value = { os: 'Evil\u009b2J\u202eOS\u2028x\u0085\u007f', error: 'tab\there\u0007\nnext' };

  it('parses back to exactly the same text', () => expect(JSON.parse(jsonText(value))).toEqual(value));

  it('writes no raw control, C1, separator or bidi character (JSON escapes C0 itself; the rest as \\uXXXX)', () => {
    const text = jsonText(value);
    expect(text.replace(/\n/g, '')).not.toMatch(
      /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/,
    );
    expect(text).toContain('"os": "Evil\\u009b2J\\u202eOS\\u2028x\\u0085\\u007f"');
    expect(text).toBe(
      `${JSON.stringify(value, null, 2).replace('Evil\u009b2J\u202eOS\u2028x\u0085\u007f', 'Evil\\u009b2J\\u202eOS\\u2028x\\u0085\\u007f')}`,
    );
  });
});

/** What a hostile host may put into a result: an override in its error, 8-bit CSI in its OS name. */
const hostile = result(cpu16, 'failed', {
  os: 'Evil\u009b2J OS',
  error: {
    stage: 'probe',
    message: 'probe failed (exit 1): \u202egnp.exe',
    stderrTail: 'a\u2066b\u2069\n\u0085c\n',
    exitCode: 1,
  },
});
const UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

describe('every display shows it through the rule', () => {
  it('plain lines', () => {
    let text = '';
    const events = plainHandler(
      { write: (chunk: string) => (text += chunk), isTTY: false },
      { command: 'deploy', stages: true },
    );
    events.onHostDone!(hostile);
    expect(text).not.toMatch(UNSAFE);
    expect(text).toBe(
      '[16 cpuserver16] failed at probe (4.2s): probe failed (exit 1): ?gnp.exe\n    | a?b?\n    | ?c\n',
    );
  });

  it("the TUI's row and its frame", () => {
    const row = toFinishedHost(hostile);
    expect([row.reason, ...row.errorTail]).toEqual(['probe: probe failed (exit 1): ?gnp.exe', 'a?b?', '?c']);
    const state = fold([start('deploy', [cpu16]), { type: 'hostDone', result: hostile }]);
    const frame = plain(
      render(<TuiApp state={state} now={T0 + 3400} frame={0} rows={24} columns={100} color={false} />).lastFrame(),
    );
    expect(frame).toContain('probe failed (exit 1): ?gnp.exe');
    expect(frame).not.toMatch(UNSAFE);
  });

  it("the run log: the host's header line (its OS name), its error and output", () => {
    const lines = runLogHostBlock(hostile, undefined, T0);
    expect(lines[0]).toBe('== host 16 cpuserver16 (10.208.130.16) · failed · Evil?2J OS');
    expect(lines.join('\n')).not.toMatch(UNSAFE);
    expect(runLogHeader(runStart([cpu16], { inventory: 'inv\u202e.yaml' }), new Date(T0))).toContain(
      '# inventory inv?.yaml',
    );
  });

  it("the run log: a transcript's lines, sanitised only where they hold a control character", () => {
    const clean = 'ip rule add from 172.16.16.1 lookup 941\n\tkept tab\n';
    const hostileOutput = 'plain\nred \u001b[31mX\u001b[0m\r\nbidi \u202egnp.exe\nnel\u0085end\n';
    const entries = [
      { label: 'apply script', text: clean },
      { label: 'apply output', text: hostileOutput },
    ];
    // The log's lines as written: a quoted entry is one element of the block holding many (74e689b).
    const lines = runLogHostBlock(hostile, { stages: [], entries }, T0).join('\n').split('\n');
    const at = lines.indexOf('apply script:');
    expect(lines.slice(at, at + 8)).toEqual([
      'apply script:',
      '  | ip rule add from 172.16.16.1 lookup 941',
      '  | \tkept tab',
      'apply output:',
      '  | plain',
      '  | red X',
      '  | bidi ?gnp.exe',
      '  | nel?end',
    ]);
    expect(lines.join('\n')).not.toMatch(UNSAFE);
  });
});
