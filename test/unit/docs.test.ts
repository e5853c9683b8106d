/**
 * The README and docs/ say what the tool does today: every `ibfleet …` command in their code blocks
 * is one the real command line accepts (its command, options and arguments, parsed by the program's
 * own definitions with every action stopped before it runs), every page the README links to exists,
 * and the outputs they quote that need no host are what `ibfleet hosts` prints. The README's first
 * ten minutes run on a lab in test/e2e/readme.test.ts.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Readable } from 'node:stream';
import { CommanderError } from 'commander';
import { afterAll, describe, expect, it } from 'vitest';
import { buildProgram, main } from '../../src/cli.js';
import type { Io } from '../../src/commands/context.js';
import { PACKAGE_ROOT } from '../../src/package-root.js';
import { CELL_CAUSE_KINDS } from '../../src/vocabulary.js';
import { codeBlocks, ibfleetCommands, inlineCommands, PAGES, type Page } from '../helpers/docs.js';

const silentIo = (): Io => ({
  stdout: { write: () => true, isTTY: false },
  stderr: { write: () => true, isTTY: false },
  stdin: Readable.from([]),
  env: {},
  cwd: PACKAGE_ROOT,
  interruptSignal: () => new AbortController().signal,
});

class Parsed extends Error {}

/** Parses argv with the real program, stopping before any command's action: '' when accepted, else commander's words. */
async function parseOnly(argv: readonly string[]): Promise<string> {
  let said = '';
  const program = buildProgram(silentIo(), () => undefined, {});
  const quiet = (command: typeof program): void => {
    command.exitOverride();
    command.configureOutput({ writeOut: () => undefined, writeErr: () => undefined, outputError: (m) => (said = m) });
    command.commands.forEach(quiet);
  };
  quiet(program);
  // Hooks of the program run before the action of whichever command the words name.
  program.hook('preAction', () => {
    throw new Parsed();
  });
  try {
    await program.parseAsync(argv as string[], { from: 'user' });
    return 'the words named no command with an action';
  } catch (error) {
    if (error instanceof Parsed) return '';
    if (error instanceof CommanderError) return said.trim() || error.message;
    throw error;
  }
}

const ALL_COMMANDS = PAGES.flatMap((page) => [...codeBlocks(page).flatMap(ibfleetCommands), ...inlineCommands(page)]);

describe("the documentation's commands", () => {
  it('finds the commands of the README and of docs/ (a test that found none would prove nothing)', () => {
    expect(ALL_COMMANDS.length).toBeGreaterThan(30);
    expect(ALL_COMMANDS.filter((c) => c.where.startsWith('README.md')).length).toBeGreaterThan(15);
    expect(ALL_COMMANDS.map((c) => c.argv.join(' '))).toEqual(
      expect.arrayContaining([
        'lab exec 62 --name new -- ip rule del from 172.16.62.2 lookup 942',
        'status -i /run/ibfleet-lab/demo/inventory.yaml',
      ]),
    );
  });

  it.each(ALL_COMMANDS.map((c) => [c.where, c.text, c] as const))('%s: %s parses', async (_where, _text, command) => {
    expect(await parseOnly(command.argv)).toBe('');
  });

  it('reads a command continued over lines (`\\` at the end) as one', () => {
    const block = {
      file: 't.md',
      line: 1,
      info: 'sh',
      lines: ['ibfleet lab up --name a \\', '  --hosts 1-2', 'ibfleet lab list'],
    };
    expect(ibfleetCommands(block).map((c) => [c.where, c.argv.join(' ')])).toEqual([
      ['t.md:1', 'lab up --name a --hosts 1-2'],
      ['t.md:3', 'lab list'],
    ]);
  });

  it('tells a command the program refuses from one it accepts', async () => {
    expect(await parseOnly(['deploy', '--hosts', 'all', '--dry-runn'])).toMatch(/unknown option '--dry-runn'/);
    expect(await parseOnly(['lab', 'reboot'])).toMatch(/missing required argument/);
    expect(await parseOnly(['deploy', '--hosts', 'all', '--dry-run'])).toBe('');
  });
});

/** Whether the text at `index` is inside one of the page's fenced code blocks (a `# comment` there is no heading). */
function inCode(page: Page, index: number): boolean {
  const line = page.text.slice(0, index).split('\n').length;
  return codeBlocks(page).some((b) => line >= b.line && line < b.line + b.lines.length);
}

