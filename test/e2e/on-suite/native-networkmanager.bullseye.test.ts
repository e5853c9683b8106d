/** Generation run (test/lab/helpers.ts onSuite): test/e2e/native-networkmanager.test.ts with every host on Debian's bullseye root (lab up --suite bullseye). */
import { onSuite } from '../../lab/helpers.js';

onSuite('bullseye');
await import('../native-networkmanager.test.js');
