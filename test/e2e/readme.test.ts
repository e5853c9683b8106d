/**
 * The README's first ten minutes, run line by line as a newcomer types them (piped, from a
 * directory of their own), on a lab of the test's name and subnet: each command exits as its
 * comment says (`(exit 1)`, else 0) and prints every text its comment quotes in backquotes (an
 * ellipsis in a quote stands for anything). A README example that stops being true fails here.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { labDown } from '../../src/lab/index.js';
import { run } from '../../src/lab/system.js';
import { CLI } from '../helpers/cli.js';
import { codeBlocks, PAGES, withoutComment } from '../helpers/docs.js';
import { IS_ROOT, noteIfNotRoot, testLab } from '../lab/helpers.js';

const LAB = testLab('e2e-readme');

noteIfNotRoot("test/e2e/readme.test.ts (the README's first ten minutes)");

/** The README's own lab, renamed to the test's: its name, its files, its subnet. */
const README_LAB = { name: 'new', subnet: '198.18.8.0/24' };
const ours = (text: string) =>
  text
    .replaceAll(`--name ${README_LAB.name}`, `--name ${LAB.name}`)
    .replaceAll(`/run/ibfleet-lab/${README_LAB.name}/`, `/run/ibfleet-lab/${LAB.name}/`)
    .replaceAll(README_LAB.subnet, LAB.mgmtSubnet);

interface Step {
  readonly line: string;
  /** Shell assignments made by the lines before it (`I=…`). */
  readonly assignments: readonly string[];
  readonly exit: number;
  readonly quotes: readonly string[];
}

function firstTenMinutes(): Step[] {
  const readme = PAGES.find((p) => p.file === 'README.md')!;
  const start = readme.text.indexOf('## The first ten minutes');
  const block = codeBlocks(readme).find((b) => b.info === 'sh' && readme.text.indexOf(b.lines[0]!) > start);
  if (start < 0 || !block) throw new Error('README.md has no sh block under "## The first ten minutes"');
  const steps: Step[] = [];
  const assignments: string[] = [];
  for (const raw of block.lines) {
    const command = withoutComment(raw).trim();
    if (command === '') continue;
    if (/^[A-Za-z_]\w*=\S+$/.test(command)) {
      assignments.push(ours(command));
      continue;
    }
    const comment = raw.slice(withoutComment(raw).length);
    steps.push({
      line: ours(command),
      assignments: [...assignments],
      exit: Number(/\(exit (\d+)\)/.exec(comment)?.[1] ?? 0),
      quotes: [...comment.matchAll(/`([^`]+)`/g)].map((m) => ours(m[1]!)),
    });
  }
  return steps;
}

const STEPS = firstTenMinutes();

/** What each step printed, in the order they ran. */
const PRINTED: { readonly line: string; readonly said: string }[] = [];

describe.skipIf(!IS_ROOT)("the README's first ten minutes (needs root)", () => {
  let home: string;

  beforeAll(async () => {
    await labDown(LAB.name);
    home = mkdtempSync(join(tmpdir(), 'ibfleet-readme-'));
  });

  afterAll(async () => {
    await labDown(LAB.name);
    rmSync(home, { recursive: true, force: true });
  });

  it('has the walk-through to run: a lab up, a deploy, a verify, a rollback and the lab down', () => {
    const lines = STEPS.map((s) => s.line);
    expect(lines[0]).toMatch(/^ibfleet lab up /);
    expect(lines.at(-1)).toBe(`ibfleet lab down --name ${LAB.name}`);
    expect(lines.filter((l) => /^ibfleet (deploy|verify|rollback) /.test(l)).length).toBeGreaterThanOrEqual(5);
    expect(STEPS.filter((s) => s.quotes.length > 0).length).toBeGreaterThanOrEqual(8);
  });

  it.each(STEPS.map((s) => [s.line, s] as const))(
    '%s',
    async (_line, step) => {
      const script = [`ibfleet() { node ${CLI} "$@"; }`, `cd ${home}`, ...step.assignments, step.line].join('\n');
      const result = await run(['bash', '-c', script], {
        timeoutMs: 150_000,
        env: { PATH: process.env.PATH!, HOME: home, XDG_STATE_HOME: home, NO_COLOR: '1' },
      });
      const said = result.stdout + result.stderr;
      PRINTED.push({ line: step.line, said });
      expect(result.code, said).toBe(step.exit);
      for (const quote of step.quotes)
        for (const piece of quote
          .split('…')
          .map((p) => p.trim())
          .filter(Boolean))
          expect(said).toContain(piece);
    },
    160_000,
  );

  it("docs/commands.md: the changes of a deploy it quotes are what the walk-through's first deploy printed for a configured NetworkManager host (63)", () => {
    const page = PAGES.find((p) => p.file === 'docs/commands.md')!;
    const quoted = /what changed by kind — `([^`]+)`/.exec(page.text)?.[1]?.replace(/\s+/g, ' ');
    const deploy = PRINTED.find((p) => /^ibfleet deploy -i \S+ --hosts all$/.test(p.line));
    expect(quoted).toBeDefined();
    expect(deploy, 'the first deploy of the walk-through ran').toBeDefined();
    expect(deploy!.said).toContain(`63: changed: ${quoted}\n`);
  });
});
