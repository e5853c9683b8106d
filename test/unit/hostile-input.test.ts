/**
 * Hostile or mistaken input that reaches no host: options that cannot be honoured, inventories
 * that would break routing or flood the terminal, and `render --out` paths that are not plain
 * directories. Each is refused with a clear message and exit 2, never a stack trace, a hang or a
 * write somewhere else. The built CLI runs as a child process, as a user would run it.
 */
import { randomBytes } from 'node:crypto';
import {
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { PACKAGE_ROOT } from '../../src/package-root.js';
import { ibfleet } from '../helpers/cli.js';

const scratch = mkdtempSync(join(tmpdir(), 'ibfleet-hostile-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
const SHIPPED = join(PACKAGE_ROOT, 'inventory/fleet.yaml');

function file(name: string, content: string | Buffer): string {
  const path = join(scratch, name);
  writeFileSync(path, content);
  return path;
}

describe('numbers that cannot be honoured are refused, not reinterpreted', () => {
  it.each([
    { args: ['--timeout', '2147484'], says: '--timeout is at most 2147483 seconds' },
    { args: ['--timeout', '99999999999'], says: '--timeout is at most 2147483 seconds' },
    { args: ['--timeout', '1e3'], says: '--timeout must be a number of seconds' },
    { args: ['--timeout', '0x10'], says: '--timeout must be a number of seconds' },
    { args: ['--timeout', '0'], says: '--timeout must be at least 0.001 seconds' },
    { args: ['--timeout', 'Infinity'], says: '--timeout must be a number of seconds' },
    { args: ['--concurrency', '0x10'], says: '--concurrency must be a whole number' },
    { args: ['--concurrency', '1e1'], says: '--concurrency must be a whole number' },
  ])('$args.0 $args.1 → exit 2: $says', async ({ args, says }) => {
    const result = await ibfleet(['-i', SHIPPED, ...args, 'status']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(says);
    expect(result.stdout).toBe('');
  });

  it('--timeout 2147483 (the longest a Node.js timer holds) and 2.5 are accepted', async () => {
    for (const timeout of ['2147483', '2.5']) {
      const result = await ibfleet(['-i', SHIPPED, '--timeout', timeout, 'hosts']);
      expect(result.code, result.stderr).toBe(0);
    }
  });

  it.each(['0x10', '1e1', '+16', '16.0'])('onboard --cpu %s → exit 2: host numbers are decimal', async (cpu) => {
    const result = await ibfleet(['-i', SHIPPED, 'onboard', '--cpu', cpu, '--mem', '34', '--owner', 'alice']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--cpu is a host number 1..254');
  });
});

describe('an inventory that is not text, or full of problems, gives a short answer', () => {
  it('5 MB of binary: one problem naming the first control character and where it is', async () => {
    const binary = Buffer.concat([
      Buffer.from('fabric:\n  subnet: 172.16.0.0/16\nhosts:\n  16: { name: a'),
      Buffer.from([0]),
      randomBytes(5_000_000),
    ]);
    const result = await ibfleet(['-i', file('binary.yaml', binary), 'hosts']);
    expect(result.code).toBe(2);
    expect(result.stderr.split('\n')[0]).toBe(
      `${join(scratch, 'binary.yaml')}:4:16: not a YAML text file: it contains the control character U+0000 (is it a binary file? give the YAML file itself)`,
    );
    expect(result.stderr.length).toBeLessThan(1000);
  });

  it('hundreds of problems with megabytes of input: 20 problems shown, the rest counted, values cut short', async () => {
    const hosts = Array.from(
      { length: 200 },
      (_, i) => `  ${i + 1}: { name: h${i + 1}, manager: ${'x'.repeat(20_000)} }`,
    );
    const result = await ibfleet([
      '-i',
      file('many.yaml', ['fabric:', '  subnet: 172.16.0.0/16', 'hosts:', ...hosts, ''].join('\n')),
      'hosts',
    ]);
    expect(result.code).toBe(2);
    const lines = result.stderr.trimEnd().split('\n');
    expect(lines).toHaveLength(22);
    expect(lines[0]).toMatch(
      /many\.yaml:4:27: hosts\.1\.manager = "x{60}…": unknown manager \(allowed: auto, networkmanager, ifupdown, netplan\)$/,
    );
    expect(lines[20]).toBe('… and 180 more problems not shown (fix these first)');
    expect(lines[21]).toBe('ibfleet: these 200 problems must be fixed first; nothing was contacted');
  });

  it('a YAML syntax error quoting a long line quotes only its start', async () => {
    const result = await ibfleet([
      '-i',
      file('long.yaml', `fabric:\n  subnet: 172.16.0.0/16\nhosts:\n  16: { name: a }\n"${'y'.repeat(100_000)}\n`),
      'hosts',
    ]);
    expect(result.code).toBe(2);
    expect(result.stderr.length).toBeLessThan(1000);
  });
});

describe('render --out writes only into a real directory, never through a link planted in it', () => {
  const render = (out: string) => ibfleet(['-i', SHIPPED, 'render', '--hosts', '34', '--out', out]);

  it.each([
    { out: '/dev/null', says: 'render --out /dev/null: it is a device, not a directory' },
    { out: '/etc/passwd', says: 'render --out /etc/passwd: it is a file, not a directory' },
    { out: '/etc/passwd/rendered', says: 'render --out /etc/passwd/rendered: /etc/passwd is a file, not a directory' },
    { out: '/sys/kernel', says: 'render --out /sys/kernel: cannot create /sys/kernel/memserver34: ' },
    // Node's recursive mkdir spins forever under /proc; render must answer.
    { out: '/proc/self', says: 'render --out /proc/self: cannot create /proc/' },
  ])('--out $out → exit 2: $says', async ({ out, says }) => {
    const result = await render(out);
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toContain(says);
    expect(result.stderr).not.toMatch(/unexpected error| {4}at /);
  });

  it('--out "" (an unset variable, say) is refused, not taken for the current directory', async () => {
    const cwd = join(scratch, 'empty-out-cwd');
    mkdirSync(cwd);
    const result = await ibfleet(['-i', SHIPPED, 'render', '--hosts', '34', '--out', ''], { cwd });
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toBe(
      'ibfleet: render --out needs a directory name: an empty one would write into the current directory (say --out . if that is what you mean)\n',
    );
    expect(readdirSync(cwd)).toEqual([]);
  });

  it('a directory under --out that is a symbolic link is refused; the directory it points to is untouched', async () => {
    const out = join(scratch, 'planted-dir');
    const victim = join(scratch, 'victim-dir');
    mkdirSync(join(out, 'memserver34/etc'), { recursive: true });
    mkdirSync(victim);
    symlinkSync(victim, join(out, 'memserver34/etc/ibfleet'));
    const result = await render(out);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(
      `${join(out, 'memserver34/etc/ibfleet')} is a symbolic link; refusing to write through it`,
    );
    expect(readlinkSync(join(out, 'memserver34/etc/ibfleet'))).toBe(victim);
    expect(lstatSync(join(victim, 'ibfleet-routes'), { throwIfNoEntry: false })).toBeUndefined();
  });

  it('a symbolic link where a file goes is replaced by the file, never written through', async () => {
    const out = join(scratch, 'planted-file');
    const victim = file('victim-file', 'precious\n');
    mkdirSync(join(out, 'memserver34/etc/ibfleet'), { recursive: true });
    symlinkSync(victim, join(out, 'memserver34/etc/ibfleet/ibfleet-routes'));
    const result = await render(out);
    expect(result.code, result.stderr).toBe(0);
    expect(readFileSync(victim, 'utf8')).toBe('precious\n');
    const written = lstatSync(join(out, 'memserver34/etc/ibfleet/ibfleet-routes'));
    expect(written.isFile()).toBe(true);
    expect(written.mode & 0o777).toBe(0o755);
  });
});
