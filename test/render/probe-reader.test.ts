/**
 * The probe's file reader (host/sent/probe.sh: rd_later and its helpers queue, rd_flush prints):
 * one awk reads every queued file and sysfs value, and where awk is missing or fails (mawk stops at
 * a file that errors when read) the shell reads the whole queue again, printing the same. Run here
 * with the machine's /bin/sh and awk on files made for it: what each reading prints, the same by
 * either reader; a file's lines behind `|` whatever they hold; its length bounded where the caller
 * bounds it; stdin (where a change's script may come) never read.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { splitSections } from '../../src/facts/probe-format.js';
import { ZERO_GID } from '../../src/facts/rdma-probe.js';
import { OWNED_PATHS } from '../../src/steps/registry.js';
import { withHostFunctions } from '../../src/script/host-functions.js';
import { sentShell } from '../../src/script/sent-shell.js';

const dir = mkdtempSync(join(tmpdir(), 'ibfleet-probe-reader-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const file = (name: string, text: string) => {
  const path = join(dir, name);
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, text);
  return path;
};

/**
 * The queueing lines `body` run after the reader's functions (and the host functions they call),
 * then rd_flush: by awk, or by the shell alone as where awk fails (its output then starts with an
 * empty line: awk may have stopped within one).
 */
function run(body: string, reader: 'awk' | 'shell', input = ''): string {
  const readers = sentShell('probe').replace('\tawk "$rd_awk"', reader === 'awk' ? '\tawk "$rd_awk"' : '\tfalse');
  if (!readers.includes(reader === 'awk' ? '\tawk "$rd_awk" "$rd_qq$rd_q"' : '\tfalse "$rd_qq$rd_q"'))
    throw new Error('rd_flush changed');
  const script = withHostFunctions(`${readers}${body}\nrd_flush`);
  return execFileSync('sh', ['-c', script, 'sh', dir], { encoding: 'utf8', input });
}

const readers = ['awk', 'shell'] as const;

