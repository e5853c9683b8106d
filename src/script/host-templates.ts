/**
 * The files ibfleet writes on hosts (the managers' hooks, the repair units, the NHC check, the
 * netplan files) are templates of the repository, host/files/NAME, with named placeholders; a step
 * gives a template's name and the values of its placeholders, and `hostFile` fills it. Pure: the
 * steps import this module, and the TUI's pure modules reach the steps (test/ui/light-entry), so
 * the texts come from a source the package's reader installs (host-templates-package.ts, imported
 * where files are rendered: render/host-files.ts, and by the tests' setup) — never read here.
 *
 * A placeholder is `{{NAME}}` (capitals, digits, `_`). Alone on its line it stands for lines: its
 * value is a list of lines (none drops the line), or one line. Inside a line its value is one line.
 * Filling fails loudly on a placeholder the values lack, on a value no placeholder takes, and on a
 * line break where one line goes: a typo in a template or a step never writes a half-filled file.
 * Values are inserted as they are, once: a value's own `{{…}}` is never read as a placeholder, so
 * what needs quoting (a word from a host) is quoted by the step that gives it, as before.
 */
import { BugError } from '../errors.js';

/** The templates of host/files/, by file name. */
export type HostTemplate =
  | 'hook-netplan.sh'
  | 'hook-ifupdown.sh'
  | 'hook-networkmanager.sh'
  | 'hook-run.sh'
  | 'hook-watch.sh'
  | 'ibfleet.nhc'
  | 'repair.service'
  | 'repair.timer'
  | 'repair-wants.conf'
  | 'networkd-foreign.conf'
  | 'netplan-routing.yaml'
  | 'netplan-routing-nic.yaml'
  | 'netplan-devices.yaml'
  | 'links-netplan.yaml'
  | 'links-netplan-nic.yaml'
  | 'nm-keyfile.nmconnection'
  | 'links-ifupdown'
  | 'links-ifupdown-nic'
  | 'links-ifupdown-pkey'
  | 'links-ifupdown-mode'
  | 'links-record'
  | 'owned';

/** One line (inside a line, or a line of its own), or lines (a placeholder alone on its line). */
export type TemplateValue = string | readonly string[];
export type TemplateValues = Readonly<Record<string, TemplateValue>>;

const PLACEHOLDER = /\{\{([A-Z][A-Z0-9_]*)\}\}/g;
const LINE_OF_ITS_OWN = /^\{\{([A-Z][A-Z0-9_]*)\}\}$/;

function oneLine(name: string, template: string, value: TemplateValue): string {
  if (typeof value !== 'string')
    throw new BugError(`host/files/${template}: {{${name}}} stands inside a line, but its value is lines`);
  if (value.includes('\n'))
    throw new BugError(`host/files/${template}: {{${name}}} takes one line, and its value has a line break`);
  return value;
}

function lines(name: string, template: string, value: TemplateValue): string {
  const list = typeof value === 'string' ? [value] : value;
  for (const line of list) oneLine(name, template, line);
  return list.map((line) => `${line}\n`).join('');
}

/** A template's text cut at its placeholders: text as it is, a placeholder inside a line, or one alone on its line (with its line break). */
type Piece = string | { readonly name: string; readonly own: boolean };

/**
 * Each template text's pieces, by its exact text: a fleet fills the same few templates for every
 * host (each hook for each manager), and the text is cut once. Bounded: a test may fill many.
 */
const cut = new Map<string, readonly Piece[]>();

function piecesOf(text: string): readonly Piece[] {
  const known = cut.get(text);
  if (known) return known;
  const pieces: Piece[] = [];
  for (const line of text.split(/(?<=\n)/)) {
    const own = LINE_OF_ITS_OWN.exec(line.replace(/\n$/, ''));
    if (own && line.endsWith('\n')) {
      pieces.push({ name: own[1]!, own: true });
      continue;
    }
    let at = 0;
    for (const match of line.matchAll(PLACEHOLDER)) {
      pieces.push(line.slice(at, match.index), { name: match[1]!, own: false });
      at = match.index + match[0].length;
    }
    pieces.push(line.slice(at));
  }
  if (cut.size >= 64) cut.clear();
  cut.set(text, pieces);
  return pieces;
}

/** `text` (the template `template`) with every placeholder replaced by its value. */
export function fillTemplate(template: string, text: string, values: TemplateValues): string {
  const used = new Set<string>();
  const valueOf = (name: string): TemplateValue => {
    const value = values[name];
    if (value === undefined) throw new BugError(`host/files/${template}: no value for {{${name}}}`);
    used.add(name);
    return value;
  };
  const filled = piecesOf(text)
    .map((piece) => {
      if (typeof piece === 'string') return piece;
      const value = valueOf(piece.name);
      return piece.own ? lines(piece.name, template, value) : oneLine(piece.name, template, value);
    })
    .join('');
  const unknown = Object.keys(values).filter((name) => !used.has(name));
  if (unknown.length)
    throw new BugError(`host/files/${template} has no placeholder ${unknown.map((n) => `{{${n}}}`).join(', ')}`);
  return filled;
}

/** Where the templates' texts come from: the package's host/files/ (host-templates-package.ts). */
export type HostTemplateSource = (template: HostTemplate) => string;

let source: HostTemplateSource | undefined;

/** Install the templates' source (once, where files are rendered). */
export function useHostTemplates(read: HostTemplateSource): void {
  source = read;
}

/** The file `template` makes with `values`. */
export function hostFile(template: HostTemplate, values: TemplateValues): string {
  if (!source)
    throw new BugError(
      `host/files/${template}: no template source (import script/host-templates-package.js where files are rendered)`,
    );
  return fillTemplate(template, source(template), values);
}

/** The same as lines, for a placeholder of lines in another template. */
export function hostLines(template: HostTemplate, values: TemplateValues): string[] {
  return hostFile(template, values).replace(/\n$/, '').split('\n');
}
