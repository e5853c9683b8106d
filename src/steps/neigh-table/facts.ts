/** What neigh-table reads on a host: the neighbour table's garbage-collection thresholds. Pure. */
import type { Fact } from '../../facts/fact.js';

/** The neighbour table's garbage-collection thresholds (net.ipv4.neigh.default.*). */
export const NEIGH_KEYS = ['gc_thresh1', 'gc_thresh2', 'gc_thresh3'] as const;
const NEIGH_DIR = '/proc/sys/net/ipv4/neigh/default';

/** net.ipv4.neigh.default.gc_thresh1..3 as read ('' unreadable); empty when the probe did not look. */
export const NEIGH_FACT: Fact<Readonly<Record<string, string>>> = {
  name: 'neigh',
  // Read with the probe's other files, in its one awk (rd_value: host/sent/probe.sh), as `PATH:VALUE`
  // (what `grep -H .` printed before: a process spared). None where the kernel shows no thresholds
  // (a network namespace of a container or the lab: they are the init namespace's).
  probe: (_host, options) =>
    options.fabric === false
      ? []
      : [
          `\trd_mark neigh; [ ! -e ${NEIGH_DIR}/${NEIGH_KEYS[0]} ] || for k in ${NEIGH_KEYS.join(' ')}; do rd_value "${NEIGH_DIR}/$k:" "${NEIGH_DIR}/$k"; done`,
        ],
  parse: (sections) =>
    Object.fromEntries(
      (sections.get('neigh') ?? []).flatMap((l) => {
        const m = /\/(gc_thresh\d):(\d*)\s*$/.exec(l);
        return m ? [[m[1]!, m[2]!]] : [];
      }),
    ),
};
