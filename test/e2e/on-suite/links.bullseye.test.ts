/** Generation run (test/lab/helpers.ts onSuite): test/e2e/links.test.ts with every host on Debian's bullseye root (lab up --suite bullseye). */
import { onSuite } from '../../lab/helpers.js';

onSuite('bullseye');
await import('../links.test.js');
