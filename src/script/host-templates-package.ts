/**
 * The package's reader of host/files/ for host-templates.ts: each template read once, when a file
 * first needs it (never at import: `ibfleet --help` reads none), kept as the file holds it — what a
 * host receives is the template filled, comments and all. Importing this module installs it.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PACKAGE_ROOT } from '../package-root.js';
import { useHostTemplates, type HostTemplate } from './host-templates.js';

export const HOST_TEMPLATES_DIR = join(PACKAGE_ROOT, 'host', 'files');

const read = new Map<HostTemplate, string>();

export function readHostTemplate(template: HostTemplate): string {
  let text = read.get(template);
  if (text === undefined) {
    text = readFileSync(join(HOST_TEMPLATES_DIR, template), 'utf8');
    read.set(template, text);
  }
  return text;
}

useHostTemplates(readHostTemplate);
