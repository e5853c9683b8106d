/**
 * After a change was cut off from the controller (the connection lost, its output cut, its shell
 * killed), the change goes on on the host by itself. On a new connection this read-only script
 * waits until that change — known by the run id it carries — has ended, then probes the state it
 * left: ended means FINISHED_PATH holds the id (it ran to its end), or the lock is free while the
 * lock file still names the id (it started and died). A change that has not taken the lock yet
 * (its script still arriving) is waited for too, up to `waitSeconds`. Pure string builder.
 */
import type { Fleet, Host } from '../inventory/model.js';
import { afterProbe, LOCKED_EXIT } from './apply-script.js';
import { FINISHED_PATH, LOCK_PATH } from '../script/paths.js';
import { hostScript } from '../script/host-functions.js';
import { shellQuote } from '../script/shell.js';

export function renderSettleProbe(host: Host, fleet: Fleet, runId: string, waitSeconds: number): string {
  const lock = shellQuote(LOCK_PATH);
  const seconds = Math.max(1, Math.floor(waitSeconds));
  return hostScript(
    '__ibfleet_settle_main',
    [
      `# ibfleet: wait for change ${runId}, cut off from the controller, to end; then probe: host ${host.id} (${host.name})`,
      'set -u',
      'export LC_ALL=C PATH=/usr/sbin:/usr/bin:/sbin:/bin',
      'n=0',
      'while :; do',
      `\tfinished=; read -r finished <${shellQuote(FINISHED_PATH)} 2>/dev/null || true`,
      `\t[ "$finished" = ${runId} ] && break`,
      '\t# A shared lock on a read-only descriptor: granted once no change holds the lock; nothing is created.',
      `\tif [ -f ${lock} ]; then`,
      `\t\texec 9<${lock}`,
      '\t\t# Waits up to a second while a change holds it; free, it names the last change that took it.',
      '\t\tif flock -s -w 1 9; then',
      `\t\t\tholder=; IFS=' ' read -r _ _ _ holder <${lock} || true`,
      `\t\t\tif [ "$holder" = ${runId} ]; then echo "ibfleet: change ${runId} ended before it finished" >&2; break; fi`,
      '\t\t\tsleep 1',
      '\t\tfi',
      '\t\texec 9<&-',
      '\telse',
      '\t\tsleep 1',
      '\tfi',
      '\tn=$((n + 1))',
      `\tif [ "$n" -ge ${seconds} ]; then echo "ibfleet: change ${runId} has not ended after ${seconds} s" >&2; exit ${LOCKED_EXIT}; fi`,
      'done',
      afterProbe(host, fleet),
    ].join('\n'),
  );
}
