/**
 * The templates of host/files/ and their filling (src/script/host-templates.ts): a placeholder is
 * filled once and as given, and every mistake — a placeholder without a value, a value without a
 * placeholder, lines where one line goes — fails loudly instead of writing a half-filled file.
 */
import { readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { fillTemplate, hostFile, type HostTemplate } from '../../src/script/host-templates.js';
import { HOST_TEMPLATES_DIR } from '../../src/script/host-templates-package.js';

describe('fillTemplate', () => {
  it('fills a placeholder inside a line, and lines for one alone on its line', () => {
    const text = '#!/bin/sh\n{{HEADER}}\nrun {{PATH}} --quiet # {{PATH}}\n{{MORE}}\nexit 0\n';
    expect(fillTemplate('t', text, { HEADER: ['# a', '# b'], PATH: '/etc/x', MORE: [] })).toBe(
      '#!/bin/sh\n# a\n# b\nrun /etc/x --quiet # /etc/x\nexit 0\n',
    );
    expect(fillTemplate('t', '{{ONE}}\n', { ONE: 'one line' })).toBe('one line\n');
  });

  it('inserts a value as it is: its own {{…}} is no placeholder', () => {
    expect(fillTemplate('t', 'a {{X}} b\n', { X: '{{Y}} $(rm -rf /)' })).toBe('a {{Y}} $(rm -rf /) b\n');
  });

  it.each([
    ['a placeholder left unfilled', 'a {{X}} {{Y}}\n', { X: '1' }, 'host/files/t: no value for {{Y}}'],
    ['a placeholder of lines left unfilled', '{{LINES}}\n', {}, 'host/files/t: no value for {{LINES}}'],
    ['an unknown placeholder', 'a {{X}}\n', { X: '1', Z: '2' }, 'host/files/t has no placeholder {{Z}}'],
    ['a line break inside a line', 'a {{X}} b\n', { X: '1\n2' }, '{{X}} takes one line'],
    ['lines inside a line', 'a {{X}} b\n', { X: ['1', '2'] }, '{{X}} stands inside a line'],
    ['a line break inside one of the lines', '{{X}}\n', { X: ['1\n2'] }, '{{X}} takes one line'],
  ])('fails loudly on %s', (_, text, values, message) => {
    expect(() => fillTemplate('t', text, values)).toThrow(message);
  });

  it('a placeholder spelled otherwise ({{x}}, { {X} }) is text, not a placeholder', () => {
    expect(fillTemplate('t', '{{x}} { {X} } ${X}\n', {})).toBe('{{x}} { {X} } ${X}\n');
  });
});

describe('host/files/', () => {
  const files = readdirSync(HOST_TEMPLATES_DIR).filter((f) => f !== 'README.md');

  it('holds templates only, each of whose placeholders a step fills (an unfilled one would throw)', () => {
    for (const file of files) expect(() => hostFile(file as HostTemplate, {}), file).toThrow(/no value for \{\{/);
  });
});
