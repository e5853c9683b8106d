/**
 * What the persist step's `monitor` adds: drift between ibfleet runs made visible to the tools HPC
 * sites already watch nodes with.
 *
 * - `prometheus`: every run of the routing script that is not a check (a deploy, a hook, the repair
 *   timer) writes node_exporter's textfile — per NIC whether that run found it as deployed, the
 *   time of the run, the repairs since boot, the version and playbook — whole, under a name the
 *   collector ignores, then renamed (a scrape never reads half a file). Debian's
 *   prometheus-node-exporter reads /var/lib/prometheus/node-exporter/*.prom.
 * - `nhc`: an LBNL NHC check file defining check_ibfleet_routing, which runs the routing script's
 *   --check and fails through NHC's `die` with the first reason, so Slurm's HealthCheckProgram
 *   drains a node whose routing is broken.
 *
 * Status reports the NHC file missing or edited (it is one of ibfleet's files) and the textfile
 * missing; rollback removes both. Pure.
 */
import type { Fact } from '../../facts/fact.js';
import { factOf, type HostFacts } from '../../facts/host-facts.js';
import type { Host } from '../../inventory/model.js';
import { renderHeader } from '../../script/header.js';
import { hostFile } from '../../script/host-templates.js';
import { ROUTING_SCRIPT_PATH } from '../../script/paths.js';
import type { RenderedFile } from '../../script/rendered-file.js';
import { shellQuote } from '../../script/shell.js';
import { change, type Finding } from '../step.js';

export const MONITORS = ['prometheus', 'nhc'] as const;
export type Monitor = (typeof MONITORS)[number];

/** Debian's prometheus-node-exporter reads its textfile collector's *.prom files here. */
export const TEXTFILE_DIR = '/var/lib/prometheus/node-exporter';
export const TEXTFILE_PATH = `${TEXTFILE_DIR}/ibfleet.prom`;
/** NHC sources every *.nhc file of its scripts directory. */
export const NHC_PATH = '/etc/nhc/scripts/ibfleet.nhc';

/** What status and --check say, one phrase each, so both say it alike. */
export const MONITOR_WORDS = {
  textfileMissing: `node_exporter textfile ${TEXTFILE_PATH} is missing (every run of the routing script writes it)`,
  dirMissing: `node_exporter's textfile directory ${TEXTFILE_DIR} is missing: is prometheus-node-exporter installed?`,
  dirUnsafe: `node_exporter's textfile directory ${TEXTFILE_DIR} is a link, or not root's alone (owned by another user, or group- or world-writable): anyone who can write there can make root write through a link they plant, so ibfleet writes no textfile into it; make it a directory of root's, mode 0755`,
  textfileNotOurs: `node_exporter textfile ${TEXTFILE_PATH} is not a regular file of root's`,
} as const;

/** What the probe saw at node_exporter's textfile directory and ibfleet's textfile: type, owner, mode (stat, which follows no link). */
export interface MonitorFact {
  readonly dir: boolean;
  readonly textfile: boolean;
  /** The directory is a link, not root's, or group- or world-writable: the routing script writes nothing into it. */
  readonly dirUnsafe: boolean;
  /** What is at the textfile's path when it is not a regular file of root's ("a symbolic link of uid 1001"). */
  readonly textfileOther: string | undefined;
}

/**
 * The probe's want (ProbeOptions.wants) for the textfile directory's and the textfile's owner, mode
 * and type: only a playbook that monitors with prometheus reads them (monitorPrerequisite,
 * textfileFinding), so only its hosts' probes pay the `stat`.
 */
export const TEXTFILE_STAT = 'textfile-stat';

/**
 * Whether the directory and the textfile are there, with the shell's own tests; `stat` only where
 * the playbook monitors with prometheus (TEXTFILE_STAT) and the directory is there: a process costs
 * every host on every probe, and most hosts have no node_exporter.
 */
export const MONITOR_FACT: Fact<MonitorFact> = {
  name: 'monitor',
  probe: (_host, options) => [
    `\ts monitor; if [ -d ${TEXTFILE_DIR} ]; then echo dir; [ ! -e ${TEXTFILE_PATH} ] && [ ! -L ${TEXTFILE_PATH} ] || echo textfile;${options.wants?.has(TEXTFILE_STAT) === true ? ` stat -c '%u %a %F|%n' -- ${TEXTFILE_DIR} ${TEXTFILE_PATH} 2>/dev/null;` : ''} fi`,
  ],
  parse: (sections) => {
    const lines = (sections.get('monitor') ?? []).map((l) => l.trim());
    const stats = new Map(
      lines.flatMap((l) => {
        const m = /^(\d+) ([0-7]+) ([^|]+)\|(.*)$/.exec(l);
        return m ? [[m[4]!, { uid: Number(m[1]), mode: parseInt(m[2]!, 8), type: m[3]! }] as const] : [];
      }),
    );
    const dir = stats.get(TEXTFILE_DIR);
    const file = stats.get(TEXTFILE_PATH);
    const fileOurs = file !== undefined && file.type === 'regular file' && file.uid === 0;
    return {
      dir: lines.includes('dir'),
      textfile: lines.includes('textfile'),
      dirUnsafe: dir !== undefined && (dir.type !== 'directory' || dir.uid !== 0 || (dir.mode & 0o022) !== 0),
      textfileOther: file === undefined || fileOurs ? undefined : `a ${file.type} of uid ${file.uid}`,
    };
  },
};

