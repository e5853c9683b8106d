/** Turns zod issues into positioned problems that name the path, the offending value and the rule. */
import { isScalar } from 'yaml';
import type * as z from 'zod';
import { clipInput, type InventoryProblem } from '../errors.js';
import { closestWord } from './did-you-mean.js';
import { formatPath, type YamlPath, type YamlSource } from './yaml-source.js';

export type AllowedKeys = (path: YamlPath) => readonly string[] | undefined;

export function issuesToProblems(
  issues: readonly z.core.$ZodIssue[],
  source: YamlSource,
  allowedKeys: AllowedKeys,
): InventoryProblem[] {
  const problems: InventoryProblem[] = [];
  for (const issue of issues) {
    const path = issue.path.map((p) => (typeof p === 'symbol' ? String(p) : p));
    if (issue.code === 'unrecognized_keys') {
      const allowed = allowedKeys(path);
      for (const key of issue.keys) {
        const where = clipInput(formatPath([...path, key]));
        problems.push(
          source.problem(
            [...path, key],
            `${where}: unknown key "${clipInput(key)}"${didYouMean(key, allowed)}`,
            allowedText(allowed),
            { key: true },
          ),
        );
      }
      continue;
    }
    const node = source.nodeAt(path);
    const label = clipInput(formatPath(path)) || 'the document';
    if (node === undefined) {
      problems.push(source.problem(path, `${label} is required`, issue.message, { key: true }));
      continue;
    }
    const shown = isScalar(node)
      ? ` = ${typeof node.value === 'string' ? JSON.stringify(clipInput(node.value)) : clipInput(String(node.source ?? node.value))}`
      : '';
    problems.push(source.problem(path, `${label}${shown}: ${issue.message}`));
  }
  return problems;
}

function allowedText(allowed: readonly string[] | undefined): string | undefined {
  if (allowed === undefined) return undefined;
  return allowed.length > 0 ? `allowed here: ${allowed.join(', ')}` : 'nothing may be set here';
}

/** `manger` → `; did you mean "manager"?`, as --hosts suggests a close host name. */
export function didYouMean(key: string, allowed: readonly string[] | undefined): string {
  const best = allowed === undefined ? undefined : closestWord(key, allowed);
  return best === undefined ? '' : `; did you mean "${best}"?`;
}
