/**
 * The scripts deploy and rollback send to a host, each run in one SSH channel: take the host lock,
 * make the change, then print the probe sections again so verification reads the state the change
 * left. Files travel inside the script as single-quoted printf words (byte-exact) and are written
 * atomically: staged next to their directory, then renamed over the old file, whose previous
 * version is kept non-executable under PREVIOUS_DIR. Pure string builders.
 */
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
import { writeFiles } from './write-files.js';

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
