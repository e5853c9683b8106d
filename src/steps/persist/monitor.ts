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
import { ROUTING_SCRIPT_PATH } from '../../script/paths.js';
import type { RenderedFile } from '../../script/rendered-file.js';
import { shellQuote } from '../../script/shell.js';
import { VERSION } from '../../version.js';
import { change, type Finding, type ScriptPart } from '../step.js';

export const MONITORS = ['prometheus', 'nhc'] as const;
export type Monitor = (typeof MONITORS)[number];

/** Debian's prometheus-node-exporter reads its textfile collector's *.prom files here. */
export const TEXTFILE_DIR = '/var/lib/prometheus/node-exporter';
export const TEXTFILE_PATH = `${TEXTFILE_DIR}/ibfleet.prom`;
/** NHC sources every *.nhc file of its scripts directory. */
export const NHC_PATH = '/etc/nhc/scripts/ibfleet.nhc';
/** Repairs since boot: /run is emptied at every boot. */
const REPAIRS_PATH = '/run/ibfleet/repairs';

/** What status and --check say, one phrase each, so both say it alike. */
export const MONITOR_WORDS = {
  textfileMissing: `node_exporter textfile ${TEXTFILE_PATH} is missing (every run of the routing script writes it)`,
  dirMissing: `node_exporter's textfile directory ${TEXTFILE_DIR} is missing: is prometheus-node-exporter installed?`,
} as const;

/** Whether the host has node_exporter's textfile directory, and ibfleet's textfile in it. */
export const MONITOR_FACT: Fact<{ readonly dir: boolean; readonly textfile: boolean }> = {
  name: 'monitor',
  probe: () => [`\ts monitor; [ ! -d ${TEXTFILE_DIR} ] || echo dir; [ ! -f ${TEXTFILE_PATH} ] || echo textfile`],
  parse: (sections) => {
    const lines = (sections.get('monitor') ?? []).map((l) => l.trim());
    return { dir: lines.includes('dir'), textfile: lines.includes('textfile') };
  },
};

