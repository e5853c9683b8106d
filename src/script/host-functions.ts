/**
 * The shell functions of the scripts ibfleet sends (a change, a rollback, a restore, the probe) are
 * real shell files of the repository — host/functions/*.sh, one a step, and the routing program
 * host/ibfleet-routes, two of whose helpers the change scripts share (PROGRAM_SHARED) — read once
 * from the package, never written inside TypeScript. A step's lines call them by name; `hostScript`
 * gives a script the definitions of the functions it calls (and of those they call), each exactly
 * once, ahead of its body, and nothing of the others — without the comments above them, which
 * stay in the files. A name defined twice across the files is a defect of the package, found at load.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PACKAGE_ROOT } from '../package-root.js';
import { ROUTES_PROGRAM, ROUTES_PROGRAM_SOURCE } from './routes-program.js';
import { receivedWhole, type ScriptEntry } from './shell.js';

export const HOST_FUNCTIONS_DIR = join(PACKAGE_ROOT, 'host', 'functions');

/** The files whose functions the scripts may call: host/functions/*.sh in name order, then the routing program. */
export const HOST_FUNCTION_SOURCES: readonly string[] = [
  ...readdirSync(HOST_FUNCTIONS_DIR)
    .filter((name) => name.endsWith('.sh'))
    .sort()
    .map((name) => join(HOST_FUNCTIONS_DIR, name)),
  ROUTES_PROGRAM_SOURCE,
];

/**
 * The routing program's helpers the scripts call too, so that each exists once: the loop that
 * deletes rules, whether systemd runs the host and whether the route watcher runs. (Its other functions act on its data and are
 * its own: a file a change writes may hold their names, `nic ib0 …`, and call nothing.)
 */
const PROGRAM_SHARED: readonly string[] = ['del_rules', 'systemd_runs', 'watch_runs'];

interface HostFunction {
  readonly name: string;
  /** Its comment and its definition, as the file holds them. */
  readonly text: string;
  /**
   * What a script sends of it: the definition without the comment above it, but for shellcheck's
   * directives (the scripts are checked as sent). Every host receives the functions on every run,
   * and their comments were ~3 KB of a deploy's change that ssh2 encrypted and the host's shell
   * read for nothing; the repository's file keeps them for the reader.
   */
  readonly sent: string;
}

