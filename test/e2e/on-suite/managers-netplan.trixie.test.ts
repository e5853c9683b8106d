/** Generation run (test/lab/helpers.ts onSuite): test/e2e/managers-netplan.test.ts with every host on Debian's trixie root (lab up --suite trixie). */
import { onSuite } from '../../lab/helpers.js';

onSuite('trixie', {
  // Not ibfleet's failure: the case's expected drift is networkd 252's.
  'netplan and ifupdown hosts: the routing survives what networkd, ifupdown and an admin do (needs root) > without persistence the same events show the bug: drift and failing cells':
    "the case asserts networkd 252's answer to `networkctl reconfigure` (the main-table route back); networkd 257 drops the rules and puts no main-table route back, so both NICs' traffic leaves through nowhere (issue 30, defect 1: the outage)",
});
await import('../managers-netplan.test.js');
