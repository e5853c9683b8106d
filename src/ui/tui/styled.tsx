import { Text } from 'ink';
import { createContext, useContext, type ReactNode } from 'react';
import type { Tone } from './format.js';

/** Set once at the root from `colorEnabled()`; false means no colour props reach Ink at all. */
export const ColorContext = createContext(false);

const TONE_COLOR: Readonly<Record<Tone, string | undefined>> = {
  success: 'green',
  error: 'red',
  warning: 'yellow',
  info: 'cyan',
  muted: undefined,
  plain: undefined,
};

export interface StyledProps {
  readonly tone: Tone;
  readonly bold?: boolean;
  readonly children: ReactNode;
}

/** Text in a tone; renders as plain text when colour is off. */
export function Styled({ tone, bold = false, children }: StyledProps) {
  const color = useContext(ColorContext);
  if (!color) return <Text>{children}</Text>;
  return (
    <Text color={TONE_COLOR[tone]} dimColor={tone === 'muted'} bold={bold}>
      {children}
    </Text>
  );
}
