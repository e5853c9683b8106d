/**
 * The probe's `nm` section → what NetworkManager says about the fabric NICs:
 * its version, each NIC's active connection profile and that profile's routing properties. Pure.
 */
import type { Host } from '../inventory/model.js';
import { shellQuote } from '../script/shell.js';

export interface NmProfile {
  readonly uuid: string;
  /** connection.id: the name `nmcli connection show` lists. */
  readonly name: string;
  /** ipv4.route-table as nmcli prints it ('0': the main table, NetworkManager's default). */
  readonly routeTable: string;
  /** ipv4.routing-rules, one entry per rule, as NetworkManager prints them back. */
  readonly rules: readonly string[];
}

export interface NmFacts {
  /** The running daemon's version (`nmcli general`), e.g. `1.42.4`. */
  readonly version: string;
  /** Fabric interface → uuid of its active connection; a NIC without one is absent. */
  readonly active: ReadonlyMap<string, string>;
  /** uuid → the profile's routing properties. */
  readonly profiles: ReadonlyMap<string, NmProfile>;
}

/** `nmcli -t` escapes `:` and `\` in values with a backslash. */
export function unescapeTerse(value: string): string {
  return value.replace(/\\(.)/g, '$1');
}

/** ipv4.routing-rules as nmcli prints a list: entries joined by ", ". */
export function splitNmRules(value: string): string[] {
  return value
    .split(/,\s*/)
    .map((r) => r.trim())
    .filter(Boolean);
}

/** Undefined when NetworkManager did not answer (not installed, not running). */
export function parseNmSection(lines: readonly string[]): NmFacts | undefined {
  let version: string | undefined;
  const active = new Map<string, string>();
  const profiles = new Map<string, NmProfile>();
  let current: { uuid: string; name: string; routeTable: string; rules: string[] } | undefined;
  const finish = () => {
    if (current?.uuid) profiles.set(current.uuid, current);
    current = undefined;
  };
  for (const line of lines) {
    const general = /^general (?:running|starting|stopped|[a-z-]+):(\S+)\s*$/.exec(line);
    const act = /^active (\S+) (\S+)$/.exec(line);
    const prop = /^(connection\.uuid|connection\.id|ipv4\.route-table|ipv4\.routing-rules):(.*)$/.exec(line);
    if (general) version = general[1]!;
    else if (act) active.set(act[1]!, act[2]!);
    else if (prop) {
      const [, key, raw] = prop as unknown as [string, string, string];
      const value = unescapeTerse(raw);
      if (key === 'connection.uuid') {
        finish();
        current = { uuid: value.trim(), name: '', routeTable: '0', rules: [] };
      } else if (current) {
        if (key === 'connection.id') current.name = value;
        else if (key === 'ipv4.route-table') current.routeTable = value.trim() || '0';
        else current.rules = splitNmRules(value);
      }
    }
  }
  finish();
  return version === undefined ? undefined : { version, active, profiles };
}

/** `1.42.4` ≥ `1.18`? Compared number by number; a version that is not numbers is not. */
export function versionAtLeast(version: string, minimum: string): boolean {
  const have = version.split(/[.-]/).map((p) => Number.parseInt(p, 10));
  const want = minimum.split('.').map(Number);
  for (let i = 0; i < want.length; i++) {
    const h = have[i];
    if (h === undefined || Number.isNaN(h)) return false;
    if (h !== want[i]) return h > want[i]!;
  }
  return true;
}

/** A routing rule as text that compares equal however NetworkManager or a person spaced it. */
export function normalizeNmRule(rule: string): string {
  return rule
    .trim()
    .replace(/\s+/g, ' ')
    .replace(/ from (\d+\.\d+\.\d+\.\d+)\/32\b/, ' from $1');
}

/**
 * The probe's `nm` section, where NetworkManager runs: `general running:<version>` (the daemon's
 * own version, over D-Bus), `active <iface> <uuid>` for each fabric NIC with an active connection,
 * then `nmcli -t` of each such profile's uuid, id, route-table and routing-rules. Three nmcli runs
 * at most, and none on hosts without NetworkManager.
 */
export function renderNmProbe(host: Host): string[] {
  const ifaces = host.nics.map((n) => shellQuote(n.iface)).join(' | ');
  return [
    '\ts nm',
    '\tif [ -d /run/NetworkManager ] && command -v nmcli >/dev/null 2>&1; then',
    '\t\tv=$(nmcli -t -f RUNNING,VERSION general 2>/dev/null) && echo "general $v"',
    '\t\tset --',
    '\t\ta=$(nmcli -t -f DEVICE,UUID connection show --active 2>/dev/null)',
    '\t\twhile IFS=: read -r d u; do',
    `\t\t\tcase $d in ${ifaces}) echo "active $d $u"; set -- "$@" uuid "$u" ;; esac`,
    '\t\tdone <<IBFLEET_NM',
    '$a',
    'IBFLEET_NM',
    '\t\t[ "$#" -eq 0 ] || nmcli -t -f connection.uuid,connection.id,ipv4.route-table,ipv4.routing-rules connection show "$@" 2>/dev/null',
    '\tfi',
  ];
}
