/** Generation run (test/lab/helpers.ts onSuite): test/e2e/managers-netplan.test.ts with every host on Debian's bullseye root (lab up --suite bullseye). */
import { onSuite } from '../../lab/helpers.js';

onSuite('bullseye', {
  // Not ibfleet's failure: the case's expected drift is networkd 252's.
  'netplan and ifupdown hosts: the routing survives what networkd, ifupdown and an admin do (needs root) > without persistence the same events show the bug: drift and failing cells':
    "the case asserts networkd 252's answer to `networkctl reconfigure` (every foreign rule dropped); networkd 247 keeps foreign rules (ManageForeignRoutingPolicyRules came in 248), so the bug shows as table 941 emptied and the main-table route back instead",
});
await import('../managers-netplan.test.js');