/** host/files/ibfleet.nhc: NHC's check, which fails with the routing script's first reason. */
function renderNhcCheck(host: Host, playbook: string): string {
  return hostFile('ibfleet.nhc', {
    HEADER: renderHeader(host, playbook, NHC_PATH).split('\n'),
    ROUTING_SCRIPT: ROUTING_SCRIPT_PATH,
    HOST_ID: String(host.id),
  });
}

export function monitorFiles(host: Host, playbook: string, monitors: readonly Monitor[]): RenderedFile[] {
  if (!monitors.includes('nhc')) return [];
  return [
    {
      path: NHC_PATH,
      mode: 0o644,
      content: renderNhcCheck(host, playbook),
      role: 'monitor',
      kind: 'monitor',
      label: `NHC check ${NHC_PATH}`,
    },
  ];
}

/** What the host must have for the monitor to mean anything: node_exporter's textfile directory, root's alone. */
export function monitorPrerequisite(facts: HostFacts, monitors: readonly Monitor[]): string | undefined {
  if (!monitors.includes('prometheus')) return undefined;
  const found = factOf(facts, MONITOR_FACT);
  if (!found.dir)
    return `monitor: prometheus writes node_exporter's textfile into ${TEXTFILE_DIR}, which this host does not have: install prometheus-node-exporter, or drop prometheus from the persist step's monitor`;
  return found.dirUnsafe ? `monitor: prometheus: ${MONITOR_WORDS.dirUnsafe}` : undefined;
}

/** The textfile as status sees it: its directory there and root's alone, the file there and a regular file of root's. */
function textfileFinding(found: MonitorFact): Finding {
  const subject = { kind: 'host', aspect: 'textfile' } as const;
  const install = change('monitor', 'install', TEXTFILE_PATH, `write ${TEXTFILE_PATH} (the routing script's run does)`);
  if (!found.dir) return { id: 'textfile', subject, ok: false, detail: MONITOR_WORDS.dirMissing, fix: undefined };
  // Not deploy's to mend: whoever made the directory so decides; the plan refuses the host meanwhile.
  if (found.dirUnsafe) return { id: 'textfile', subject, ok: false, detail: MONITOR_WORDS.dirUnsafe, fix: undefined };
  if (found.textfileOther)
    return {
      id: 'textfile',
      subject,
      ok: false,
      detail: `${MONITOR_WORDS.textfileNotOurs}: it is ${found.textfileOther}`,
      fix: install,
    };
  if (!found.textfile)
    return { id: 'textfile', subject, ok: false, detail: MONITOR_WORDS.textfileMissing, fix: install };
  return { id: 'textfile', subject, ok: true, detail: `node_exporter textfile ${TEXTFILE_PATH} written`, fix: install };
}

/** The textfile, and what a monitor the playbook no longer names left behind. */
export function monitorFindings(facts: HostFacts, monitors: readonly Monitor[], scripted: boolean): Finding[] {
  const found = factOf(facts, MONITOR_FACT);
  const findings: Finding[] = [];
  const wanted = scripted && monitors.includes('prometheus');
  if (wanted) {
    findings.push(textfileFinding(found));
  } else if (found.textfile) {
    findings.push({
      id: 'stale textfile',
      subject: { kind: 'host', aspect: 'stale textfile' },
      ok: false,
      detail: `stale ${TEXTFILE_PATH} (the playbook monitors no more with prometheus)`,
      fix: change('monitor', 'remove', TEXTFILE_PATH, `remove ${TEXTFILE_PATH}`),
    });
  }
  if (!(scripted && monitors.includes('nhc')) && facts.files.has(NHC_PATH)) {
    findings.push({
      id: `stale ${NHC_PATH}`,
      subject: { kind: 'stale', path: NHC_PATH },
      ok: false,
      detail: `stale ${NHC_PATH} (the playbook has no NHC check)`,
      fix: change('monitor', 'remove', NHC_PATH, `remove ${NHC_PATH}`),
    });
  }
  return findings;
}

/** A deploy takes away a textfile the playbook no longer asks for (the NHC file goes as ibfleet's files go). */
export function monitorApply(failing: readonly Finding[]): string[] {
  const stale = failing.some((f) => f.subject.kind === 'host' && f.subject.aspect === 'stale textfile');
  return stale
    ? [
        `if rm -f ${shellQuote(TEXTFILE_PATH)}; then echo ${shellQuote(`ibfleet: removed ${TEXTFILE_PATH}`)}; else status=1; fi`,
      ]
    : [];
}

/** Rollback: the textfile goes with ibfleet's files. */
export const REMOVE_TEXTFILE = `[ ! -f ${shellQuote(TEXTFILE_PATH)} ] && [ ! -L ${shellQuote(TEXTFILE_PATH)} ] || rm -f ${shellQuote(TEXTFILE_PATH)} || status=1`;

/** What render says a monitor does besides its files. */
export function monitorNotes(monitors: readonly Monitor[]): string[] {
  return monitors.includes('prometheus')
    ? [
        `monitor prometheus: every run of the routing script (deploy, hooks, repair timer) writes ${TEXTFILE_PATH} for node_exporter's textfile collector: ibfleet_nic_ok{iface,nic}, ibfleet_last_check_timestamp_seconds, ibfleet_repairs_total, ibfleet_info`,
      ]
    : [];
}
