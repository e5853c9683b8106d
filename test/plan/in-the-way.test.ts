/** What stands in the way of a file a change writes: read from the probe, refused by name (issue 29 item 4). */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { obstacleProbe, parseObstacles } from '../../src/facts/obstacles.js';
import { inTheWay } from '../../src/plan/in-the-way.js';
import type { RenderedFile } from '../../src/script/rendered-file.js';

const stanza: RenderedFile = {
  path: '/etc/network/interfaces.d/ibfleet-links',
  mode: 0o644,
  content: '',
  role: 'links',
  kind: 'links-file',
  label: 'links file /etc/network/interfaces.d/ibfleet-links',
};
const hook: RenderedFile = {
  path: '/etc/network/if-up.d/ibfleet-routes',
  mode: 0o755,
  content: '',
  role: 'hook',
  kind: 'hook',
  label: 'hook /etc/network/if-up.d/ibfleet-routes',
  stageOutside: true,
};
const at = (lines: string[]) => ({ obstacles: parseObstacles(lines) });

describe('in the way of a file ibfleet writes', () => {
  it.each([
    [
      ['directory /etc/network/interfaces.d/ibfleet-links'],
      [
        '/etc/network/interfaces.d/ibfleet-links is a directory, where ibfleet writes its links file: move it away (ibfleet replaces only a file, or a link to one, there)',
      ],
    ],
    [
      ['link to a directory /etc/network/if-up.d/ibfleet-routes'],
      [
        '/etc/network/if-up.d/ibfleet-routes is a link to a directory, where ibfleet writes its hook: move it away (ibfleet replaces only a file, or a link to one, there)',
      ],
    ],
    [
      ['fifo /etc/network/if-up.d/ibfleet-routes'],
      [
        '/etc/network/if-up.d/ibfleet-routes is a fifo, where ibfleet writes its hook: move it away (ibfleet replaces only a file, or a link to one, there)',
      ],
    ],
    [
      ['not a directory /etc/network/if-up.d'],
      [
        '/etc/network/if-up.d is not a directory, but ibfleet writes /etc/network/if-up.d/ibfleet-routes in it: move it away',
      ],
    ],
    [
      ['link to nothing /etc/network/interfaces.d'],
      [
        '/etc/network/interfaces.d is a link to nothing, but ibfleet writes /etc/network/interfaces.d/ibfleet-links in it: move it away',
      ],
    ],
    // Only what stands where this change writes: a directory at another manager's hook path is not this host's concern.
    [['directory /etc/NetworkManager/dispatcher.d/50-ibfleet-routes', 'garbage line'], []],
  ])('%j', (lines, expected) => {
    expect(inTheWay([stanza, hook], at(lines))).toEqual(expected);
  });

  it('the probe tests each path with the shell alone, following links where mv would', () => {
    const lines = obstacleProbe({ files: ['/etc/a b'], dirs: ['/etc'] }).join('\n');
    expect(lines).toContain("for p in '/etc/a b'; do");
    expect(lines).not.toMatch(/\b(stat|find|ls)\b/);
  });

  it('the probe names what stands at each path, run by the shell on paths of every kind', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ibfleet-in-the-way-'));
    try {
      const at = (name: string) => join(dir, name);
      mkdirSync(at('dir'));
      writeFileSync(at('file'), 'x\n');
      symlinkSync(at('dir'), at('link-dir'));
      symlinkSync(at('file'), at('link-file'));
      symlinkSync(at('nothing'), at('link-nothing'));
      symlinkSync('/dev/null', at('link-char'));
      execFileSync('mkfifo', [at('fifo')]);
      const files = ['absent', 'file', 'dir', 'link-dir', 'link-file', 'link-nothing', 'link-char', 'fifo'].map(at);
      const dirs = ['dir', 'absent', 'file', 'link-dir', 'link-nothing', 'link-file'].map(at);
      const script = `s() { printf '@@ibfleet %s\\n' "$*"; }\n${obstacleProbe({ files, dirs }).join('\n')}`;
      expect(execFileSync('sh', ['-c', script], { encoding: 'utf8' }).split('\n')).toEqual([
        '@@ibfleet in-the-way',
        `directory ${at('dir')}`,
        `link to a directory ${at('link-dir')}`,
        `character device ${at('link-char')}`,
        `fifo ${at('fifo')}`,
        `not a directory ${at('file')}`,
        `link to nothing ${at('link-nothing')}`,
        `not a directory ${at('link-file')}`,
        '',
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
