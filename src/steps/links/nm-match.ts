/**
 * Which NetworkManager profiles apply to a NIC, as NetworkManager decides it: a profile that names
 * an interface (`connection.interface-name`) applies to that one only; one bound to a hardware
 * address (`802-3-ethernet.mac-address`, `infiniband.mac-address`) to the device that has it; one
 * with `match.interface-name` to the names its patterns take — every binding it has must hold.
 * NetworkManager activates any of them on the NIC at boot, so the links step changes the one that
 * applies rather than adding a second beside it (SPEC: modified, not duplicated). A profile that
 * binds to nothing applies to every device of its type: not one NIC's, and not taken as one. Pure.
 */
import { globMatches } from '../../facts/glob.js';
import type { NmLink } from './facts.js';

/** What NetworkManager compares a profile with: the device's name, hardware address (as the kernel has it) and kind. */
export interface NmDevice {
  readonly iface: string;
  readonly hwaddr: string | undefined;
  readonly ipoib: boolean;
}

/** The profile type that fits the device (as nmcli prints it). */
function typeFor(device: NmDevice): string {
  return device.ipoib ? 'infiniband' : '802-3-ethernet';
}

/**
 * Hardware addresses equal as NetworkManager compares them (nm_utils_hwaddr_matches): byte by
 * byte, case aside — of a 20-byte IPoIB address only the last 8 (the port GUID), as its first
 * bytes carry flags and the QPN, which change with the mode.
 */
export function hwaddrMatches(a: string, b: string): boolean {
  const bytes = (text: string) =>
    text
      .toLowerCase()
      .split(/[:-]/)
      .map((x) => x.padStart(2, '0'));
  const [x, y] = [bytes(a), bytes(b)];
  if (x.length !== y.length) return false;
  const from = x.length === 20 ? 12 : 0;
  return x.slice(from).join(':') === y.slice(from).join(':');
}

/**
 * `match.interface-name` as NetworkManager evaluates it (nm_wildcard_match_check, 1.26+): a pattern
 * may start with `|` (optional, the default) or `&` (mandatory), then `!` (inverted; a bare `!`
 * is mandatory, as before 1.26), then `\` to take the next character as it is. Every mandatory
 * one must hold; of the optional ones, one (when there are any).
 */
export function interfaceNameMatches(patterns: readonly string[], iface: string): boolean {
  let optional = false;
  let anyOptional = false;
  for (const raw of patterns) {
    let p = raw;
    let mandatory = false;
    const prefixed = p.startsWith('|') || p.startsWith('&');
    if (prefixed) [mandatory, p] = [p.startsWith('&'), p.slice(1)];
    const inverted = p.startsWith('!');
    if (inverted) [mandatory, p] = [mandatory || !prefixed, p.slice(1)];
    const hit = globMatches(p, iface) !== inverted;
    if (mandatory && !hit) return false;
    if (!mandatory) [optional, anyOptional] = [true, anyOptional || hit];
  }
  return !optional || anyOptional;
}

/** The bindings a profile has; undefined when it binds to no device in particular. */
function bindings(p: NmLink): readonly string[] | undefined {
  const words = [
    ...(p.iface ? [`connection.interface-name ${p.iface}`] : []),
    ...(p.mac ? [`mac-address ${p.mac}`] : []),
    ...(p.match.length ? [`match.interface-name ${p.match.join(',')}`] : []),
  ];
  return words.length ? words : undefined;
}

/**
 * The profile applies to the device: each of its bindings holds, and it has one. A profile named
 * for the interface counts whatever its type (ibfleet's own of another type is made anew); one
 * bound only by address or pattern counts for a device of its type, as NetworkManager takes it.
 */
export function profileApplies(p: NmLink, device: NmDevice): boolean {
  if (!bindings(p)) return false;
  if (p.iface && p.iface !== device.iface) return false;
  if (p.mac && (device.hwaddr === undefined || !hwaddrMatches(p.mac, device.hwaddr))) return false;
  if (p.match.length && !interfaceNameMatches(p.match, device.iface)) return false;
  return p.iface !== '' || p.type === typeFor(device);
}

/** How the profile is bound, in nmcli's words, for a message. */
export function bindingText(p: NmLink): string {
  return (bindings(p) ?? ['no binding']).join(', ');
}
