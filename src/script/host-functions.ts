/**
 * The shell functions of the scripts ibfleet sends (a change, a rollback, a restore, the probe) are
 * real shell files of the repository — host/functions/*.sh, one a step, and the routing program
 * host/ibfleet-routes, two of whose helpers the change scripts share (PROGRAM_SHARED) — read once
 * from the package, never written inside TypeScript. A step's lines call them by name; `hostScript`
 * gives a script the definitions of the functions it calls (and of those they call), each exactly
 * once, ahead of its body, and nothing of the others. A name defined twice across the files is a
 * defect of the package, found at load.
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
}

const DEFINITION = /^([A-Za-z_][A-Za-z0-9_]*)\(\) \{/;

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
    found.push({ name, text: lines.slice(first, last + 1).join('\n') });
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
  for (const match of text.matchAll(CALL)) {
    const name = match[1]!;
    if (called.has(name)) continue;
    const line = text.slice(text.lastIndexOf('\n', match.index) + 1, match.index + match[0].length);
    if (!line.trimStart().startsWith('#')) called.add(name);
  }
  return called;
}

/** The definitions `body` needs: the functions it calls and, in turn, those they call; in the files' order. */
export function definitionsFor(body: string): string {
  const needed = new Set<string>();
  const visit = (text: string) => {
    for (const name of calledIn(text)) {
      if (needed.has(name)) continue;
      needed.add(name);
      visit(HOST_FUNCTIONS.get(name)!.text.replace(DEFINITION, ''));
    }
  };
  visit(body);
  return [...HOST_FUNCTIONS.values()]
    .filter((fn) => needed.has(fn.name))
    .map((fn) => fn.text)
    .join('\n');
}

/** `body` with the definitions it needs ahead of it. */
export function withHostFunctions(body: string): string {
  const definitions = definitionsFor(body);
  return definitions ? `${definitions}\n${body}` : body;
}

/** A script sent whole (shell.ts receivedWhole), with the definitions of the host functions it calls. */
export function hostScript(entry: ScriptEntry, body: string): string {
  return receivedWhole(entry, withHostFunctions(body));
}
