/**
 * The two parts of ssh2 ibfleet uses, loaded by their own paths: the client and the private-key
 * parser. ssh2's index also loads its server, its HTTP(S) agents (and with them node:http and
 * node:https) and its key generator — ~4.5 ms of CPU that every deploy, status and rollback paid
 * for code it never runs. ssh2 (pinned ~1.17) has no `exports` map, so these paths are its own.
 */
import { createRequire } from 'node:module';
import type ssh2 from 'ssh2';

const load = createRequire(import.meta.url);

export const Client = load('ssh2/lib/client.js') as typeof ssh2.Client;
export const { parseKey } = load('ssh2/lib/protocol/keyParser.js') as Pick<typeof ssh2.utils, 'parseKey'>;
