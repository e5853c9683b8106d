/**
 * How a change script writes ibfleet's files (src/render/apply-script.ts puts these lines in it):
 * each file's exact bytes staged beside its directory, its mode set, the version it replaces kept,
 * then renamed over it; and, for the run log, the script with each file's content apart
 * (filesApart). Pure string builders.
 */
import { BugError } from '../errors.js';
import { comparePaths } from '../script/path-order.js';
import { formatMode, type RenderedFile } from '../script/rendered-file.js';
import { shellQuote } from '../script/shell.js';
import type { ApplyPart } from '../steps/step.js';

/**
 * Hooks are staged one directory up, outside the directory their runner scans, so a half-written
 * or not-yet-renamed file can never be executed; other files stage in their own directory. The
 * staged name is a dotfile ending in the shell's pid: no runner, sysctl.d or run-parts takes it
 * (none reads dotfiles or names without their suffix), and a leftover of an interrupted run is
 * never taken for this one's.
 */
function stageDir(file: RenderedFile): string {
  const dir = file.path.replace(/\/[^/]+$/, '');
  return file.stageOutside ? dir.replace(/\/[^/]+$/, '') : dir;
}

function stagedPath(file: RenderedFile): string {
  // Staged one directory up, a file is named with its own directory too: netplan's two hooks share a name.
  const name = file.stageOutside ? file.path.split('/').slice(-2).join('.') : file.path.replace(/^.*\//, '');
  return `${shellQuote(`${stageDir(file)}/.${name}.ibfleet-new`)}.$$`;
}

/** What comes before a file's quoted content in the script (filesApart finds it behind this). */
const PRINTF_WORD = "printf '%s' ";

/**
 * A file's exact bytes, written by the shell's own printf: a single-quoted word carries every byte
 * but NUL unchanged (a quote becomes '\\''), and unlike `cat` and a here-document it costs the
 * host no process.
 */
function writeContent(file: RenderedFile, target: string): string {
  return `${PRINTF_WORD}${quotedContent(file)} >${target} || status=1`;
}

/**
 * The last content quoted for each path, with its quoted form: the routing program (~40 KB) is the
 * same text on every host, quoted once a run instead of once a host. Keyed by the exact content
 * (another text is checked and quoted afresh); as many entries as paths, bounded.
 */
const lastQuoted = new Map<string, { readonly content: string; readonly quoted: string }>();

function quotedContent(file: RenderedFile): string {
  const last = lastQuoted.get(file.path);
  if (last?.content === file.content) return last.quoted;
  if (file.content.includes('\0'))
    throw new BugError(`${file.path} contains a NUL byte, which no shell word can carry`);
  const quoted = shellQuote(file.content);
  if (lastQuoted.size >= 256) lastQuoted.clear();
  lastQuoted.set(file.path, { content: file.content, quoted });
  return quoted;
}

/** One file a change wrote, apart from the script that wrote it (filesApart). */
export interface FileApart {
  readonly path: string;
  /** Octal, as the script's comment above the file gives it (`0755`). */
  readonly mode: string;
  readonly content: string;
}

/**
 * A change script as the run log shows it: the content of each of `files` it writes (its plan's
 * `write`) taken out of the printf that carries it, a marker in its place, and the contents apart.
 * The routing program (~40 KB) is the same text on every host of a run: apart, the log writes it
 * once and refers to it for the other hosts (src/ui/run-log-file.ts), where every host's block held
 * a quoted copy and a 100-host deploy outgrew the log's bound before its last host.
 */
export function filesApart(script: string, files: readonly RenderedFile[]): { script: string; files: FileApart[] } {
  const pieces: string[] = [];
  const apart: FileApart[] = [];
  let from = 0;
  for (const f of files) {
    // The very string writeContent put in the script (quotedContent keeps it), behind its printf.
    const quoted = quotedContent(f);
    let at = script.indexOf(quoted, from);
    while (at >= 0 && !script.startsWith(PRINTF_WORD, at - PRINTF_WORD.length)) at = script.indexOf(quoted, at + 1);
    if (at < 0) continue;
    pieces.push(script.slice(from, at), `[the content of ${f.path}, shown apart below]`);
    from = at + quoted.length;
    apart.push({ path: f.path, mode: formatMode(f.mode), content: f.content });
  }
  if (apart.length === 0) return { script, files: [] };
  pieces.push(script.slice(from));
  return { script: pieces.join(''), files: apart };
}

/** Prefix of the line the apply prints for each directory it creates (a restore removes them again). */
export const CREATED_DIR_LINE = 'ibfleet: created ';

/** The directories writing `files` needs (their own and their staging directories), parents first. */
export function directoriesFor(files: readonly RenderedFile[]): string[] {
  const dirs = files.flatMap((f) => [f.path.replace(/\/[^/]+$/, ''), stageDir(f)]);
  // A deploy asks this of the same few directories for every host (its plan, its restore, its change).
  const key = dirs.join('\n');
  let ordered = ordering.get(key);
  if (ordered === undefined) {
    ordered = byDepth([...new Set(dirs)]);
    if (ordering.size >= 64) ordering.clear();
    ordering.set(key, ordered);
  }
  return [...ordered];
}

/** directoriesFor's answers by their directories (each file's own and its staging one, in order), exactly; bounded. */
const ordering = new Map<string, readonly string[]>();

/** `dirs` (distinct) parents first: shallower first, paths of one depth in comparePaths' order. */
function byDepth(dirs: readonly string[]): string[] {
  // Each path's depth counted once, not at every comparison of the sort.
  const depth = new Map(dirs.map((d) => [d, d.split('/').length]));
  return [...dirs].sort((a, b) => depth.get(a)! - depth.get(b)! || comparePaths(a, b));
}

/**
 * The directories of `dirs` (parents first) that are missing, made by one `mkdir -p`: `[ -d ]` is
 * the shell's own, so a directory that is there costs nothing and a fresh host pays one process for
 * them all. Each one made is said and put in $created, deepest first, for the change's own restore
 * (ApplyPlan.restore) — also those a failing mkdir made before it stopped.
 */
function makeDirectories(dirs: readonly string[]): string[] {
  if (dirs.length === 0) return [];
  for (const d of dirs)
    if (!/^\/[A-Za-z0-9._/-]+$/.test(d))
      throw new BugError(`${d}: a directory a change writes in must be a plain path`);
  return [
    'new_dirs=',
    ...dirs.map((d) => `[ -d ${d} ] || new_dirs="$new_dirs ${d}"`),
    'if [ -n "$new_dirs" ]; then',
    '\t# shellcheck disable=SC2086 # plain paths (makeDirectories), one word each',
    '\tmkdir -p $new_dirs || status=1',
    `\tfor new_dir in $new_dirs; do [ ! -d "$new_dir" ] || { echo ${shellQuote(CREATED_DIR_LINE)}"$new_dir"; created="$new_dir $created"; }; done`,
    'fi',
  ];
}

/**
 * The chmods of the staged files, one per mode: umask 022 makes every new file 0644 already, so
 * only other modes need one; those `byPerl` says perl sets run only where the host has no perl.
 */
function chmodLines(files: readonly RenderedFile[], staged: readonly string[], byPerl: (f: RenderedFile) => boolean) {
  const groups = new Map<string, string[]>();
  files.forEach((f, i) => {
    if (f.mode === 0o644) return;
    const command = `${byPerl(f) ? 'perl_renames || ' : ''}chmod ${formatMode(f.mode)}`;
    groups.set(command, [...(groups.get(command) ?? []), staged[i]!]);
  });
  return [...groups].map(([command, paths]) => `[ "$status" -ne 0 ] || ${command} ${paths.join(' ')} || status=1`);
}

/**
 * Writes every file atomically: all are staged (content byte-exact, owner root, mode set), the
 * versions they replace are kept, then each is renamed over its old file. Nothing is renamed
 * unless everything staged. One command per step for all files, not per file: each process costs
 * the host a fork and an exec, and a fleet pays it per host.
 *
 * `lines`: the script's lines that write `files`; `code`: the same with each file's content left
 * out (quoted empty) — the commands alone, whose calls need definitions (hostScript).
 */
export function writeFiles(
  files: readonly RenderedFile[],
  validations: NonNullable<ApplyPart['validate']>,
): { lines: string[]; code: string[] } {
  if (files.length === 0) return { lines: [], code: [] };
  const staged = files.map(stagedPath);
  const dirs = directoriesFor(files);
  // A file a step checks staged has its mode before the check; the others' modes the perl that
  // renames them sets where the host has it (host/sent/change.sh rename_staged): a process less.
  const checked = new Set(validations.map((v) => v.path));
  const byPerl = (f: RenderedFile) => f.mode !== 0o644 && !checked.has(f.path);
  const lines = ['umask 022', ...makeDirectories(dirs)];
  // The files' own $variables are their text, not this script's: SC2016 does not apply.
  const contentAt: number[] = [];
  files.forEach((f, i) => {
    lines.push(`# ${f.path} (${formatMode(f.mode)})`, '# shellcheck disable=SC2016');
    contentAt.push(lines.push(writeContent(f, staged[i]!)) - 1);
  });
  // The script runs as root (directly or through sudo), so the files it creates are root's, as the
  // dispatchers require; the probe after the change checks the owner, so no chown is run for it.
  lines.push(...chmodLines(files, staged, byPerl));
  // A step's check of a staged file (netplan generate): the file is renamed into place only once it passes.
  files.forEach((f, i) =>
    validations.filter((v) => v.path === f.path).forEach((v) => lines.push(...v.lines(staged[i]!))),
  );
  lines.push(`[ "$status" -ne 0 ] || keep ${files.map((f) => shellQuote(f.path)).join(' ')} || status=1`);
  // As mv -fT (host/sent/change.sh): a directory at the path (the plan refuses one the probe saw)
  // fails the rename, where plain mv would move the file into it and report success.
  lines.push(
    `[ "$status" -ne 0 ] || rename_staged ${files.map((f, i) => `${byPerl(f) ? formatMode(f.mode) : '-'} ${staged[i]} ${shellQuote(f.path)}`).join(' ')} || status=1`,
  );
  lines.push(`[ "$status" -eq 0 ] || rm -f ${staged.join(' ')}`);
  const code = [...lines];
  contentAt.forEach((at, i) => (code[at] = `${PRINTF_WORD}'' >${staged[i]} || status=1`));
  return { lines, code };
}
