/**
 * Why a JSON text does not parse, in the words RethinkDB gives for `r.json` (its parser is
 * RapidJSON; the texts are RapidJSON's GetParseError_En). Only called once JSON.parse has refused
 * the text, so it walks the text the way RapidJSON's reader does to find its first error; the
 * text's end reads as NUL, as it does there.
 */

const MESSAGES = {
  empty: 'The document is empty.',
  // The RapidJSON of RethinkDB 2.4 words it so.
  notSingular: 'The document root must not follow by other values.',
  value: 'Invalid value.',
  missName: 'Missing a name for object member.',
  missColon: 'Missing a colon after a name of object member.',
  missCommaOrCurly: "Missing a comma or '}' after an object member.",
  missCommaOrSquare: "Missing a comma or ']' after an array element.",
  hex: 'Incorrect hex digit after \\u escape in string.',
  surrogate: 'The surrogate pair in string is invalid.',
  escape: 'Invalid escape character in string.',
  quote: 'Missing a closing quotation mark in string.',
  tooBig: 'Number too big to be stored in double.',
  fraction: 'Miss fraction part in number.',
  exponent: 'Miss exponent in number.',
} as const;

class Found extends Error {}
/** Past this nesting the walk gives up (undefined): such a text is refused for its depth anyway. */
const MAX_WALK_DEPTH = 1000;
class TooDeep extends Error {}

/** RapidJSON's message for the first error in `text`, or undefined if it has none. */
export function jsonErrorText(text: string): string | undefined {
  let i = 0;
  const peek = (): string => (i < text.length ? (text[i] as string) : '\0');
  const fail = (what: keyof typeof MESSAGES): never => {
    throw new Found(MESSAGES[what]);
  };
  const ws = (): void => {
    while (i < text.length && ' \t\n\r'.includes(text[i] as string)) i++;
  };
  const digit = (c: string): boolean => c >= '0' && c <= '9';
  const hex4 = (): number => {
    const h = text.slice(i, i + 4);
    if (!/^[0-9A-Fa-f]{4}$/.test(h)) fail('hex');
    i += 4;
    return Number.parseInt(h, 16);
  };
  const literal = (word: string): void => {
    if (text.startsWith(word, i)) i += word.length;
    else fail('value');
  };
  const string = (): void => {
    i++; // the opening quote
    for (;;) {
      const c = peek();
      if (c === '"') {
        i++;
        return;
      }
      if (c === '\\') {
        i++;
        const e = peek();
        if ('"\\/bfnrt'.includes(e) && e !== '\0') i++;
        else if (e === 'u') {
          i++;
          const u = hex4();
          if (u >= 0xd800 && u <= 0xdbff) {
            if (peek() !== '\\' || text[i + 1] !== 'u') fail('surrogate');
            i += 2;
            const low = hex4();
            if (low < 0xdc00 || low > 0xdfff) fail('surrogate');
          }
        } else fail('escape');
      } else if (c === '\0' && i >= text.length) fail('quote');
      else if (c < ' ')
        fail('escape'); // an unescaped control character
      else i++;
    }
  };
  const number = (): void => {
    const start = i;
    if (peek() === '-') i++;
    if (peek() === '0') i++;
    else if (digit(peek())) while (digit(peek())) i++;
    else fail('value');
    if (peek() === '.') {
      i++;
      if (!digit(peek())) fail('fraction');
      while (digit(peek())) i++;
    }
    if (peek() === 'e' || peek() === 'E') {
      i++;
      if (peek() === '+' || peek() === '-') i++;
      if (!digit(peek())) fail('exponent');
      while (digit(peek())) i++;
    }
    if (!Number.isFinite(Number(text.slice(start, i)))) fail('tooBig');
  };
  let depth = 0;
  const value = (): void => {
    if (++depth > MAX_WALK_DEPTH) throw new TooDeep();
    try {
      valueAt();
    } finally {
      depth--;
    }
  };
  const valueAt = (): void => {
    switch (peek()) {
      case 'n':
        literal('null');
        return;
      case 't':
        literal('true');
        return;
      case 'f':
        literal('false');
        return;
      case '"':
        string();
        return;
      case '{': {
        i++;
        ws();
        if (peek() === '}') {
          i++;
          return;
        }
        for (;;) {
          if (peek() !== '"') fail('missName');
          string();
          ws();
          if (peek() !== ':') fail('missColon');
          i++;
          ws();
          value();
          ws();
          if (peek() === ',') {
            i++;
            ws();
          } else if (peek() === '}') {
            i++;
            return;
          } else fail('missCommaOrCurly');
        }
      }
      case '[': {
        i++;
        ws();
        if (peek() === ']') {
          i++;
          return;
        }
        for (;;) {
          value();
          ws();
          if (peek() === ',') {
            i++;
            ws();
          } else if (peek() === ']') {
            i++;
            return;
          } else fail('missCommaOrSquare');
        }
      }
      default:
        number();
        return;
    }
  };
  try {
    ws();
    if (i >= text.length) fail('empty');
    value();
    ws();
    if (i < text.length) fail('notSingular');
    return undefined;
  } catch (err) {
    if (err instanceof Found) return err.message;
    if (err instanceof TooDeep) return undefined;
    throw err;
  }
}

/**
 * Whether a text JSON.parse took may still be one RapidJSON refuses: a lone surrogate escape
 * (JSON.parse keeps it), a number too big for a double (JSON.parse makes it Infinity). A cheap
 * look, so that only such texts are walked.
 */
export function mayHideJsonError(text: string): boolean {
  return /\\u[dD][89a-fA-F]|\d[eE]|\d{300}/.test(text);
}

/** `Failed to parse "TEXT" as JSON: WHY`, the text cut at 37 characters as RethinkDB's. */
export function jsonParseFailure(text: string, why: string): string {
  const shown = text.length > 40 ? `${text.slice(0, 37)}...` : text;
  return `Failed to parse "${shown}" as JSON: ${why}`;
}
