/** Generation run (test/lab/helpers.ts onSuite): test/e2e/native-networkmanager.test.ts with every host on Debian's bullseye root (lab up --suite bullseye). */
import { onSuite } from '../../lab/helpers.js';

onSuite('bullseye', {
  "native persistence on NetworkManager hosts (needs root) > rollback leaves no rule of ibfleet's, and a rule of the user's own on the same profile stays":
    "NetworkManager 1.30, a product defect not in issue 30's list: rollback from native persistence fails its own verification, \"verification failed: ibs5f0: main-table route to 172.16.0.0/16 missing; ibs5f1: main-table route to 172.16.0.0/16 missing\" (NetworkManager 1.30 does not put the profile's prefix route back in main when the rollback's reapply takes the route table away)",
});
await import('../native-networkmanager.test.js');
