/**
 * The routing script's runs take turns on their own lock (see the routing script). A change that
 * tells a manager something holds that lock too: a hook or repair-timer run under way ends first, and
 * one an event of this change starts waits until the change has made the state it wants (then finds
 * nothing to do). The change script runs under the host lock, so its directory is there. Pure.
 */
import { LOCK_DIR, ROUTES_LOCK_PATH } from '../script/paths.js';
import { shellQuote } from '../script/shell.js';

export const TAKE_ROUTING_LOCK = `if command -v flock >/dev/null 2>&1 && [ -d ${shellQuote(LOCK_DIR)} ] && [ -w ${shellQuote(LOCK_DIR)} ]; then exec 7>>${shellQuote(ROUTES_LOCK_PATH)}; flock -w 30 7 || echo ${shellQuote(`ibfleet: a routing script run still holds ${ROUTES_LOCK_PATH} after 30 s; going on`)} >&2; fi`;
export const RELEASE_ROUTING_LOCK = 'exec 7>&-';
