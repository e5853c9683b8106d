import { Box, Text } from 'ink';
import type { ReactNode } from 'react';
import type { Tone } from './format.js';
import { Styled } from './styled.js';

export interface LiveLineProps {
  readonly glyph: string;
  readonly tone: Tone;
  readonly bold?: boolean;
  readonly children: ReactNode;
}

/**
 * One line of the live area: a glyph, then text cut at the terminal's edge. The glyph is its own
 * text node so the (ASCII) rest takes string-width's fast path; Ink re-measures every live line
 * on every frame, and that is most of a frame's cost with 254 hosts.
 */
export function LiveLine({ glyph, tone, bold = false, children }: LiveLineProps) {
  return (
    <Box>
      <Box flexShrink={0}>
        <Styled tone={tone} bold={bold}>
          {glyph}
        </Styled>
      </Box>
      <Text wrap="truncate-end"> {children}</Text>
    </Box>
  );
}
