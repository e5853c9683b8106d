/** `status --diff`: each host's differing files as unified diffs, in host order, what hosts sent sanitised. Pure. */
import type { HostResult } from '../../vocabulary.js';
import { pluralize } from './format.js';
import { sanitizeLine } from './sanitize.js';

const STATE_WORDS = {
  missing: 'missing on the host',
  differs: 'content differs',
  mode: 'same content, other mode or owner',
} as const;

export function formatDiffLines(results: readonly HostResult[]): string[] {
  const lines: string[] = [];
  for (const r of [...results].sort((a, b) => a.host.id - b.host.id)) {
    const diffs = r.diffs ?? [];
    if (diffs.length === 0) continue;
    lines.push(
      `== ${r.host.id} ${r.host.name}: ${pluralize(diffs.length, 'file')} differ${diffs.length === 1 ? 's' : ''} from what deploy installs`,
    );
    for (const d of diffs) {
      lines.push(`${d.path}: ${STATE_WORDS[d.state]}`);
      // The patch's own ==== rule says nothing the line above does not.
      for (const line of d.diff.replace(/\n$/, '').split('\n'))
        if (!/^=+$/.test(line)) lines.push(sanitizeLine(line, 'keep'));
    }
  }
  return lines;
}
