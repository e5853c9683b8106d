/**
 * Another run's hold on a lab host's routing lock, for the e2e tests of runs that queue on it.
 *
 * The hold ends when the test says so, never after a fixed time: a test lets go only once the runs
 * it started are seen waiting on the host (their `flock -w` is running there), however slowly a
 * loaded machine starts them. A fixed sleep would let a slow run arrive after the lock was free.
 */
import { labExec } from '../../src/lab/index.js';
import { hostProcesses, waitUntil } from '../../src/lab/processes.js';
import { LOCK_DIR, LOCK_PATH } from '../../src/script/paths.js';

const RELEASE_FLAG = '/run/ibfleet-test-release';

export interface HostLockHold {
  /** Settles once the holder has let go (and run `thenRun`). */
  readonly done: Promise<unknown>;
  /** Lets go: the holder runs `thenRun` under the lock, then drops it. */
  readonly release: () => Promise<unknown>;
}

/**
 * Takes the lock on host `id` of lab `lab` as another run would and holds it until `release()`
 * (at most 90 s). `thenRun`, a shell command, runs under the lock just before it is dropped: the
 * other run's change, as the host sees it (no single quotes in it). Resolves once the lock is taken.
 */
export async function holdHostLock(lab: string, id: number, thenRun = 'true'): Promise<HostLockHold> {
  const wait = `i=0; while [ ! -e ${RELEASE_FLAG} ] && [ $i -lt 900 ]; do sleep 0.1; i=$((i + 1)); done; rm -f ${RELEASE_FLAG}; ${thenRun}`;
  const done = labExec(lab, id, [
    'sh',
    '-c',
    `rm -f ${RELEASE_FLAG}; mkdir -p -m 0700 ${LOCK_DIR}; exec flock ${LOCK_PATH} sh -c '${wait}'`,
  ]);
  const release = () => labExec(lab, id, ['sh', '-c', `touch ${RELEASE_FLAG}`]);
  try {
    await lockTaken(lab, id);
  } catch (error) {
    await release();
    await done;
    throw error;
  }
  return { done, release };
}

/** Until `count` runs wait for the lock on a host (their `flock -w` is running there); at most 60 s. */
export async function runsQueued(lab: string, id: number, count: number): Promise<void> {
  const queued = async () =>
    (await hostProcesses(lab, id)).filter((p) => p.command.startsWith('flock -w ')).length >= count;
  if (!(await waitUntil(queued, 60_000, 100))) throw new Error(`${count} run(s) never queued on host ${id}'s lock`);
}

/** Until the lock on a host is taken (a non-blocking flock there fails); at most 10 s. */
export async function lockTaken(lab: string, id: number): Promise<void> {
  const taken = async () =>
    (await labExec(lab, id, ['sh', '-c', `[ -e ${LOCK_PATH} ] && flock -n ${LOCK_PATH} true`])).code === 1;
  if (!(await waitUntil(taken, 10_000, 100))) throw new Error(`the lock on host ${id} was never taken`);
}
