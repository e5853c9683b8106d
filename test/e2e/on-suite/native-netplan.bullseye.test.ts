/** Generation run (test/lab/helpers.ts onSuite): test/e2e/native-netplan.test.ts with every host on Debian's bullseye root (lab up --suite bullseye). */
import { onSuite } from '../../lab/helpers.js';

onSuite('bullseye', {
  'native persistence on netplan and ifupdown hosts (needs root) > rollback: no rule, no netplan file; networkd configures the NICs as before the deploy':
    "not ibfleet's: the rule of the earlier case's site drop-in (`100: from all to 172.16.0.0/16 lookup 100`) stays on host 35 after the drop-in is removed and networkd 247 reloaded (247 leaves a rule it no longer configures; the case's clean-up is written for networkd 248 on)",
});
await import('../native-netplan.test.js');
