/**
 * The README's and docs/'s code blocks as data: their blocks, and in them the `ibfleet …` commands
 * as the shell would split them. Read by the tests that keep the documentation true
 * (test/unit/docs.test.ts, test/e2e/readme.test.ts).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PACKAGE_ROOT } from '../../src/package-root.js';

export interface Page {
  readonly file: string;
  readonly text: string;
}

export interface CodeBlock {
  readonly file: string;
  /** 1-based line of the block's first content line. */
  readonly line: number;
  readonly info: string;
  readonly lines: readonly string[];
}

/** README.md and every page of docs/. */
export const PAGES: readonly Page[] = [
  'README.md',
  ...readdirSync(join(PACKAGE_ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
].map((file) => ({ file, text: readFileSync(join(PACKAGE_ROOT, file), 'utf8') }));

export function codeBlocks(page: Page): CodeBlock[] {
  const blocks: CodeBlock[] = [];
  const lines = page.text.split('\n');
  let open: { fence: string; info: string; line: number; lines: string[] } | undefined;
  lines.forEach((raw, i) => {
    const fence = /^\s*(`{3,})(.*)$/.exec(raw);
    if (open) {
      if (fence && fence[1]!.length >= open.fence.length && fence[2]!.trim() === '') {
        blocks.push({ file: page.file, line: open.line, info: open.info, lines: open.lines });
        open = undefined;
      } else open.lines.push(raw);
    } else if (fence) open = { fence: fence[1]!, info: fence[2]!.trim(), line: i + 2, lines: [] };
  });
  return blocks;
}

/** A shell line without its comment: a `#` that starts a word, outside quotes. */
export function withoutComment(line: string): string {
  let quote: string | undefined;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quote) {
      if (c === quote) quote = undefined;
    } else if (c === "'" || c === '"') quote = c;
    else if (c === '#' && (i === 0 || /\s/.test(line[i - 1]!))) return line.slice(0, i).trimEnd();
  }
  return line;
}

/** Shell words as sh splits them (quotes, no expansion beyond the variables given). */
export function shellWords(text: string, vars: Readonly<Record<string, string>>): string[] {
  const words: string[] = [];
  let word: string | undefined;
  let quote: string | undefined;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quote) {
      if (c === quote) quote = undefined;
      else word = (word ?? '') + c;
    } else if (c === "'" || c === '"') {
      quote = c;
      word ??= '';
    } else if (/\s/.test(c)) {
      if (word !== undefined) words.push(word);
      word = undefined;
    } else if (c === '$' && /[A-Za-z_]/.test(text[i + 1] ?? '')) {
      const name = /^[A-Za-z_][A-Za-z0-9_]*/.exec(text.slice(i + 1))![0];
      word = (word ?? '') + (vars[name] ?? `$${name}`);
      i += name.length;
    } else word = (word ?? '') + c;
  }
  if (quote) throw new Error(`unterminated quote in: ${text}`);
  if (word !== undefined) words.push(word);
  return words;
}

export interface DocCommand {
  readonly where: string;
  readonly text: string;
  readonly argv: readonly string[];
}

/**
 * Every command line of a code block that runs ibfleet: a line's commands (split at `&&`, `||`, `;`)
 * that start with `ibfleet` (or `$ ibfleet`, a transcript's prompt). A line of output that merely
 * names a command (`… — ibfleet deploy --hosts 16`) is no command.
 */
export function ibfleetCommands(block: CodeBlock): DocCommand[] {
  const vars: Record<string, string> = {};
  const commands: DocCommand[] = [];
  joinContinuations(block.lines).forEach(({ text: raw, index: i }) => {
    const prompted = raw.replace(/^\s*\$ /, '');
    if (!/^\s*[A-Za-z_][A-Za-z0-9_]*=\S+\s*$|^\s*ibfleet\s/.test(prompted)) return;
    const line = withoutComment(prompted);
    const assignment = /^([A-Za-z_][A-Za-z0-9_]*)=(\S+)$/.exec(line.trim());
    if (assignment) {
      vars[assignment[1]!] = shellWords(assignment[2]!, vars).join(' ');
      return;
    }
    for (const part of line.split(/&&|\|\||;/)) {
      if (!/^\s*ibfleet\s/.test(part)) continue;
      const words = shellWords(part, vars);
      commands.push({ where: `${block.file}:${block.line + i}`, text: part.trim(), argv: words.slice(1) });
    }
  });
  return commands;
}

/** A block's lines as the shell reads them: a line ending in `\` goes on with the next (at the first one's index). */
function joinContinuations(lines: readonly string[]): { text: string; index: number }[] {
  const joined: { text: string; index: number }[] = [];
  let open: { text: string; index: number } | undefined;
  lines.forEach((line, index) => {
    const current = open ? { text: `${open.text} ${line.trim()}`, index: open.index } : { text: line, index };
    if (/\\$/.test(current.text)) open = { ...current, text: current.text.slice(0, -1).trimEnd() };
    else {
      joined.push(current);
      open = undefined;
    }
  });
  if (open) joined.push(open);
  return joined;
}

/**
 * The `ibfleet …` commands written inline in a page's prose (a code span), as a user would copy
 * them: those with a placeholder (`H`, `S`, `FILE`), an alternative (`|`), an optional part (`[…]`)
 * or an elision (`…`) are a command's form, not a command, and are left out, and so is one without
 * an option (`ibfleet deploy`: the command's name in a sentence).
 */
export function inlineCommands(page: Page): DocCommand[] {
  const commands: DocCommand[] = [];
  const text = page.text.replace(/^\s*(`{3,})[^\n]*\n[\s\S]*?\n\s*\1\s*$/gm, (block) => block.replace(/[^\n]/g, ' '));
  for (const match of text.matchAll(/`(ibfleet [^`]+)`/g)) {
    const span = match[1]!.replace(/\s+/g, ' ');
    if (/[[\]|…<>{}]/.test(span)) continue;
    let words: string[];
    try {
      words = shellWords(span, {});
    } catch {
      continue;
    }
    if (words.some((w) => /^[A-Z][A-Z_]*$/.test(w) || w.startsWith('$'))) continue;
    if (!words.some((w) => w.startsWith('-'))) continue;
    const line = text.slice(0, match.index).split('\n').length;
    commands.push({ where: `${page.file}:${line}`, text: span, argv: words.slice(1) });
  }
  return commands;
}
