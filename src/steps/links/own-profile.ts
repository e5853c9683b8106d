/**
 * The profile ibfleet creates for a NIC where NetworkManager runs: its uuid and its name, the same
 * on every run for a host and interface, so a later run finds it.
 */
import type { Host } from '../../inventory/model.js';

/** 32 bits of FNV-1a over `text`, started from `seed`: enough spread for a name, no crypto needed. */
function fnv1a(text: string, seed: number): string {
  let hash = (0x811c9dc5 ^ seed) >>> 0;
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return hash.toString(16).padStart(8, '0');
}

/**
 * The uuid of the profile ibfleet creates for a NIC: the same on every run (so a later one finds
 * it), and one per host and interface. UUID-shaped as NetworkManager requires (version 4, variant 8).
 */
export function profileUuid(host: Host, iface: string): string {
  const hex = [1, 2, 3, 4].map((seed) => fnv1a(`ibfleet links ${host.id} ${iface}`, seed)).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-8${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

export function profileName(iface: string): string {
  return `ibfleet-${iface}`;
}
