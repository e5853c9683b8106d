/**
 * A failing host's text is cut on the way to the terminal (issue 22, item 7c): a host may print up
 * to 1 MiB on one line before it fails, and plain lines, the TUI and --json each show a few KiB of
 * it with where it was cut, while the run log keeps the whole text.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { clipHostLines, clipHostText } from '../../src/host-text.js';
import { runDocument } from '../../src/ui/json.js';
import { plainHandler } from '../../src/ui/plain.js';
import { toFinishedHost } from '../../src/ui/tui/finished-host.js';
import { openRunLog } from '../../src/ui/run-log-file.js';
import type { CommandName, HostResult } from '../../src/vocabulary.js';
import { host, mem34, result, runStart, T0 } from './fixtures.js';

const scratch = mkdtempSync(join(tmpdir(), 'ibfleet-caps-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** What `sh` prints when a ~/.bashrc writes 1 000 000 x's to stderr and exits 1: one line. */
const FLOOD = 'x'.repeat(1_000_000);
const failing = (id: number): HostResult =>
  result(host(id, `node${id}`), 'failed', {
    reasons: [`probe failed (exit 1): ${FLOOD}`],
    error: {
      stage: 'probe',
      message: `probe failed (exit 1): ${FLOOD}`,
      stderrTail: `${FLOOD}\nbash: line 2: the end\n`,
      exitCode: 1,
    },
  });

describe('clipHostText / clipHostLines', () => {
  it.each([
    { text: 'short', max: 10, shown: 'short' },
    { text: 'x'.repeat(10), max: 10, shown: 'x'.repeat(10) },
    {
      text: 'x'.repeat(11),
      max: 10,
      shown: `${'x'.repeat(10)} … [cut after 10 of 11 characters: the run log has all of it]`,
    },
    // A surrogate pair is never split: the cut lands before it.
    {
      text: `${'x'.repeat(9)}😀tail`,
      max: 10,
      shown: `${'x'.repeat(9)} … [cut after 9 of 15 characters: the run log has all of it]`,
    },
  ])('$max of $text.length characters', ({ text, max, shown }) => {
    expect(clipHostText(text, max)).toBe(shown);
  });

  it('cuts each line of a tail on its own, keeping every line', () => {
    expect(clipHostLines(`${'a'.repeat(20)}\nshort\n${'b'.repeat(20)}`, 10).split('\n')).toEqual([
      `${'a'.repeat(10)} … [cut after 10 of 20 characters: the run log has all of it]`,
      'short',
      `${'b'.repeat(10)} … [cut after 10 of 20 characters: the run log has all of it]`,
    ]);
  });
});

describe('a host that printed 1 MB on one line before failing', () => {
  it('plain lines: a few KiB for the host (its line, its tail, the recap), each cut saying where', () => {
    let text = '';
    const events = plainHandler(
      { write: (chunk: string) => (text += chunk), isTTY: false },
      { command: 'deploy' as CommandName, stages: false },
    );
    const hosts = [failing(41), failing(42)];
    events.onRunStart!(runStart(hosts.map((h) => h.host)));
    for (const h of hosts) events.onHostDone!(h);
    events.onRunEnd!({ results: hosts, cells: [], durationMs: 5000, interrupted: false });
    expect(text.length).toBeLessThan(2 * 8 * 1024);
    const row = text.split('\n').find((l) => l.startsWith('[41 node41] failed at probe'))!;
    expect(row).toMatch(
      /^\[41 node41\] failed at probe \(4\.2s\): probe failed \(exit 1\): x+ … \[cut after 2048 of 1000023 characters: the run log has all of it\]$/,
    );
    expect(text).toContain('    | bash: line 2: the end');
    expect(text).toContain('    | xxxxx');
    expect(text).toMatch(
      /^41-42: failed: probe: probe failed \(exit 1\): x+ … \[cut after 2048 of 1000030 characters/m,
    );
  });

  it('status folds the cut messages like any other', () => {
    let text = '';
    const events = plainHandler(
      { write: (chunk: string) => (text += chunk), isTTY: false },
      { command: 'status' as CommandName, stages: false },
    );
    const hosts = [failing(41), failing(42)];
    events.onRunStart!(
      runStart(
        hosts.map((h) => h.host),
        { command: 'status' },
      ),
    );
    events.onRunEnd!({ results: hosts, cells: [], durationMs: 5000, interrupted: false });
    expect(text.length).toBeLessThan(4 * 1024);
    expect(text).toContain('41-42: failed: probe failed (exit 1): xxx');
  });

  it("the TUI: the row's reason and each line of the tail under it are cut", () => {
    const row = toFinishedHost(failing(41));
    expect(row.reason.length).toBeLessThan(2048 + 200);
    expect(row.reason).toMatch(/… \[cut after 2048 of 1000023 characters: the run log has all of it\]$/);
    expect(row.errorTail.join('\n').length).toBeLessThan(2 * 1024);
    expect(row.errorTail.at(-1)).toBe('bash: line 2: the end');
  });

  it('--json: error and errorDetail cut at 16 KiB, with errorDetail.cut giving the lengths before the cut', () => {
    const doc = runDocument(
      { command: 'deploy', inventory: 'i.yaml' },
      { results: [failing(41)], durationMs: 5000, interrupted: false },
    );
    const text = JSON.stringify(doc);
    expect(text.length).toBeLessThan(64 * 1024);
    const h = doc.hosts[0]!;
    expect(h.error).toMatch(
      /^probe: probe failed \(exit 1\): x+ … \[cut after 16384 of 1000023 characters: the run log has all of it\]$/,
    );
    expect(h.errorDetail).toMatchObject({
      stage: 'probe',
      exitCode: 1,
      cut: { message: 1_000_023, stderrTail: 1_000_023 },
    });
    expect(h.errorDetail!.stderrTail.split('\n')[1]).toBe('bash: line 2: the end');
    // A failure's reasons repeat its message: cut alike.
    expect(h.reasons).toEqual([expect.stringMatching(/… \[cut after 16384 of 1000023 characters/)]);
  });

  it('--json: an error that fits is whole, with no cut field', () => {
    const doc = runDocument(
      { command: 'deploy', inventory: 'i.yaml' },
      {
        results: [result(mem34, 'failed', { error: { stage: 'apply', message: 'exit 1', stderrTail: 'boom' } })],
        durationMs: 1,
        interrupted: false,
      },
    );
    expect(doc.hosts[0]!.errorDetail).toEqual({ stage: 'apply', message: 'exit 1', stderrTail: 'boom' });
  });

  it('the run log has the whole text', () => {
    const file = join(scratch, 'whole.log');
    const log = openRunLog({ env: {}, cwd: scratch, file, command: 'deploy', secrets: () => [] })!;
    log.events.onRunStart!(runStart([host(41, 'node41')]));
    log.events.onHostStart!(host(41, 'node41'), T0);
    log.events.onHostDone!(failing(41));
    log.close();
    const text = readFileSync(file, 'utf8');
    expect(text).toContain(`error at probe (exit 1): probe failed (exit 1): ${FLOOD}\n`);
    expect(text).toContain(`  | ${FLOOD}\n  | bash: line 2: the end\n`);
  });
});
