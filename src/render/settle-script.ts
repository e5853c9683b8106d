/**
 * After a change was cut off from the controller (the connection lost, its output cut, its shell
 * killed), the change goes on on the host by itself. On a new connection this read-only script
 * waits until that change — known by the run id it carries — has ended, then probes the state it
 * left: ended means FINISHED_PATH holds the id (it ran to its end), or the lock is free while the
 * lock file still names the id (it started and died). A change that has not taken the lock yet
 * (its script still arriving) is waited for too, up to `waitSeconds`. The waiting is
 * host/sent/settle.sh's settle_wait; this passes it the run id and the seconds. Its probe is whole:
 * what it reads is all the run knows of the host once the change was cut off.
 */
import type { Fleet, Host } from '../inventory/model.js';
import { afterProbe } from './apply-script.js';
import { hostScript } from '../script/host-functions.js';
import { sentShell } from '../script/sent-shell.js';
import { shellQuote } from '../script/shell.js';

export function renderSettleProbe(
  host: Host,
  fleet: Fleet,
  runId: string,
  waitSeconds: number,
  wants?: ReadonlySet<string>,
): string {
  return hostScript(
    '__ibfleet_settle_main',
    `# ibfleet: wait for change ${runId}, cut off from the controller, to end; then probe: host ${host.id} (${host.name})
set -u
export LC_ALL=C PATH=/usr/sbin:/usr/bin:/sbin:/bin
${sentShell('settle')}settle_wait ${shellQuote(runId)} ${Math.max(1, Math.floor(waitSeconds))}
${afterProbe(host, fleet, { whole: true, ...(wants ? { wants } : {}) })}`,
  );
}
