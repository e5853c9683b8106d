/**
 * What the routing program's `--check` knows of ibfleet's other files on the host (routes.conf's
 * `file` and `one-of` lines): each one's path, mode and checksum as rendered, so the host alone can
 * tell a file missing, edited or re-moded — in the words status uses (plan/assess.ts fileFinding).
 * The routing data is the same whichever network manager runs it, so files that only some
 * managers get (each manager's hooks, at their own paths; netplan's are two) are checked as one of
 * several sets: the set installed must be whole and intact, and one set must be there. Neither the
 * program nor its data is among them: the probe checks both. Pure.
 */
import { MANAGERS, type Manager } from '../inventory/model.js';
import { sha256 } from '../script/digest.js';
import type { CheckWhere, RenderedFile } from '../script/rendered-file.js';
import { BugError } from '../errors.js';

interface Expected {
  readonly path: string;
  readonly mode: string;
  readonly sha256: string;
  readonly label: string;
  /** Checked only there (RenderedFile.checkWhere); everywhere when undefined. */
  readonly where?: CheckWhere | undefined;
  /** In a one-of check: the set it belongs to (the manager whose hook it is); a set is installed whole. */
  readonly set: string;
}

/** A file every manager gets alike, or a file of which each manager gets its own (`noun`: what they are). */
export type FileCheck =
  | { readonly kind: 'file'; readonly file: Expected }
  | { readonly kind: 'one-of'; readonly noun: string; readonly files: readonly Expected[] };

function expected(file: RenderedFile, sha256: string): Expected {
  return {
    path: file.path,
    mode: file.mode.toString(8),
    sha256,
    label: file.label ?? file.path,
    where: file.checkWhere,
    set: file.manager ?? file.path,
  };
}

/**
 * From the files each manager would get: a path rendered the same for every manager is one file;
 * the others are grouped by what they are (their role), each group checked as one of its files.
 */
export function fileChecksOf(byManager: ReadonlyMap<Manager, readonly RenderedFile[]>): FileCheck[] {
  const all = MANAGERS.flatMap((m) => byManager.get(m) ?? []);
  // Each manager's first file at a path and each path's answer found once (a checksum: digest.ts):
  // this runs for every host of a deploy.
  const firstAt = MANAGERS.map((m) => {
    const files = new Map<string, RenderedFile>();
    for (const f of byManager.get(m) ?? []) if (!files.has(f.path)) files.set(f.path, f);
    return files;
  });
  const sameness = new Map<string, boolean>();
  const same = (path: string) => {
    let answer = sameness.get(path);
    if (answer === undefined) {
      const versions = firstAt.map((files) => files.get(path));
      answer = versions.every(
        (v) => v !== undefined && v.content === versions[0]!.content && v.mode === versions[0]!.mode,
      );
      sameness.set(path, answer);
    }
    return answer;
  };
  const checks: FileCheck[] = [];
  const checked = new Set<string>();
  const roles = new Map<string, Expected[]>();
  for (const file of all) {
    if (same(file.path)) {
      if (!checked.has(file.path)) {
        checked.add(file.path);
        checks.push({ kind: 'file', file: expected(file, sha256(file.content)) });
      }
      continue;
    }
    const key = file.checkGroup ?? file.role;
    const group = roles.get(key) ?? [];
    if (group.length === 0) {
      roles.set(key, group);
      checks.push({ kind: 'one-of', noun: key, files: group });
    }
    const sum = sha256(file.content);
    if (!group.some((e) => e.path === file.path && e.sha256 === sum)) group.push(expected(file, sum));
  }
  return checks;
}

/** What a label, a noun or a path may hold in the data: what the program reads as words, nothing the shell would take for more. */
const DATA_TEXT = /^[A-Za-z0-9 _./:,-]+$/;

function dataText(text: string): string {
  if (!DATA_TEXT.test(text))
    throw new BugError(`a file check's text does not fit routes.conf: ${JSON.stringify(text)}`);
  return text;
}

/** Where the file is checked: everywhere, or only where systemd runs (the program's systemd_runs). */
function whereWord(where: CheckWhere | undefined): 'always' | CheckWhere {
  return where ?? 'always';
}

const fields = (e: Expected) => [e.path, e.mode, e.sha256, e.label].map(dataText).join(' ');

/**
 * The checks as lines of routes.conf, in their order: `file WHERE PATH MODE SHA256 LABEL`, and for a
 * one-of check `one-of NOUN SET PATH MODE SHA256 LABEL` per file, each set's files together, sets
 * numbered (host/ibfleet-routes: check_files, check_one_of).
 */
export function fileCheckRows(checks: readonly FileCheck[]): string[] {
  return checks.flatMap((c) => {
    if (c.kind === 'file') return [`file ${whereWord(c.file.where)} ${fields(c.file)}`];
    const sets = [...new Set(c.files.map((f) => f.set))];
    return sets.flatMap((set, i) =>
      c.files.filter((f) => f.set === set).map((f) => `one-of ${dataText(c.noun)} ${i + 1} ${fields(f)}`),
    );
  });
}
