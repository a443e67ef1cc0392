// $(VAR) expansion in env values, commands, args and subPathExpr (Go: third_party/forked/golang/expansion).

/**
 * Go's expansion.Expand: `$(NAME)` is replaced by mapping(NAME), a reference mapping does not know stays as
 * written, `$$` is a `$`, and an unterminated `$(` is copied with scanning going on after it.
 */
export function expand(input: string, mapping: (name: string) => string | undefined): string {
  let out = '';
  let checkpoint = 0;
  for (let cursor = 0; cursor < input.length; cursor++) {
    if (input[cursor] !== '$' || cursor + 1 >= input.length) continue;
    out += input.slice(checkpoint, cursor);
    const next = input[cursor + 1];
    if (next === '$') {
      out += '$';
    } else if (next === '(') {
      const close = input.indexOf(')', cursor + 2);
      if (close >= 0) {
        const name = input.slice(cursor + 2, close);
        out += mapping(name) ?? `$(${name})`;
        cursor = close;
        checkpoint = cursor + 1;
        continue;
      }
      out += '$(';
    } else {
      out += '$' + next;
    }
    cursor++;
    checkpoint = cursor + 1;
  }
  return out + input.slice(checkpoint);
}

/** Expands each string with the environment (Go: ExpandContainerCommandAndArgs). */
export function expandAll(values: string[] | undefined, env: ReadonlyMap<string, string>): string[] {
  return (values ?? []).map((value) => expand(value, (name) => env.get(name)));
}
