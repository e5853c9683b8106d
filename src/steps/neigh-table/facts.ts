/** What neigh-table reads on a host: the neighbour table's garbage-collection thresholds. Pure. */
import type { Fact } from '../../facts/fact.js';

/** The neighbour table's garbage-collection thresholds (net.ipv4.neigh.default.*). */
export const NEIGH_KEYS = ['gc_thresh1', 'gc_thresh2', 'gc_thresh3'] as const;
const NEIGH_DIR = '/proc/sys/net/ipv4/neigh/default';

/** net.ipv4.neigh.default.gc_thresh1..3 as read ('' unreadable); empty when the probe did not look. */
export const NEIGH_FACT: Fact<Readonly<Record<string, string>>> = {
  name: 'neigh',
  // One grep: the shell's read takes a byte at a time, and /proc/sys answers only the first. None
  // where the kernel shows no thresholds (a network namespace of a container or the lab: they are
  // the init namespace's), which grep -s would have printed nothing for either: a process spared.
  probe: (_host, options) =>
    options.fabric === false
      ? []
      : [
          `\ts neigh; [ ! -e ${NEIGH_DIR}/${NEIGH_KEYS[0]} ] || grep -s -H . ${NEIGH_KEYS.map((k) => `${NEIGH_DIR}/${k}`).join(' ')}`,
        ],
  parse: (sections) =>
    Object.fromEntries(
      (sections.get('neigh') ?? []).flatMap((l) => {
        const m = /\/(gc_thresh\d):(\d*)\s*$/.exec(l);
        return m ? [[m[1]!, m[2]!]] : [];
      }),
    ),
};
