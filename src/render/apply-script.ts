/**
 * The scripts deploy and rollback send to a host, each run in one SSH channel: take the host lock,
 * make the change, then print the probe sections again so verification reads the state the change
 * left. Files travel inside the script as single-quoted printf words (byte-exact) and are written
 * atomically: staged next to their directory, then renamed over the old file, whose previous
 * version is kept non-executable under PREVIOUS_DIR. Pure string builders.
 */
import { BugError } from '../errors.js';
import type { Fleet, Host } from '../inventory/model.js';
import { FINISHED_PATH, PREVIOUS_DIR, REPLACED_DIR, ROUTING_SCRIPT_PATH } from '../script/paths.js';
import { sentShell } from '../script/sent-shell.js';
import type { RenderedFile } from '../script/rendered-file.js';
import { hostScript } from '../script/host-functions.js';
import { comparePaths } from '../script/path-order.js';
import { shellQuote } from '../script/shell.js';
import { OWNED_PATHS } from '../steps/registry.js';
import type { ApplyPart, UndoLines } from '../steps/step.js';
import { renderTakeLock, type LockKind } from './host-lock.js';
import { renderProbeBody } from './probe-script.js';
import { RELEASE_ROUTING_LOCK, TAKE_ROUTING_LOCK } from './routing-lock.js';

export { LOCKED_EXIT } from './host-lock.js';
/** Marks the start of the post-change probe in the output. */
export const AFTER_MARK = '@@ibfleet-after';

/**
 * Every change a run sends carries the run's id: the lock file names it while the change holds the
 * lock, and FINISHED_PATH receives it when the change ran to its end, so a controller cut off from
 * a change can tell, on a new connection, whether that change has ended (settle-script.ts).
 */
/** The id shown in --dry-run's script; a real run draws its own. */
export const DRY_RUN_ID = 'dry-run';

/** The change's last step before it exits: say it ran to its end. */
export function finishLine(runId: string): string {
  return `printf '%s\\n' ${runId} >${shellQuote(FINISHED_PATH)} 2>/dev/null`;
}

/**
 * Every change script's start: finish whatever happens, the keep/retire helpers (host/sent/change.sh),
 * then the host lock (render/host-lock.ts; already held when the change continues the probe that took it).
 */
export function renderPrelude(kind: LockKind, runId: string): string {
  return `${sentShell('change')}${renderTakeLock(kind, 0, runId)}\n`;
}

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
    apart.push({ path: f.path, mode: modeOf(f), content: f.content });
  }
  if (apart.length === 0) return { script, files: [] };
  pieces.push(script.slice(from));
  return { script: pieces.join(''), files: apart };
}

/**
 * Writes every file atomically: all are staged (content byte-exact, owner root, mode set), the
 * versions they replace are kept, then each is renamed over its old file. Nothing is renamed
 * unless everything staged. One command per step for all files, not per file: each process costs
 * the host a fork and an exec, and a fleet pays it per host.
 */
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

const modeOf = (f: RenderedFile) => f.mode.toString(8).padStart(4, '0');

/**
 * The chmods of the staged files, one per mode: umask 022 makes every new file 0644 already, so
 * only other modes need one; those `byPerl` says perl sets run only where the host has no perl.
 */
function chmodLines(files: readonly RenderedFile[], staged: readonly string[], byPerl: (f: RenderedFile) => boolean) {
  const groups = new Map<string, string[]>();
  files.forEach((f, i) => {
    if (f.mode === 0o644) return;
    const command = `${byPerl(f) ? 'perl_renames || ' : ''}chmod ${modeOf(f)}`;
    groups.set(command, [...(groups.get(command) ?? []), staged[i]!]);
  });
  return [...groups].map(([command, paths]) => `[ "$status" -ne 0 ] || ${command} ${paths.join(' ')} || status=1`);
}

/**
 * `lines`: the script's lines that write `files`; `code`: the same with each file's content left
 * out (quoted empty) — the commands alone, whose calls need definitions (hostScript).
 */
