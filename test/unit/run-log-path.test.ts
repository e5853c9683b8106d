/**
 * `--log FILE` writes only into a plain file of the user running ibfleet (issue 22, item 2): a
 * symbolic link, a hard link, another user's file, a pipe or a directory reached through another
 * user's link is refused with exit 2 and the reason, before the -K prompt and before any host is
 * contacted, and what it points to is left as it was. The refusal is ibfleet's own, not the
 * kernel's: it holds with fs.protected_symlinks off (the links here are in a directory that is not
 * sticky, where that sysctl never applies). The files of another uid (65534) need root to plant:
 * test/root/unit/run-log-path.test.ts.
 */
import { execFileSync } from 'node:child_process';
import {
  linkSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ibfleet } from '../helpers/cli.js';
import { PRECIOUS, refusalKit, type RefusalCase } from '../helpers/run-log-refusal.js';

const scratch = mkdtempSync(join(tmpdir(), 'ibfleet-logpath-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const { victim, open, refuses } = refusalKit(scratch);

describe('opening the run log (--log FILE)', () => {
  const cases: RefusalCase[] = [
    {
      name: 'a symbolic link to a file of root',
      plant: () => {
        const target = victim('shadow-1');
        symlinkSync(target, join(scratch, 'link.log'));
        return { file: join(scratch, 'link.log'), victim: target };
      },
      says: /^--log .*\/link\.log: .*\/link\.log is a symbolic link; refusing to write through it \(give another file name, or --no-log for none\)$/,
    },
    {
      name: 'a dangling symbolic link (O_CREAT would create its target)',
      plant: () => {
        symlinkSync(join(scratch, 'created-through-link'), join(scratch, 'dangling.log'));
        return { file: join(scratch, 'dangling.log') };
      },
      says: /dangling\.log is a symbolic link; refusing to write through it/,
    },
    {
      name: 'a hard link to a file of root',
      plant: () => {
        const target = victim('shadow-3');
        linkSync(target, join(scratch, 'hard.log'));
        return { file: join(scratch, 'hard.log'), victim: target };
      },
      says: /hard\.log has 2 names \(a hard link\); refusing to write over a file that is also somewhere else/,
    },
    {
      name: 'a named pipe (nothing hangs)',
      plant: () => {
        execFileSync('mkfifo', [join(scratch, 'pipe.log')]);
        return { file: join(scratch, 'pipe.log') };
      },
      says: /pipe\.log is a pipe, not a file/,
    },
  ];

  it.each(cases)('refuses $name, leaving it as it was', refuses);

  it('writes a new file 0600, and an existing file of ours from its start', () => {
    const fresh = join(scratch, 'fresh.log');
    open(fresh)!.close();
    expect(statSync(fresh).mode & 0o777).toBe(0o600);
    const mine = join(scratch, 'mine.log');
    writeFileSync(mine, 'x'.repeat(10_000));
    const log = open(mine)!;
    log.events.onRunEnd!({ results: [], cells: [], durationMs: 1000, interrupted: false });
    log.close();
    expect(readFileSync(mine, 'utf8')).toBe('# finished after 1.0s: no hosts\n');
  });

  it("follows a symbolic link of our own in a directory component (a link the user made is the user's choice)", () => {
    mkdirSync(join(scratch, 'logs'));
    symlinkSync(join(scratch, 'logs'), join(scratch, 'my-link'));
    open(join(scratch, 'my-link', 'run.log'))!.close();
    expect(lstatSync(join(scratch, 'logs', 'run.log')).isFile()).toBe(true);
  });
});

describe('ibfleet status --log LINK: exit 2 with the reason, before any host is contacted', () => {
  // Hosts on loopback that count who knocks: the refusal must come before any connection.
  const servers: Server[] = [];
  let port = 0;
  let knocks = 0;
  beforeAll(async () => {
    for (const address of ['127.0.0.1', '127.0.0.2']) {
      const server = createServer((socket) => {
        knocks++;
        socket.destroy();
      });
      await new Promise<void>((resolve) => server.listen(port, address, resolve));
      servers.push(server);
      port = (server.address() as { port: number }).port;
    }
  });
  afterAll(() => Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve())))));

  /** Hosts 16 and 17 on the counting listeners; for onboard, neither is in the inventory yet. */
  const inventory = (hosts: boolean) => {
    const path = join(scratch, `loopback-${hosts}.yaml`);
    const entries = hosts
      ? '  16: { name: h16, address: 127.0.0.1 }\n  17: { name: h17, address: 127.0.0.2 }\n'
      : '  20: { name: h20, address: 127.0.0.20 }\n';
    writeFileSync(path, `fabric: { subnet: 172.16.0.0/16 }\ndefaults: { port: ${port} }\nhosts:\n${entries}`);
    return path;
  };

  it.each([
    ['status'],
    ['deploy', '--hosts', '16', '-K'],
    [
      'onboard',
      '--cpu',
      '16',
      '--mem',
      '17',
      '--owner',
      'alice',
      '--cpu-address',
      '127.0.0.1',
      '--mem-address',
      '127.0.0.2',
    ],
  ])('%s … --log LINK', async (...args) => {
    const target = victim(`shadow-cli-${args[0]}`);
    const link = join(scratch, `cli-${args[0]}.log`);
    symlinkSync(target, link);
    knocks = 0;
    const result = await ibfleet(
      [
        '-i',
        inventory(args[0] !== 'onboard'),
        '--known-hosts',
        join(scratch, 'known_hosts'),
        '--timeout',
        '5',
        '--log',
        link,
        ...args,
      ],
      { input: 'pw\n' },
    );
    expect(result.code, result.stdout + result.stderr).toBe(2);
    expect(result.stderr).toBe(
      `ibfleet: --log ${link}: ${link} is a symbolic link; refusing to write through it (give another file name, or --no-log for none)\n`,
    );
    expect(knocks).toBe(0);
    expect(readFileSync(target, 'utf8')).toBe(PRECIOUS);
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
  });

  it('--json says it as a usage error', async () => {
    const target = victim('shadow-cli-json');
    const link = join(scratch, 'cli-json.log');
    symlinkSync(target, link);
    const result = await ibfleet(['-i', inventory(true), '--json', '--log', link, 'status']);
    expect(result.code).toBe(2);
    expect(JSON.parse(result.stdout)).toMatchObject({
      ok: false,
      error: { kind: 'usage', message: expect.stringContaining('is a symbolic link; refusing to write through it') },
    });
    expect(readFileSync(target, 'utf8')).toBe(PRECIOUS);
  });
});