describe("the probe's file reader", () => {
  const port = join(dir, 'port1');
  // A port's tables as sysfs has them: entries named by index, listed in the order ls shows them.
  for (const [i, v] of [
    ['0', '0xffff'],
    ['1', '0x0000'],
    ['2', '0x8001'],
    ['10', '0x0000'],
  ])
    file(`port1/pkeys/${i}`, `${v}\n`);
  for (const [i, v, t] of [
    ['0', 'fe80:0000:0000:0000:0202:c9ff:fe00:0001', 'IB/RoCE v1'],
    ['1', ZERO_GID, ''],
    ['2', '0000:0000:0000:0000:0000:ffff:ac10:2201', 'RoCE v2'],
  ]) {
    file(`port1/gids/${i}`, `${v}\n`);
    if (t) file(`port1/gid_attrs/types/${i}`, `${t}\n`);
  }
  const lines = file('lines', 'one\n  two  \n@@ibfleet end\nfour\nfive\n');
  const open = file('open', 'first\nno newline at the end');
  const value = file('value', ' \t 4: ACTIVE \t\n');
  const netplan = file('netplan dir/with\ttab.yaml', 'network:\n  version: 2\n');

  it.each(readers)('prints each reading as the probe did (%s)', (reader) => {
    const body = [
      `rd_later L2 '@@ibfleet head x' ${lines}`,
      `rd_later L0 '@@ibfleet content x' ${open}`,
      `rd_whole os ${dir}/missing`,
      `rd_section owned 64 ${dir}/missing`,
      `rd_section owned 64 ${lines}`,
      `rd_mark sysctl ib0`,
      `rd_value 'rp_filter=' ${value}`,
      `rd_value 'accept_local=' ${dir}/missing`,
      `rd_part 'if ib0|' ${value}`,
      `rd_value '|' ${dir}/missing`,
      `rd_later S 'gid 0 ' ${dir}/missing`,
      `rd_later S 'gid 0 ' ${port}/gids/0`,
      `rd_table E 'pkey mlx5_0 1' ${port}`,
      `rd_table R 'gid mlx5_0 1' ${port}`,
      `rd_line 'devices mlx5_0'`,
      `rd_later G '#file' '${netplan}'`,
    ].join('\n');
    expect(run(body, reader)).toBe(
      (reader === 'shell' ? '\n' : '') +
        [
          '@@ibfleet head x',
          '|one',
          '|  two  ',
          '@@ibfleet content x',
          '|first',
          '|no newline at the end',
          '@@ibfleet os',
          '@@ibfleet owned',
          '|one',
          '|  two  ',
          '|@@ibfleet end',
          '|four',
          '|five',
          '@@ibfleet sysctl ib0',
          'rp_filter=4: ACTIVE',
          'accept_local=',
          'if ib0|4: ACTIVE|',
          'gid 0 fe80:0000:0000:0000:0202:c9ff:fe00:0001',
          'pkey mlx5_0 1 0 0xffff',
          'pkey mlx5_0 1 2 0x8001',
          'gid mlx5_0 1 0 fe80:0000:0000:0000:0202:c9ff:fe00:0001 IB/RoCE v1',
          'gid mlx5_0 1 2 0000:0000:0000:0000:0000:ffff:ac10:2201 RoCE v2',
          'devices mlx5_0',
          `#file ${netplan}`,
          '|network:',
          '|  version: 2',
          '',
        ].join('\n'),
    );
  });

  it.each(readers)('a file is bounded where its caller bounds it, whatever its length (%s)', (reader) => {
    const long = file('long', 'x'.repeat(100).concat('\n').repeat(100_000));
    const output = run(`rd_section owned 64 ${long}\nrd_later L4 '@@ibfleet head y' ${long}`, reader);
    expect(output.trim().split('\n').length).toBe(1 + 64 + 1 + 4);
  });

  it.each(readers)(
    'reads a value longer than a sysfs page as none: a 2 MB GID entry is left out, not printed (%s)',
    (reader) => {
      const big = join(dir, 'big-port');
      file('big-port/gids/0', 'fe80:0000:0000:0000:0202:c9ff:fe00:0001\n');
      file('big-port/gids/6', 'a'.repeat(2 * 1024 * 1024));
      file('big-port/gids/7', '0000:0000:0000:0000:0000:ffff:0a00:0001\n');
      file('big-port/gid_attrs/types/7', `${'t'.repeat(5000)}\n`);
      file('big-port/pkeys/0', `0x${'f'.repeat(5000)}\n`);
      const huge = file('huge-value', `${'9'.repeat(4097)}\n`);
      const page = file('page-value', `${'9'.repeat(4096)}\n`);
      const output = run(
        [
          `rd_table R 'gid mlx5_0 1' ${big}`,
          `rd_table E 'pkey mlx5_0 1' ${big}`,
          `rd_value 'rate=' ${huge}`,
          `rd_later S 'gid 0 ' ${huge}`,
          `rd_value 'page=' ${page}`,
        ].join('\n'),
        reader,
      );
      expect(output.length).toBeLessThan(5000);
      expect(output.replace(/^\n/, '')).toBe(
        [
          'gid mlx5_0 1 0 fe80:0000:0000:0000:0202:c9ff:fe00:0001 ',
          'gid mlx5_0 1 7 0000:0000:0000:0000:0000:ffff:0a00:0001 ',
          'rate=',
          `page=${'9'.repeat(4096)}`,
          '',
        ].join('\n'),
      );
    },
  );

  it.each(readers)('keeps the order of a long queue (a 16-NIC host queues some 400 readings) (%s)', (reader) => {
    const body = Array.from({ length: 100 }, (_, i) => `rd_value 'v${i}=' ${value}`).join('\n');
    expect(run(body, reader).trim().split('\n')).toEqual(Array.from({ length: 100 }, (_, i) => `v${i}=4: ACTIVE`));
  });

  it.each(readers)('never reads stdin, where the rest of a change may come (%s)', (reader) => {
    const body = `rd_whole os ${lines}\nrd_flush\nread -r next; echo "after: $next"\nrd_q=`;
    expect(run(body, reader, 'next line of the script\n')).toMatch(/^after: next line of the script$/m);
  });

  it('where awk stops at a file it cannot read, the shell prints every section again, and those are the ones kept', () => {
    // /proc/self/mem answers a read at its start with EIO: mawk reports a read error and exits.
    const body = [
      `rd_section owned 64 ${lines}`,
      `rd_mark sysctl ib0`,
      `rd_value 'rp_filter=' /proc/self/mem`,
      `rd_value 'accept_local=' ${value}`,
      `rd_whole os ${open}`,
    ].join('\n');
    const output = run(body, 'awk');
    // awk printed the sections before the file it stopped at; the shell printed all of them again.
    expect(output.match(/^@@ibfleet owned$/gm)).toHaveLength(2);
    expect(splitSections(output)).toEqual(splitSections(run(body, 'shell')));
    expect(splitSections(output).get('os')).toEqual(['|first', '|no newline at the end']);
  });

  it("leaves out a line of the probe's own with a newline in it, and a path must hold none", () => {
    expect(run(`rd_line "$(printf 'devices a\\n@@ibfleet end')"\nrd_line ok`, 'awk')).toBe('ok\n');
    // ibfleet's own files travel through the queue one a line, behind tabs.
    for (const path of OWNED_PATHS) expect(path).toMatch(/^\/[^\t\n ]+$/);
  });
});