function writeFiles(
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
    lines.push(`# ${f.path} (${modeOf(f)})`, '# shellcheck disable=SC2016');
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
    `[ "$status" -ne 0 ] || rename_staged ${files.map((f, i) => `${byPerl(f) ? modeOf(f) : '-'} ${staged[i]} ${shellQuote(f.path)}`).join(' ')} || status=1`,
  );
  lines.push(`[ "$status" -eq 0 ] || rm -f ${staged.join(' ')}`);
  const code = [...lines];
  contentAt.forEach((at, i) => (code[at] = `printf '%s' '' >${staged[i]} || status=1`));
  return { lines, code };
}

/**
 * The probe again after a change, behind AFTER_MARK: verification reads the state the change left.
 * It reads only what a change can alter (ProbeOptions.closing: the controller has the rest from
 * the probe before the change, plan/change-output.ts readChangeOutput) unless `whole`: a change
 * looked at on a new connection, by a run that may not have probed it. `wants`: what the
 * playbook's steps have the probe read beyond every probe (ProbeOptions.wants).
 */
export function afterProbe(
  host: Host,
  fleet: Fleet,
  options: { readonly wants?: ReadonlySet<string>; readonly whole?: boolean } = {},
): string {
  const { wants, whole } = options;
  const probe = { managerEvidence: false, fabric: false, closing: whole !== true, ...(wants ? { wants } : {}) };
  return `echo ${AFTER_MARK}\n${renderProbeBody(host, fleet, probe)}`;
}

export interface ApplyPlan {
  /** Files to (re)write; unchanged files are not sent. */
  readonly write: readonly RenderedFile[];
  /** Paths of stale files to remove (another manager's hook). */
  readonly remove: readonly string[];
  /** Each step's part of the change, in the playbook's order. */
  readonly parts: ReadonlyMap<string, ApplyPart>;
  /** False when the routing lives in the manager's configuration: there is no routing script to run. */
  readonly routingScript?: boolean;
  /**
   * What puts the host back as the probe found it (restore-script.ts restoreLines), run by the
   * change itself when it fails: the host ends as it was or fully applied whether or not the
   * controller is still there to see it (cut off, timed out, killed).
   */
  readonly restore?: readonly string[];
  /** What the playbook's steps have the probe after the change read (ProbeOptions.wants). */
  readonly wants?: ReadonlySet<string>;
}

/** What a change that failed and put the host back says, for the controller's message. */
export const SELF_RESTORED_LINE = 'ibfleet: the change failed and put the host back as it was';
/** What a change that failed says before it puts the host back (what follows is the restore's). */
export const SELF_RESTORING_LINE = 'ibfleet: the change failed; putting the host back as it was';

/**
 * The change's own restore, run when it failed (host/sent/self-restore.sh): its exit status stays
 * the failure's. Lines of the change, not one text: the change is joined once (receivedWhole).
 */
function selfRestore(lines: readonly string[]): string[] {
  return [`${sentShell('self-restore')}restore_change() {`, ...lines, '}', 'self_restore'];
}

/**
 * The change: the files written (each step's checks of its staged files first), stale files
 * retired, what the steps do directly in the kernel and tell the network manager — under the
 * routing script's lock, so no hook run interleaves — then the routing script, then what the steps
 * do after it (systemd told about changed units), then the probe again.
 */
