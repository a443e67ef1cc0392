// $(VAR) expansion in env values, commands and args (Go: third_party/forked/golang/expansion).

/**
 * Expands $(VAR) references with mapping. `$$` escapes a `$`; a reference to an unknown variable,
 * or an unterminated one, stays as written.
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
      cursor++;
      checkpoint = cursor + 1;
      continue;
    }
    if (next === '(') {
      const close = input.indexOf(')', cursor + 2);
      if (close >= 0) {
        const name = input.slice(cursor + 2, close);
        const value = mapping(name);
        out += value ?? `$(${name})`;
        cursor = close;
        checkpoint = cursor + 1;
        continue;
      }
      // unterminated: keep the rest as is
      out += input.slice(cursor);
      return out;
    }
    // a lone $ followed by something else stays
    out += '$' + next;
    cursor++;
    checkpoint = cursor + 1;
  }
  return out + input.slice(checkpoint);
}

/** Expands each string with the environment (Go: ExpandContainerCommandAndArgs). */
export function expandAll(values: string[] | undefined, env: Map<string, string>): string[] {
  return (values ?? []).map((value) => expand(value, (name) => env.get(name)));
}
