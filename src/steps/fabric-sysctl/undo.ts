/**
 * Taking fabric-sysctl back: rollback sets each fabric NIC's settings to the kernel's defaults for
 * a new interface (conf/default); the restore after a failed verification sets back the values the
 * probe before the change read. Pure.
 */
import { factOf } from '../../facts/host-facts.js';
import { shellQuote } from '../../script/shell.js';
import { change, type Finding, type Restore, type Undo, type FactsContext } from '../step.js';
import { SYSCTL_FACT, SYSCTL_KEYS } from './facts.js';

/**
 * One finding per NIC and key, as deploy has: both count the same thing, so a deploy that set
 * 8 sysctls is undone by a rollback that resets 8, not "2" (its NICs).
 */
function rollbackFindings({ host, facts }: FactsContext): Finding[] {
  const sysctl = factOf(facts, SYSCTL_FACT);
  const defaults = sysctl.get('default') ?? {};
  return host.nics.flatMap((nic) => {
    const values = sysctl.get(nic.iface) ?? {};
    return SYSCTL_KEYS.map((key): Finding => {
      const [have, want] = [values[key], defaults[key]];
      const off = have !== undefined && want !== undefined && have !== want;
      return {
        id: `sysctl ${nic.iface} ${key}`,
        subject: { kind: 'nic', iface: nic.iface, aspect: `sysctl ${key}` },
        ok: !off,
        detail: off
          ? `${nic.iface}: ${key}=${have} differs from the kernel default ${want}`
          : `${nic.iface}: ${key} at its default`,
        fix: off ? change('sysctl', 'reset', nic.iface, `${nic.iface}: ${key} ${have} → ${want}`) : undefined,
      };
    });
  });
}

function rollbackLines({ host }: FactsContext): { kernel: string[] } {
  return {
    kernel: [
      '# Per-interface settings back to what a new interface gets (conf/default).',
      ...host.nics.map(
        (nic) =>
          `for k in ${SYSCTL_KEYS.join(' ')}; do cat "/proc/sys/net/ipv4/conf/default/$k" >${shellQuote(`/proc/sys/net/ipv4/conf/${nic.iface}/`)}"$k" 2>/dev/null; done`,
      ),
    ],
  };
}

export const fabricSysctlUndo: Undo = { findings: rollbackFindings, lines: rollbackLines };

function snapshot({ host, facts }: FactsContext): [string, string][] {
  const sysctl = factOf(facts, SYSCTL_FACT);
  return host.nics.map((nic) => {
    const values = sysctl.get(nic.iface) ?? {};
    return [`${nic.iface} sysctls`, SYSCTL_KEYS.map((k) => `${k}=${values[k] ?? '?'}`).join(' ')];
  });
}

function restoreLines({ host, facts }: FactsContext): { kernel: string[] } {
  const sysctl = factOf(facts, SYSCTL_FACT);
  const lines = host.nics.flatMap((nic) => {
    const values = sysctl.get(nic.iface) ?? {};
    // Only values read as numbers go back: what the host printed is not trusted to be one.
    return SYSCTL_KEYS.flatMap((key) => {
      const value = values[key] ?? '';
      if (!/^-?\d+$/.test(value)) return [];
      return [
        `printf '%s\\n' ${shellQuote(value)} >${shellQuote(`/proc/sys/net/ipv4/conf/${nic.iface}/${key}`)} || { echo ${shellQuote(`ibfleet: ${nic.iface}: cannot set ${key} back to ${value}`)} >&2; status=1; }`,
      ];
    });
  });
  return { kernel: lines.length ? ['', '# Per-interface sysctls, as they were.', ...lines] : [] };
}

export const fabricSysctlRestore: Restore = { snapshot, lines: restoreLines };
