/** Generation run (test/lab/helpers.ts onSuite): test/e2e/native-networkmanager.test.ts with every host on Debian's trixie root (lab up --suite trixie). */
import { onSuite } from '../../lab/helpers.js';

onSuite('trixie');
await import('../native-networkmanager.test.js');