describe('the pages the README links to', () => {
  const readme = PAGES.find((p) => p.file === 'README.md')!;
  const links = (page: Page) =>
    [...page.text.matchAll(/\]\(([^)#\s]+)(#[^)]*)?\)/g)].map((m) => m[1]!).filter((l) => !/^[a-z]+:/.test(l));

  it('exist, from the README and from every page of docs/', () => {
    const missing = PAGES.flatMap((page) =>
      links(page)
        .filter((link) => !existsSync(join(PACKAGE_ROOT, dirname(page.file), link)))
        .map((link) => `${page.file} → ${link}`),
    );
    expect(missing).toEqual([]);
  });

  it('take a reader to a heading of the page where they name one (`setup.md#completion`)', () => {
    const slug = (heading: string) =>
      heading
        .trim()
        .toLowerCase()
        .replace(/[^\p{L}\p{N} _-]/gu, '')
        .replace(/ /g, '-');
    const headings = (page: Page) =>
      new Set([...page.text.matchAll(/^#{1,6} (.+)$/gm)].filter((m) => !inCode(page, m.index)).map((m) => slug(m[1]!)));
    const byFile = new Map(PAGES.map((p) => [p.file, p]));
    const dead = PAGES.flatMap((page) =>
      [...page.text.matchAll(/\]\(([^)#\s]*)#([^)\s]+)\)/g)]
        .filter((m) => !/^[a-z]+:/.test(m[1]!))
        .filter((m) => {
          const target = m[1] ? byFile.get(join(dirname(page.file), m[1]).replace(/^\.\//, '')) : page;
          return !target || !headings(target).has(m[2]!);
        })
        .map((m) => `${page.file} → ${m[1]}#${m[2]}`),
    );
    expect(dead).toEqual([]);
  });

  it('include every page of docs/, so none is left where no reader finds it', () => {
    const linked = new Set(links(readme));
    const pages = PAGES.filter((p) => p.file !== 'README.md').map((p) => p.file);
    expect(pages.filter((p) => !linked.has(p))).toEqual([]);
  });

  it('keep the README short enough for a newcomer to finish (at most 300 lines)', () => {
    expect(readme.text.split('\n').length).toBeLessThanOrEqual(300);
  });
});

describe('outputs the documentation quotes, that need no host', () => {
  const scratch = mkdtempSync(join(tmpdir(), 'ibfleet-docs-'));
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  async function hosts(inventoryText: string): Promise<string> {
    const file = join(scratch, `inventory-${Math.random().toString(36).slice(2)}.yaml`);
    writeFileSync(file, inventoryText);
    let stdout = '';
    const io = { ...silentIo(), stdout: { write: (s: string) => ((stdout += s), true), isTTY: false } };
    expect(await main(['hosts', '-i', file], io)).toBe(0);
    return stdout;
  }

  const readmeBlocks = codeBlocks(PAGES.find((p) => p.file === 'README.md')!);
  const quotedHosts = readmeBlocks.find((b) => b.info === '' && b.lines[0]?.startsWith('HOST  NAME'));
  const readmeInventory = readmeBlocks.find((b) => b.info === 'yaml');

  it("README: `ibfleet hosts` on the shipped inventory prints the table it quotes, and the README's inventory is that one", async () => {
    expect(quotedHosts).toBeDefined();
    const quoted = `${quotedHosts!.lines.join('\n')}\n`;
    expect(await hosts(readFileSync(join(PACKAGE_ROOT, 'inventory/fleet.yaml'), 'utf8'))).toBe(quoted);
    expect(await hosts(`${readmeInventory!.lines.join('\n')}\n`)).toBe(quoted);
  });

  it("docs/commands.md: the --json matrix's cause kinds are every kind verify gives, no more", () => {
    const page = PAGES.find((p) => p.file === 'docs/commands.md')!;
    const list = /a\s+failed cell's `causes`: `\[\{"kind", "host", "iface", "text"\}\]`, kinds ([^)]*)\)/.exec(
      page.text,
    );
    expect(list).not.toBeNull();
    expect([...list![1]!.matchAll(/`([a-z-]+)`/g)].map((m) => m[1]).sort()).toEqual([...CELL_CAUSE_KINDS].sort());
  });

  it("docs/inventory.md: the multi-rail example's summary line is what `ibfleet hosts` prints for it", async () => {
    const page = PAGES.find((p) => p.file === 'docs/inventory.md')!;
    const example = codeBlocks(page).find((b) => b.info === 'yaml' && b.lines.some((l) => l.includes('nics: 8')));
    const quoted = /`ibfleet hosts` lists every NIC and sums the counts up: `([^`]+)`/.exec(
      page.text.replace(/\n\s*/g, ' '),
    );
    expect(example).toBeDefined();
    expect(quoted).not.toBeNull();
    const printed = await hosts(`${example!.lines.map((l) => l.replace(/^ {2}/, '')).join('\n')}\n`);
    expect(printed.trimEnd().split('\n').at(-1)).toBe(quoted![1]);
  });
});
