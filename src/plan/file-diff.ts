/**
 * What differs between the files deploy would install and what is on the host, as unified diffs
 * (`status --diff`, `render --diff`): from the host's copy (`host:PATH`) to the rendered one
 * (`ibfleet:PATH`). Needs the probe's fileContents option. Pure.
 */
import { createTwoFilesPatch } from 'diff';
import type { RenderedFile } from '../script/rendered-file.js';
import type { FileDiff } from '../vocabulary.js';
import { sha256 } from '../script/digest.js';
import type { HostFacts } from '../facts/host-facts.js';

/** A diff longer than this many lines is cut: a file replaced by something else entirely says so in its first lines. */
const MAX_DIFF_LINES = 400;

function cut(patch: string): string {
  const lines = patch.split('\n');
  return lines.length <= MAX_DIFF_LINES
    ? patch
    : `${lines.slice(0, MAX_DIFF_LINES).join('\n')}\n[… ${lines.length - MAX_DIFF_LINES} more lines]\n`;
}

export function fileDiffs(files: readonly RenderedFile[], facts: HostFacts): FileDiff[] {
  return files.flatMap((file): FileDiff[] => {
    const found = facts.files.get(file.path) ?? null;
    const mode = file.mode.toString(8);
    if (!found)
      return [
        {
          path: file.path,
          state: 'missing',
          diff: cut(createTwoFilesPatch('/dev/null', `ibfleet:${file.path}`, '', file.content, '', `mode ${mode}`)),
        },
      ];
    if (found.sha256 === sha256(file.content)) {
      if (found.mode === file.mode && found.uid === 0) return [];
      return [
        {
          path: file.path,
          state: 'mode',
          diff: `mode ${found.mode.toString(8)} owner uid ${found.uid} on the host, ibfleet installs it ${mode} root\n`,
        },
      ];
    }
    const text = facts.contents.get(file.path);
    if (!text?.whole)
      return [
        {
          path: file.path,
          state: 'differs',
          diff: 'content differs (its text was not read: probe without file contents)\n',
        },
      ];
    return [
      {
        path: file.path,
        state: 'differs',
        diff: cut(
          createTwoFilesPatch(
            `host:${file.path}`,
            `ibfleet:${file.path}`,
            text.text,
            file.content,
            `mode ${found.mode.toString(8)}`,
            `mode ${mode}`,
          ),
        ),
      },
    ];
  });
}