export function renderApplyScript(host: Host, fleet: Fleet, plan: ApplyPlan, runId: string = DRY_RUN_ID): string {
  const parts = [...plan.parts.values()];
  const part = (key: 'kernel' | 'manager' | 'after' | 'unlocked') => parts.flatMap((p) => p[key] ?? []);
  const direct = [...part('kernel'), ...part('manager')];
  const unlocked = part('unlocked');
  const block = (lines: readonly string[]) => [
    'if [ "$status" -eq 0 ]; then',
    ...lines.map((l) => `\t${l.replace(/\n(?=.)/g, '\n\t')}`),
    'fi',
  ];
  // The lock is taken before the files, unless a manager is first told something that runs the hook itself.
  const lockFirst = direct.length > 0 && unlocked.length === 0;
  const validations = parts.flatMap((p) => p.validate ?? []);
  const head = [
    `# ibfleet deploy: host ${host.id} (${host.name})`,
    renderPrelude('deploy', runId),
    'status=0',
    'created=',
    ...(lockFirst ? [TAKE_ROUTING_LOCK] : []),
  ];
  const rest = [
    ...plan.remove.map((p) => `retire ${shellQuote(p)} || status=1`),
    ...(unlocked.length ? block(unlocked) : []),
    ...(direct.length ? [...(lockFirst ? [] : [TAKE_ROUTING_LOCK]), ...block(direct), RELEASE_ROUTING_LOCK] : []),
    ...(plan.routingScript === false
      ? []
      : [
          '# Apply now: the routing script sets sysctls, table routes and rules for every fabric NIC.',
          `if [ "$status" -eq 0 ]; then`,
          `\t${ROUTING_SCRIPT_PATH} || status=$?`,
          'fi',
        ]),
    ...part('after'),
    // An empty body would be a shell syntax error: a plan without restore lines has no self-restore.
    ...(plan.restore?.length ? selfRestore(plan.restore) : []),
    afterProbe(host, fleet, plan.wants ? { wants: plan.wants } : {}),
    finishLine(runId),
    'exit "$status"',
  ];
  const files = writeFiles(plan.write, validations);
  // The functions the change needs are those its commands call, not words of the files it writes.
  return hostScript('__ibfleet_apply_main', [...head, ...files.lines, ...rest], [...head, ...files.code, ...rest]);
}

/**
 * Rollback: each step's part taken back, around ibfleet's files, which all go (their last versions
 * kept): what must happen before they go (a timer stopped), after (systemd told), the manager's
 * configuration (before the kernel state: a manager would put the rules back), the kernel state.
 */
export function renderRollbackScript(
  host: Host,
  fleet: Fleet,
  steps: readonly UndoLines[],
  runId: string = DRY_RUN_ID,
): string {
  const part = (key: keyof UndoLines) => steps.flatMap((s) => s[key] ?? []);
  return hostScript('__ibfleet_rollback_main', [
    `# ibfleet rollback: host ${host.id} (${host.name})`,
    renderPrelude('rollback', runId),
    'status=0',
    sentShell('give-back'),
    ...part('beforeFiles'),
    ...OWNED_PATHS.map((p) => `give_back ${shellQuote(p)} || status=1`),
    ...part('afterFiles'),
    ...part('manager'),
    ...part('kernel'),
    ...part('last'),
    ...forgetKept(),
    afterProbe(host, fleet),
    finishLine(runId),
    'exit "$status"',
  ]);
}

const parent = (p: string) => p.replace(/\/[^/]+$/, '');

/**
 * The directories the copies a change keeps live in (change.sh keep), deepest first, PREVIOUS_DIR
 * and REPLACED_DIR last: rmdir-ed in this order, each goes only if empty.
 */
export function keptDirectories(): readonly string[] {
  // The same list for every host (it depends on constants alone), and each deploy's plan asks for it per host.
  kept ??= (() => {
    const dirs = new Set<string>();
    for (const dir of [PREVIOUS_DIR, REPLACED_DIR])
      for (const path of OWNED_PATHS)
        for (let d = parent(path); d !== '' && d !== '/'; d = parent(d)) dirs.add(`${dir}${d}`);
    const deepestFirst = [...dirs].sort((a, b) => b.split('/').length - a.split('/').length || comparePaths(a, b));
    return [...deepestFirst, PREVIOUS_DIR, REPLACED_DIR];
  })();
  return kept;
}

let kept: readonly string[] | undefined;

/**
 * Rollback leaves nothing of ibfleet's: the last versions it kept of its own files go, then the
 * directories under PREVIOUS_DIR and /etc/ibfleet itself, each only if empty — a file someone else
 * put there keeps its directory.
 */
function forgetKept(): string[] {
  const keptCopies = OWNED_PATHS.flatMap((p) => [`${PREVIOUS_DIR}${p}`, `${REPLACED_DIR}${p}`]);
  return [
    "# Nothing of ibfleet's stays: the versions it kept of its own files, then its directories if empty.",
    `rm -f ${keptCopies.map(shellQuote).join(' ')} || status=1`,
    `rmdir ${[...keptDirectories(), parent(ROUTING_SCRIPT_PATH)].map(shellQuote).join(' ')} 2>/dev/null`,
  ];
}
