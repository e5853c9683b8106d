/**
 * Where ibfleet keeps what is its own on a host, whatever the playbook: the routing script, the
 * previous versions of replaced files, the locks. Everything it installs lives under /etc, so
 * etckeeper tracks it; the steps name their own files (src/steps/).
 */

export const ROUTING_SCRIPT_PATH = '/etc/ibfleet/ibfleet-routes';
/** Previous versions of replaced files, kept non-executable so no dispatcher ever runs them. */
export const PREVIOUS_DIR = '/etc/ibfleet/previous';
/**
 * An admin's symbolic link that a deploy replaced with ibfleet's file, kept as the link until
 * rollback puts it back. ibfleet writes only regular files, so a link at one of its paths is never
 * its own; unlike PREVIOUS_DIR, a later deploy never overwrites the record with ibfleet's version.
 */
export const REPLACED_DIR = '/etc/ibfleet/replaced';
/**
 * The host lock (one per host: two changes never run at once). It lives in a directory only root
 * can create or enter — not the world-writable /run/lock, where any local user could create and
 * hold the file and so block every deploy.
 */
export const LOCK_DIR = '/run/ibfleet';
export const LOCK_PATH = `${LOCK_DIR}/lock`;
/** The routing script's own lock: its runs (hooks, the repair timer, a deploy) take turns. */
export const ROUTES_LOCK_PATH = `${LOCK_DIR}/routes.lock`;
/** The run id of the last change that ran to its end; the lock file names the one holding it. */
export const FINISHED_PATH = `${LOCK_DIR}/finished`;
/** The line prefix the routing script says everything with (deploy shows the host's stage by it). */
export const ROUTING_SCRIPT_SAYS = 'ibfleet-routes:';
/** The routing program's per-host data, beside it (host/ibfleet-routes reads it from its own directory). */
export const ROUTES_DATA_PATH = '/etc/ibfleet/routes.conf';
