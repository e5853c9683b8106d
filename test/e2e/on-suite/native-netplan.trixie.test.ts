/** Generation run (test/lab/helpers.ts onSuite): test/e2e/native-netplan.test.ts with every host on Debian's trixie root (lab up --suite trixie). */
import { onSuite } from '../../lab/helpers.js';

onSuite('trixie');
await import('../native-netplan.test.js');
