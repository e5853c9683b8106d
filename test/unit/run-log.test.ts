/**
 * The run log on disk: where it goes, what a host's block holds, that it is bounded, that old logs
 * are removed beyond the newest KEEP_LOGS, and that a secret never reaches it whatever printed it.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { defaultLogDir, KEEP_LOGS, MAX_LOG_BYTES, openRunLog, SHARED_ENTRY_CHARS } from '../../src/ui/run-log-file.js';
import type { RunEvents } from '../../src/vocabulary.js';
import { cell, cpu16, mem34, NICS, result, runStart, T0 } from '../ui/fixtures.js';

const scratch = mkdtempSync(join(tmpdir(), 'ibfleet-runlog-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function drive(events: RunEvents, hosts = [cpu16, mem34], output: string | ((id: number) => string) = 'ok\n') {
  events.onRunStart!(runStart(hosts));
  for (const h of hosts) {
    events.onHostStart!(h, T0);
    events.onStage!(h, 'probe', T0 + 120);
    events.onStage!(h, 'apply', T0 + 900);
    events.onOutput!(h, 'apply script (sent on stdin to sh -s as root)', 'ip rule add from 172.16.34.2 lookup 942\n');
    events.onOutput!(h, 'apply output (exit 0)', typeof output === 'string' ? output : output(h.id));
    events.onHostDone!(
      result(h, 'changed', {
        manager: 'netplan',
        changes: [{ kind: 'rule', action: 'add', subject: 'ib1', text: 'ib1: rule 942: from 172.16.34.2 lookup 942' }],
        reasons: ['ib1: rule 942: from 172.16.34.2 lookup 942'],
        checks: [{ name: 'rule ib1', ok: true, detail: 'ib1: rule 942: from 172.16.34.2 lookup 942' }],
      }),
    );
  }
  events.onCell!(cell(NICS[0]!, NICS[2]!, false));
  events.onRunEnd!({ results: [], cells: [], durationMs: 2500, interrupted: false });
}

describe('the run log', () => {
  it('lives under $XDG_STATE_HOME/ibfleet/runs, else ~/.local/state/ibfleet/runs (a relative XDG path is ignored)', () => {
    expect(defaultLogDir({ XDG_STATE_HOME: '/var/x', HOME: '/home/a' })).toBe('/var/x/ibfleet/runs');
    expect(defaultLogDir({ HOME: '/home/a' })).toBe('/home/a/.local/state/ibfleet/runs');
    expect(defaultLogDir({ XDG_STATE_HOME: 'rel', HOME: '/home/a' })).toBe('/home/a/.local/state/ibfleet/runs');
  });

  it('per host: its timings, changes by kind, checks, the script sent and what it printed; then the matrix and the outcome', () => {
    const log = openRunLog({
      env: { XDG_STATE_HOME: join(scratch, 'state') },
      cwd: scratch,
      file: undefined,
      command: 'deploy',
      secrets: () => [],
    })!;
    expect(log.path).toMatch(/\/state\/ibfleet\/runs\/\d{8}T\d{6}Z-deploy-\d+\.log$/);
    drive(log.events);
    log.close();
    const text = readFileSync(log.path, 'utf8');
    expect(statSync(log.path).mode & 0o777).toBe(0o600);
    expect(text).toContain('# ibfleet deploy\n');
    expect(text).toContain(
      '== host 34 memserver34 (10.208.130.34) · changed · netplan\ntimings: connect +0.00s, probe +0.12s, apply +0.90s, done after 4.2s\nchanges (+1 rule):\n  rule add: ib1: rule 942: from 172.16.34.2 lookup 942\n',
    );
    expect(text).toContain('checks (1/1 hold):\n  ok   ib1: rule 942');
    expect(text).toContain(
      'apply script (sent on stdin to sh -s as root):\n  | ip rule add from 172.16.34.2 lookup 942\napply output (exit 0):\n  | ok\n',
    );
    expect(text).toContain(
      '== matrix\nFAILED  ping 16/ibs5f0 (172.16.16.1) → 34/ib0 (172.16.34.1): 0/3 replies  # ssh root@',
    );
    expect(text.trimEnd().split('\n').at(-1)).toBe('# finished after 2.5s: no hosts · cells 0/1 passed');
  });

  it('never holds a secret, whatever printed it (a host echoing the sudo password, a hostile .bashrc)', () => {
    const file = join(scratch, 'secret.log');
    const log = openRunLog({ env: {}, cwd: scratch, file, command: 'deploy', secrets: () => ['s3cret-pass'] })!;
    drive(log.events, [mem34], 'Welcome\n[sudo] password: s3cret-pass\nline with s3cret-pass twice s3cret-pass\n');
    log.close();
    const text = readFileSync(file, 'utf8');
    expect(text).not.toContain('s3cret-pass');
    expect(text).toContain('[sudo] password: [secret removed]');
  });

  it('quotes a long output line for line, not all of it Latin-1, with its secret removed on every line', () => {
    const file = join(scratch, 'long.log');
    const secret = 'pa55—word';
    const log = openRunLog({ env: {}, cwd: scratch, file, command: 'deploy', secrets: () => [secret] })!;
    // ~70 K characters (~120 KB) of 2 500 lines, some not Latin-1, a secret on every 7th, one blank:
    // under the 256 KiB at which an output is cut.
    const lines = Array.from({ length: 2500 }, (_, i) =>
      i === 1200 ? '' : `line ${i} ${'→ ─ x'.repeat(i % 9)}${i % 7 === 0 ? ` ${secret} end` : ''}`,
    );
    drive(log.events, [mem34], `${lines.join('\n')}\n`);
    log.close();
    const text = readFileSync(file, 'utf8');
    const quoted = lines.map((l) => `  | ${l.replaceAll(secret, '[secret removed]')}`).join('\n');
    expect(text).toContain(`apply output (exit 0):\n${quoted}\n`);
    expect(text).not.toContain('cut at');
    expect(text).not.toContain(secret);
  });

  it('writes a long entry once: a later host whose block would hold the same text refers to the block above', () => {
    const file = join(scratch, 'shared.log');
    const log = openRunLog({ env: {}, cwd: scratch, file, command: 'deploy', secrets: () => [] })!;
    const program = `#!/bin/sh\n${'echo routing\n'.repeat(SHARED_ENTRY_CHARS / 8)}`;
    const label = 'apply file /etc/ibfleet/ibfleet-routes (0755), as the script writes it';
    const events = log.events;
    events.onRunStart!(runStart([cpu16, mem34]));
    // 34 finishes first: its block is the one above; 16's own short data is its own.
    for (const h of [mem34, cpu16]) {
      events.onHostStart!(h, T0);
      events.onOutput!(h, label, program);
      events.onOutput!(h, 'apply file /etc/ibfleet/routes.conf (0644), as the script writes it', `host ${h.id}\n`);
      events.onOutput!(h, 'apply output (exit 0)', 'ok\n');
    }
    events.onHostDone!(result(mem34, 'changed', { manager: 'netplan' }));
    events.onHostDone!(result(cpu16, 'changed', { manager: 'networkmanager' }));
    events.onRunEnd!({ results: [], cells: [], durationMs: 100, interrupted: false });
    log.close();
    const text = readFileSync(file, 'utf8');
    const blocks = text.split(/^== host /m);
    expect(blocks[1]).toMatch(/^34 /);
    expect(blocks[1]).toContain(`${label}:\n  | #!/bin/sh\n  | echo routing\n`);
    expect(blocks[2]).toMatch(/^16 /);
    expect(blocks[2]).toContain(`${label}: the same as host 34's, above\n`);
    expect(blocks[2]).not.toContain('echo routing');
    // Short entries, a host's own data, stay whole even where equal (the output).
    expect(blocks[2]).toContain('routes.conf (0644), as the script writes it:\n  | host 16\n');
    expect(blocks[2]).toContain('apply output (exit 0):\n  | ok\n');
  });

  it('writes a long entry that differs from one above in a few lines as those lines, numbered: put back, they give it whole', () => {
    const file = join(scratch, 'apart.log');
    const log = openRunLog({ env: {}, cwd: scratch, file, command: 'deploy', secrets: () => [] })!;
    const label = 'apply script (sent on stdin to sh -s as root)';
    const body = Array.from({ length: 200 }, (_, i) => `step_${i} ${'x'.repeat(10)}`);
    const scriptOf = (id: number, lines = body) =>
      `${[`# ibfleet deploy: host ${id}`, ...lines, `del_rules from 172.16.${id}.1`].join('\n')}\n`;
    // 16: a script of another kind (its own line count); 9: a hostile line where it differs.
    const scripts = new Map([
      [34, scriptOf(34)],
      [16, scriptOf(16, body.slice(0, 150))],
      [35, scriptOf(35)],
      [9, scriptOf(9).replace('step_7 ', 'step_7 \u001b[2J')],
      [10, `${body.map((l) => `${l} 10`).join('\n')}\n${'y'.repeat(10)}\n${'z'.repeat(10)}\n`],
    ]);
    const hosts = [...scripts.keys()].map((id) => ({ id, name: `h${id}`, target: `10.0.0.${id}` }));
    log.events.onRunStart!(runStart(hosts));
    for (const h of hosts) {
      log.events.onHostStart!(h, T0);
      log.events.onOutput!(h, label, scripts.get(h.id)!);
      log.events.onHostDone!(result(h, 'changed', { manager: 'netplan' }));
    }
    log.events.onRunEnd!({ results: [], cells: [], durationMs: 100, interrupted: false });
    log.close();
    const blocks = new Map(
      readFileSync(file, 'utf8')
        .split(/^== host /m)
        .slice(1)
        .map((b) => [Number(b.split(' ')[0]), b]),
    );
    // Whole: the first, one of another kind, and one that differs in most lines.
    for (const id of [34, 16, 10]) expect(blocks.get(id)).toContain(`${label}:\n  | `);
    expect(blocks.get(35)).toContain(
      `${label}: host 34's, above, but for 2 of its 202 lines:\n     1| # ibfleet deploy: host 35\n   202| del_rules from 172.16.35.1\n`,
    );
    expect(blocks.get(35)).not.toContain('step_1 ');
    // The lines put back into host 34's give host 35's script exactly.
    const lines = scripts.get(34)!.split('\n');
    for (const m of blocks.get(35)!.matchAll(/^ +(\d+)\| (.*)$/gm)) lines[Number(m[1]) - 1] = m[2]!;
    expect(lines.join('\n')).toBe(scripts.get(35));
    // Text from a host is sanitised on these lines as on every other.
    expect(blocks.get(9)).toContain(`${label}: host 34's, above, but for 3 of its 202 lines:\n`);
    expect(blocks.get(9)).not.toContain('\u001b');
  });

  it(`is bounded: past ${MAX_LOG_BYTES / 1024 / 1024} MiB it says it stops, and still ends with the outcome`, () => {
    const file = join(scratch, 'big.log');
    const log = openRunLog({ env: {}, cwd: scratch, file, command: 'deploy', secrets: () => [] })!;
    const hosts = Array.from({ length: 60 }, (_, i) => ({ id: i + 1, name: `h${i + 1}`, target: `10.0.0.${i + 1}` }));
    // Each host's own output: an equal one would be written once (SHARED_ENTRY_CHARS).
    drive(log.events, hosts, (id) => `${id} ${'x'.repeat(200)}\n`.repeat(1000));
    log.close();
    const size = statSync(file).size;
    expect(size).toBeLessThan(MAX_LOG_BYTES + 4096);
    const text = readFileSync(file, 'utf8');
    expect(text).toContain('# the log stops here: it reached 8 MiB');
    expect(text.trimEnd().split('\n').at(-1)).toMatch(/^# finished after/);
  });

  it(`keeps the ${KEEP_LOGS} newest logs of its directory: older ones go when a run starts`, () => {
    const state = join(scratch, 'prune');
    const dir = join(state, 'ibfleet', 'runs');
    mkdirSync(dir, { recursive: true });
    for (let i = 0; i < KEEP_LOGS + 5; i++)
      writeFileSync(join(dir, `20250101T0000${String(i).padStart(2, '0')}Z-status-1.log`), 'old\n');
    writeFileSync(join(dir, 'notes.txt'), 'not a log\n');
    const log = openRunLog({
      env: { XDG_STATE_HOME: state },
      cwd: scratch,
      file: undefined,
      command: 'status',
      secrets: () => [],
    })!;
    log.close();
    const logs = readdirSync(dir)
      .filter((n) => n.endsWith('.log'))
      .sort();
    expect(logs).toHaveLength(KEEP_LOGS);
    expect(logs[0]).toBe('20250101T000006Z-status-1.log');
    expect(readdirSync(dir)).toContain('notes.txt');
  });

  it('--no-log keeps none', () => {
    expect(openRunLog({ env: {}, cwd: scratch, file: false, command: 'status', secrets: () => [] })).toBeUndefined();
  });
});