/** A label value in the exposition format: backslash, double quote and line feed escaped. */
function labelValue(text: string): string {
  return text.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

/** Metric families, with HELP and TYPE lines as the text exposition format wants them. */
function family(name: string, type: 'gauge' | 'counter', help: string): string[] {
  return [`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`];
}

/** The lines that print the textfile: each sample's value is the shell's (`was_ok IFACE`, `$now`, `$repairs`). */
function textfileLines(host: Host, playbook: string): string[] {
  const sample = (metric: string, value: string) => `printf '%s %s\\n' ${shellQuote(metric)} "${value}"`;
  const text = (line: string) => `printf '%s\\n' ${shellQuote(line)}`;
  const lines = [
    ...family('ibfleet_nic_ok', 'gauge', "1 when the last run of ibfleet's routing script found the NIC's rule, table route, main-table route and sysctls as deployed; 0 when it found drift (which it repaired: see ibfleet_repairs_total) or the NIC not up with its address.").map(text),
    ...host.nics.map((n) => sample(`ibfleet_nic_ok{iface="${labelValue(n.iface)}",nic="${n.index}"}`, `$(was_ok ${shellQuote(n.iface)})`)),
    ...family('ibfleet_last_check_timestamp_seconds', 'gauge', "Unix time of the last run of ibfleet's routing script (a deploy, a hook or the repair timer).").map(text),
    sample('ibfleet_last_check_timestamp_seconds', '$now'),
    ...family('ibfleet_repairs_total', 'counter', "Runs of ibfleet's hooks and repair timer since boot that found something to repair.").map(text),
    sample('ibfleet_repairs_total', '$repairs'),
    ...family('ibfleet_info', 'gauge', "The ibfleet version and playbook that rendered this host's routing script.").map(text),
    text(`ibfleet_info{version="${labelValue(VERSION)}",playbook="${labelValue(playbook)}"} 1`),
  ];
  return lines.map((l) => `\t\t${l}`);
}

/**
 * After the NICs, on every run that is not a check and looked at every NIC: the repairs counted
 * (a hook's or the timer's run that changed something), then the textfile written whole and renamed.
 * A host without the directory (node_exporter not installed) gets nothing: status says why.
 */
function textfileWriter(host: Host, playbook: string): string {
  const dir = shellQuote(TEXTFILE_DIR);
  return `# node_exporter's textfile collector: what this run found, written whole under a name the collector
# ignores (not *.prom), then renamed, so a scrape never reads half a file.
if [ "$NAMED" -eq 0 ] && [ -d ${dir} ]; then
	repairs=0
	[ ! -r ${REPAIRS_PATH} ] || read -r repairs <${REPAIRS_PATH} || repairs=0
	case $repairs in '' | *[!0-9]*) repairs=0 ;; esac
	if [ "$UP_ONLY" -eq 1 ] && [ "$changed" -eq 1 ]; then
		repairs=$((repairs + 1))
		{ [ -d /run/ibfleet ] || mkdir -m 0700 /run/ibfleet; } && printf '%s\\n' "$repairs" >${REPAIRS_PATH}
	fi
	now=$(date +%s)
	tmp=${shellQuote(`${TEXTFILE_DIR}/.ibfleet.prom.`)}$$
	if {
${textfileLines(host, playbook).join('\n')}
	} >"$tmp" && chmod 0644 "$tmp" && mv -fT "$tmp" ${shellQuote(TEXTFILE_PATH)}; then
		:
	else
		rm -f "$tmp"
		say "cannot write ${TEXTFILE_PATH}"
	fi
fi`;
}

/** Under --check: the textfile a run writes is there (its content changes every run: only its presence is ibfleet's to check). */
const TEXTFILE_CHECK = `if [ ! -d ${shellQuote(TEXTFILE_DIR)} ]; then
	drift ${shellQuote(MONITOR_WORDS.dirMissing)}
elif [ ! -f ${shellQuote(TEXTFILE_PATH)} ]; then
	drift ${shellQuote(MONITOR_WORDS.textfileMissing)}
fi`;

export function monitorScript(host: Host, playbook: string, monitors: readonly Monitor[]): ScriptPart {
  if (!monitors.includes('prometheus')) return {};
  return { afterNics: [textfileWriter(host, playbook)], checks: [TEXTFILE_CHECK] };
}

function renderNhcCheck(host: Host, playbook: string): string {
  return `${renderHeader(host, playbook, NHC_PATH)}
#
# NHC -- ibfleet: this node's per-NIC policy routing is as deployed.
#
# LBNL NHC sources every *.nhc file in its scripts directory; a line in nhc.conf runs the check:
#   * || check_ibfleet_routing
# It runs the check mode of ibfleet's routing script (${ROUTING_SCRIPT_PATH} --check, which changes
# nothing) and fails through NHC's die with the first reason it gives, e.g.
#   check_ibfleet_routing:  ib1: rule from 172.16.${host.id}.2 is missing
# so that Slurm's HealthCheckProgram drains the node; ibfleet's hooks and repair timer put the
# routing back, and the next check that passes lets NHC bring the node back.

# shellcheck shell=bash
# (sourced by NHC's bash, never run on its own: no #! line)

function check_ibfleet_routing() {
    local IBFLEET_OUT IBFLEET_RC IBFLEET_FIRST

    if [[ ! -x ${ROUTING_SCRIPT_PATH} ]]; then
        die 1 "\${FUNCNAME[0]}:  ${ROUTING_SCRIPT_PATH} is missing (ibfleet deploy installs it)"
        return 1
    fi
    IBFLEET_OUT=$(${ROUTING_SCRIPT_PATH} --check 2>&1)
    IBFLEET_RC=$?
    if [[ $IBFLEET_RC -ne 0 ]]; then
        IBFLEET_FIRST="\${IBFLEET_OUT%%$'\\n'*}"
        die 1 "\${FUNCNAME[0]}:  \${IBFLEET_FIRST:-${ROUTING_SCRIPT_PATH} --check exited $IBFLEET_RC}"
        return 1
    fi
    return 0
}
`;
}

export function monitorFiles(host: Host, playbook: string, monitors: readonly Monitor[]): RenderedFile[] {
  if (!monitors.includes('nhc')) return [];
  return [{ path: NHC_PATH, mode: 0o644, content: renderNhcCheck(host, playbook), role: 'monitor', kind: 'monitor', label: `NHC check ${NHC_PATH}` }];
}

/** What the host must have for the monitor to mean anything: node_exporter's textfile directory. */
export function monitorPrerequisite(facts: HostFacts, monitors: readonly Monitor[]): string | undefined {
  if (!monitors.includes('prometheus') || factOf(facts, MONITOR_FACT).dir) return undefined;
  return `monitor: prometheus writes node_exporter's textfile into ${TEXTFILE_DIR}, which this host does not have: install prometheus-node-exporter, or drop prometheus from the persist step's monitor`;
}

/** The textfile, and what a monitor the playbook no longer names left behind. */
export function monitorFindings(facts: HostFacts, monitors: readonly Monitor[], scripted: boolean): Finding[] {
  const found = factOf(facts, MONITOR_FACT);
  const findings: Finding[] = [];
  const wanted = scripted && monitors.includes('prometheus');
  if (wanted) {
    const detail = !found.dir ? MONITOR_WORDS.dirMissing : found.textfile ? `node_exporter textfile ${TEXTFILE_PATH} written` : MONITOR_WORDS.textfileMissing;
    findings.push({ id: 'textfile', subject: { kind: 'host', aspect: 'textfile' }, ok: found.dir && found.textfile, detail, fix: found.dir ? change('monitor', 'install', TEXTFILE_PATH, `write ${TEXTFILE_PATH} (the routing script's run does)`) : undefined });
  } else if (found.textfile) {
    findings.push({ id: 'stale textfile', subject: { kind: 'host', aspect: 'stale textfile' }, ok: false, detail: `stale ${TEXTFILE_PATH} (the playbook monitors no more with prometheus)`, fix: change('monitor', 'remove', TEXTFILE_PATH, `remove ${TEXTFILE_PATH}`) });
  }
  if (!(scripted && monitors.includes('nhc')) && facts.files.has(NHC_PATH)) {
    findings.push({ id: `stale ${NHC_PATH}`, subject: { kind: 'stale', path: NHC_PATH }, ok: false, detail: `stale ${NHC_PATH} (the playbook has no NHC check)`, fix: change('monitor', 'remove', NHC_PATH, `remove ${NHC_PATH}`) });
  }
  return findings;
}

/** A deploy takes away a textfile the playbook no longer asks for (the NHC file goes as ibfleet's files go). */
export function monitorApply(failing: readonly Finding[]): string[] {
  const stale = failing.some((f) => f.subject.kind === 'host' && f.subject.aspect === 'stale textfile');
  return stale ? [`if rm -f ${shellQuote(TEXTFILE_PATH)}; then echo ${shellQuote(`ibfleet: removed ${TEXTFILE_PATH}`)}; else status=1; fi`] : [];
}

/** Rollback: the textfile goes with ibfleet's files. */
export const REMOVE_TEXTFILE = `[ ! -f ${shellQuote(TEXTFILE_PATH)} ] || rm -f ${shellQuote(TEXTFILE_PATH)} || status=1`;

/** What render says a monitor does besides its files. */
export function monitorNotes(monitors: readonly Monitor[]): string[] {
  return monitors.includes('prometheus')
    ? [`monitor prometheus: every run of the routing script (deploy, hooks, repair timer) writes ${TEXTFILE_PATH} for node_exporter's textfile collector: ibfleet_nic_ok{iface,nic}, ibfleet_last_check_timestamp_seconds, ibfleet_repairs_total, ibfleet_info`]
    : [];
}
