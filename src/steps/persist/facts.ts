/** What persist reads on a host beyond the common facts: whether its repair timer runs. Pure. */
import type { Fact } from '../../facts/fact.js';
import { REPAIR_TIMER_UNIT } from './repair.js';

/**
 * `systemctl is-active` of the repair timer (`active`, `inactive`, …); undefined where systemd does
 * not run (sd_booted: /run/systemd/system), where nothing would run the timer.
 */
export const REPAIR_TIMER_FACT: Fact<string | undefined> = {
  name: 'repair-timer',
  probe: () => [`\t[ ! -d /run/systemd/system ] || { s repair-timer; systemctl is-active ${REPAIR_TIMER_UNIT} 2>/dev/null; }`],
  parse: (sections) => {
    const lines = sections.get('repair-timer');
    return lines === undefined ? undefined : lines[0]?.trim() || 'unknown';
  },
};
