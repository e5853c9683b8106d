/**
 * Refusing, at plan, a host where something stands in the way of a file the change writes (a
 * directory or a device at the file's path, a file where its directory goes): the change would
 * fail half-way — or worse, rename the new file into the directory — so nothing is changed and the
 * message names what is in the way and what ibfleet writes there. Pure.
 */
import type { HostFacts } from '../facts/host-facts.js';
import { directoriesFor } from '../render/write-files.js';
import type { RenderedFile } from '../script/rendered-file.js';

/** One sentence per obstacle in the way of writing `files`; empty when the way is clear. */
export function inTheWay(files: readonly RenderedFile[], facts: Pick<HostFacts, 'obstacles'>): string[] {
  const fileProblems = files.flatMap((f) => {
    const kind = facts.obstacles.get(f.path);
    return kind
      ? [
          `${f.path} is a ${kind}, where ibfleet writes its ${f.label?.replace(/ \/.*$/, '') ?? `${f.role.replace(/-/g, ' ')} file`}: move it away (ibfleet replaces only a file, or a link to one, there)`,
        ]
      : [];
  });
  const dirProblems = directoriesFor(files).flatMap((d) => {
    const kind = facts.obstacles.get(d);
    if (kind !== 'not a directory' && kind !== 'link to nothing') return [];
    const what = kind === 'not a directory' ? 'is not a directory' : 'is a link to nothing';
    return [
      `${d} ${what}, but ibfleet writes ${
        files
          .filter((f) => f.path.startsWith(`${d}/`))
          .map((f) => f.path)
          .join(', ') || 'its files'
      } in it: move it away`,
    ];
  });
  return [...fileProblems, ...dirProblems];
}
