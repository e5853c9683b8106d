#!/usr/bin/env node
// How much shell is still written inside TypeScript (issue 31): with the TypeScript parser, over
// src/render and src/steps, the lines of every template literal that spans more than one line,
// plus every string element of an array literal that holds three or more strings (shell written
// one line per element). Prints the total, then the count per file, largest first.
//
//   node scripts/shell-lines.mjs [ROOT]      (ROOT: a checkout; default this one)
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = process.argv[2] ?? fileURLToPath(new URL('..', import.meta.url));
const DIRS = ['src/render', 'src/steps'];

function files(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return files(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

const isString = (node) =>
  ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node) || ts.isTemplateExpression(node);

function count(path) {
  const source = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true);
  const line = (pos) => source.getLineAndCharacterOfPosition(pos).line;
  const spans = (node) => line(node.getEnd()) - line(node.getStart(source)) + 1;
  let lines = 0;
  const visit = (node, inCountedArray) => {
    if (ts.isNoSubstitutionTemplateLiteral(node) || ts.isTemplateExpression(node)) {
      if (spans(node) > 1) lines += spans(node);
      else if (inCountedArray) lines += 1;
    } else if (ts.isStringLiteral(node) && inCountedArray) {
      lines += 1;
    }
    if (ts.isArrayLiteralExpression(node)) {
      const counted = node.elements.filter(isString).length >= 3;
      for (const element of node.elements) visit(element, counted && isString(element));
      return;
    }
    ts.forEachChild(node, (child) => visit(child, false));
  };
  visit(source, false);
  return lines;
}

const counts = DIRS.flatMap((dir) => files(join(root, dir))).map((path) => [relative(root, path), count(path)]);
const total = counts.reduce((sum, [, n]) => sum + n, 0);
console.log(`shell lines in ${DIRS.join(' + ')}: ${total}`);
for (const [path, n] of counts.filter(([, n]) => n > 0).sort((a, b) => b[1] - a[1]))
  console.log(`${String(n).padStart(5)}  ${path}`);
