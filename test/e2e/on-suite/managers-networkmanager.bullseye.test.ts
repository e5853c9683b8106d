/** Generation run (test/lab/helpers.ts onSuite): test/e2e/managers-networkmanager.test.ts with every host on Debian's bullseye root (lab up --suite bullseye). */
import { onSuite } from '../../lab/helpers.js';

onSuite('bullseye');
await import('../managers-networkmanager.test.js');
