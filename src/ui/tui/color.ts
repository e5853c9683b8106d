/**
 * Whether to colour output, from the environment the command was given (not process.env):
 * NO_COLOR (https://no-color.org) wins, then FORCE_COLOR, then "is it a terminal that is not dumb".
 * Ink colours through chalk, which ignores NO_COLOR; so the components pass no colour at all
 * when this says no, and the output carries no SGR codes.
 */
export function colorEnabled(
  env: Readonly<Record<string, string | undefined>>,
  stream: { readonly isTTY?: boolean },
): boolean {
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false;
  const force = env.FORCE_COLOR;
  if (force !== undefined) return !(force === '0' || force === 'false');
  return stream.isTTY === true && env.TERM !== 'dumb';
}