const DEFINITION = /^([A-Za-z_][A-Za-z0-9_]*)\(\) \{/;
const SHELLCHECK_DIRECTIVE = /^#\s*shellcheck\s/;

/**
 * The functions of one file, each with the comment lines right above it. A definition opens at
 * the start of a line (`name() {`) and closes on the same line or at the first line that is `}`.
 */
export function functionsOf(text: string, source: string): HostFunction[] {
  const lines = text.split('\n');
  const found: HostFunction[] = [];
  for (let i = 0; i < lines.length; i++) {
    const name = DEFINITION.exec(lines[i]!)?.[1];
    if (name === undefined) continue;
    let first = i;
    while (first > 0 && lines[first - 1]!.startsWith('#') && !lines[first - 1]!.startsWith('#!')) first--;
    let last = i;
    if (!lines[i]!.trimEnd().endsWith('}')) {
      while (last < lines.length && lines[last] !== '}') last++;
      if (last === lines.length) throw new Error(`ibfleet: ${source}: function ${name} has no closing line "}"`);
    }
    const directives = lines.slice(first, i).filter((l) => SHELLCHECK_DIRECTIVE.test(l));
    const definition = lines.slice(i, last + 1);
    found.push({
      name,
      text: lines.slice(first, last + 1).join('\n'),
      sent: [...directives, ...definition].join('\n'),
    });
    i = last;
  }
  return found;
}

function load(): ReadonlyMap<string, HostFunction> {
  const all = new Map<string, HostFunction>();
  for (const source of HOST_FUNCTION_SOURCES) {
    const text = source === ROUTES_PROGRAM_SOURCE ? ROUTES_PROGRAM : readFileSync(source, 'utf8');
    for (const fn of functionsOf(text, source)) {
      if (source === ROUTES_PROGRAM_SOURCE && !PROGRAM_SHARED.includes(fn.name)) continue;
      if (all.has(fn.name)) throw new Error(`ibfleet: ${source}: function ${fn.name} is defined twice`);
      all.set(fn.name, fn);
    }
  }
  return all;
}

/** Every function a script may call, by name, in the order of their files. */
export const HOST_FUNCTIONS: ReadonlyMap<string, HostFunction> = load();

/** A name of HOST_FUNCTIONS in a command's place: one pass over a script (a change is ~70 KB, a host). */
const CALL = new RegExp(`(?:^|[\\s;&|(!{])(${[...HOST_FUNCTIONS.keys()].join('|')})(?=[\\s;)]|$)`, 'gm');

/** The functions `text` calls, outside comment lines. */
function calledIn(text: string): Set<string> {
  const called = new Set<string>();
  // exec on CALL itself: matchAll would copy the regular expression for every line a change scans.
  CALL.lastIndex = 0;
  for (let match = CALL.exec(text); match !== null; match = CALL.exec(text)) {
    const name = match[1]!;
    if (called.has(name)) continue;
    const line = text.slice(text.lastIndexOf('\n', match.index) + 1, match.index + match[0].length);
    if (!line.trimStart().startsWith('#')) called.add(name);
  }
  return called;
}

/**
 * Each function's own calls and, in turn, theirs: a function's text is the same for every script,
 * so what it needs is found once (at the first script), not once a script.
 */
let closures: ReadonlyMap<string, ReadonlySet<string>> | undefined;

function closureOf(name: string): ReadonlySet<string> {
  closures ??= (() => {
    const direct = new Map([...HOST_FUNCTIONS].map(([n, fn]) => [n, calledIn(fn.text.replace(DEFINITION, ''))]));
    const all = new Map<string, ReadonlySet<string>>();
    for (const start of HOST_FUNCTIONS.keys()) {
      const needed = new Set<string>();
      const visit = (n: string) => {
        if (needed.has(n)) return;
        needed.add(n);
        for (const callee of direct.get(n)!) visit(callee);
      };
      visit(start);
      all.set(start, needed);
    }
    return all;
  })();
  return closures.get(name)!;
}

/**
 * The definitions `code` needs: the functions it calls and, in turn, those they call; in the
 * files' order. `code` is a script's commands: a file the script writes is data, and what its text
 * would call is not the script's (hostScript). `form`: each with its comment (`text`: a file a
 * reader keeps, the ansible project's), or as a script sends it (`sent`).
 */
export function definitionsFor(code: string | readonly string[], form: 'text' | 'sent' = 'text'): string {
  const needed = new Set<string>();
  // Lines (or runs of whole lines) scanned one by one find what their text joined by newlines would.
  for (const text of typeof code === 'string' ? [code] : code)
    for (const name of calledIn(text)) for (const n of closureOf(name)) needed.add(n);
  return [...HOST_FUNCTIONS.values()]
    .filter((fn) => needed.has(fn.name))
    .map((fn) => fn[form])
    .join('\n');
}

/** `body` with the definitions it needs ahead of it. */
export function withHostFunctions(body: string): string {
  const definitions = definitionsFor(body);
  return definitions ? `${definitions}\n${body}` : body;
}

/**
 * A script sent whole (shell.ts receivedWhole), its text or its lines, with the definitions of the
 * host functions it calls. `code`: the body's lines with the contents of the files it writes left
 * out (quoted empty), when it writes any. Their text is data — the routing program a change writes
 * calls its own helpers — and it was most of what a change's scan read (~50 KB of ~75 KB, a host).
 */
export function hostScript(
  entry: ScriptEntry,
  body: string | readonly string[],
  code: string | readonly string[] = body,
): string {
  return receivedWhole(entry, body, definitionsFor(code, 'sent'));
}
