import { Text } from 'ink';
import { formatHeaderText } from './lines.js';
import type { HeaderModel } from './state.js';
import { Styled } from './styled.js';

export interface HeaderProps {
  readonly header: HeaderModel;
}

/** What is being run against what: printed once, frozen at the top. */
export function Header({ header }: HeaderProps) {
  const [title, ...rest] = formatHeaderText(header).split(' · ');
  return (
    <Text>
      <Styled tone="plain" bold>
        {title}
      </Styled>
      <Styled tone={header.dryRun ? 'info' : 'muted'}>{rest.map((part) => ` · ${part}`).join('')}</Styled>
    </Text>
  );
}
