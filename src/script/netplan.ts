/**
 * netplan as ibfleet drives it for the files it installs under /etc/netplan (a NIC's routing, a
 * NIC's address): a staged file checked with `netplan generate` in a scratch copy
 * of the host's netplan configuration before it goes live, and a changed configuration handed to
 * systemd-networkd without disturbing the links it does not concern. Pure string builders.
 */
import { shellQuote } from './shell.js';

/** YAML 1.1 words a plain key would be read as (a boolean, null): such ids are quoted. */
const YAML_WORDS = new Set(['y', 'n', 'yes', 'no', 'true', 'false', 'on', 'off', 'null', '~']);

/** A netplan device id as a YAML key: plain where YAML reads it as the id, else quoted. */
export function yamlKey(id: string): string {
  return /^[A-Za-z][A-Za-z0-9_-]*$/.test(id) && !YAML_WORDS.has(id.toLowerCase()) ? id : JSON.stringify(id);
}

/**
 * Before the staged file replaces the live one: `netplan generate` over a copy of the host's
 * netplan configuration with the staged file in its place, in a scratch root, so a file netplan
 * refuses (or that breaks the merge with the host's own files) is never put where the next boot
 * reads it. Sets `status` when netplan refuses.
 */
export function renderNetplanCheck(staged: string, path: string): string[] {
  const name = path.slice(path.lastIndexOf('/') + 1);
  return [
    'if [ "$status" -eq 0 ]; then',
    '\t# netplan generate over a scratch copy of the netplan configuration with the new file in place.',
    '\tcheck=$(mktemp -d) || status=1',
    '\tif [ "$status" -eq 0 ]; then',
    '\t\tfor d in lib etc run; do',
    '\t\t\tmkdir -p "$check/$d/netplan"',
    '\t\t\tfor f in "/$d/netplan/"*.yaml; do [ -f "$f" ] && cp -p "$f" "$check/$d/netplan/"; done',
    '\t\tdone',
    `\t\tcp -p ${staged} "$check/etc/netplan/${name}" || status=1`,
    // netplan's own words on one line, as a manager's failing command is quoted (links.sh tell).
    `\t\tif [ "$status" -eq 0 ] && ! check_out=$(netplan generate --root-dir "$check" 2>&1); then`,
    `\t\t\tprintf 'ibfleet: %s failed; nothing was changed: %s\\n' ${shellQuote(`netplan generate with ${path} among this host's netplan files`)} "$(printf '%s' "$check_out" | tr -s '\\n\\t' '  ')" >&2`,
    '\t\t\tstatus=1',
    '\t\tfi',
    '\t\trm -rf "$check"',
    '\tfi',
    'fi',
  ];
}

/**
 * networkd takes a changed configuration as `netplan apply` gives it to networkd: `netplan generate`
 * (the netplan files → /run/systemd/network), `networkctl reload` (reads it; links whose
 * configuration changed are configured again), `networkctl reconfigure` of the fabric NICs. Only
 * the fabric NICs are reconfigured, where `netplan apply` reconfigures every link networkd manages
 * (the management link too). Without `networkctl reload` (systemd before 244, e.g. Ubuntu 18.04),
 * `netplan apply` itself, which restarts networkd there.
 */
export function renderNetplanApply(reload: boolean, ifaces: readonly string[]): string[] {
  const nics = ifaces.map(shellQuote).join(' ');
  const lines: string[] = [];
  if (reload) {
    lines.push(
      '# netplan: the configuration regenerated and reloaded into systemd-networkd.',
      'if ! netplan generate; then',
      `\techo 'ibfleet: netplan generate failed' >&2`,
      '\tstatus=1',
      'elif networkctl reload 2>/dev/null; then',
      `\tnetworkctl reconfigure ${nics} || status=1`,
      'else',
      '\tnetplan apply || status=1',
      'fi',
    );
  } else if (ifaces.length) {
    lines.push(
      '# netplan: systemd-networkd configures the NICs again from its (unchanged) configuration;',
      '# systemd before 244 (Ubuntu 18.04: 237) has no networkctl reconfigure: netplan apply there.',
      "if networkctl --help 2>/dev/null | grep -q '^ *reconfigure '; then",
      `\tnetworkctl reconfigure ${nics} || status=1`,
      'else',
      '\tnetplan apply || status=1',
      'fi',
    );
  }
  return lines;
}
