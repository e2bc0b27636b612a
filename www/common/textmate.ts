// A small TextMate tokenizer: it reads a grammar in the JSON form editors load
// (editors/vscode/syntaxes/keyless-as.tmLanguage.json) and gives each character of a text its
// scopes, so the playground colours .as programs with the very grammar VS Code uses. It runs the
// grammar's regular expressions with the browser's RegExp (the grammar keeps to the syntax both
// Oniguruma and JavaScript read the same); tests/editors/grammar.test.mjs checks it gives the
// scopes VS Code's own engine (vscode-textmate) gives, character by character, on every example.
//
// What it implements of TextMate: `patterns`, `include` (`#name` and `$self`), `match` with `name`
// and `captures`, `begin`/`end` with `name`, `contentName`, `beginCaptures`, `endCaptures`,
// `captures` and nested `patterns`; the rule state carries from line to line. Oniguruma's `\b`
// (Unicode words) is translated; lines past MAX_LINE_LENGTH stay plain, as in VS Code. Not
// implemented (the grammar does not use them): back-references in `end`, `while`, `\G`,
// injections, other grammars.

export interface RawCapture {
  name?: string;
}

export interface RawRule {
  include?: string;
  name?: string;
  contentName?: string;
  match?: string;
  begin?: string;
  end?: string;
  captures?: Record<string, RawCapture>;
  beginCaptures?: Record<string, RawCapture>;
  endCaptures?: Record<string, RawCapture>;
  patterns?: RawRule[];
  repository?: Record<string, RawRule>;
}

export interface RawGrammar extends RawRule {
  scopeName: string;
  patterns: RawRule[];
}

/** One run of text and its scopes, outermost first (the grammar's own scope first). */
export interface Token {
  text: string;
  scopes: string[];
}

interface Rule {
  name?: string | undefined;
  contentName?: string | undefined;
  match?: RegExp | undefined;
  begin?: RegExp | undefined;
  end?: RegExp | undefined;
  captures?: Record<string, RawCapture> | undefined;
  beginCaptures?: Record<string, RawCapture> | undefined;
  endCaptures?: Record<string, RawCapture> | undefined;
  /** Filled in after every rule exists (includes may be recursive). */
  patterns: Rule[];
  raw: RawRule;
}

/** A begin/end rule that is open, with the scopes it opened. */
interface Frame {
  rule: Rule;
  scopes: string[];
}

/** The state between lines: the begin/end rules still open. */
export type LineState = readonly Frame[];

/** Oniguruma's word characters (letters, marks, decimal digits, connectors), which its `\b`
 *  reads; JavaScript's `\b` knows only ASCII ones. */
const WORD = "[\\p{L}\\p{M}\\p{Nd}\\p{Pc}]";
const BOUNDARY = `(?:(?<=${WORD})(?!${WORD})|(?<!${WORD})(?=${WORD}))`;

/** The grammar's expression as JavaScript reads Oniguruma's: `\b` at Unicode word edges, `.`
 *  anything but the line's end (Oniguruma's `.` takes a CR and U+2028 too). */
export function translate(source: string): string {
  let out = "";
  let inClass = false;
  for (let i = 0; i < source.length; i++) {
    const c = source[i]!;
    if (c === "\\") {
      const next = source[i + 1] ?? "";
      out += !inClass && next === "b" ? BOUNDARY : c + next;
      i++;
    } else {
      if (c === "[") inClass = true;
      else if (c === "]") inClass = false;
      out += c;
    }
  }
  return out;
}

const regex = (source: string): RegExp => new RegExp(translate(source), "dgsu");

/** Lines longer than this are not tokenized (VS Code's `maxTokenizationLineLength`): they keep
 *  the scopes they start in, so a pasted minified blob never stalls typing. */
export const MAX_LINE_LENGTH = 20_000;

export class Grammar {
  private readonly root: Rule;

  constructor(private readonly raw: RawGrammar) {
    const made = new Map<RawRule, Rule>();
    const make = (r: RawRule): Rule => {
      const known = made.get(r);
      if (known) return known;
      const rule: Rule = {
        name: r.name,
        contentName: r.contentName,
        match: r.match === undefined ? undefined : regex(r.match),
        begin: r.begin === undefined ? undefined : regex(r.begin),
        end: r.end === undefined ? undefined : regex(r.end),
        captures: r.captures,
        beginCaptures: r.beginCaptures,
        endCaptures: r.endCaptures,
        patterns: [],
        raw: r,
      };
      made.set(r, rule);
      rule.patterns = (r.patterns ?? []).flatMap((p) => expand(p));
      return rule;
    };
    // An include stands for the rules it names; a rule of only `patterns` stands for those.
    const expand = (r: RawRule, seen = new Set<RawRule>()): Rule[] => {
      if (r.include !== undefined) {
        const target = r.include === "$self" || r.include === "$base" ? this.raw : this.raw.repository?.[r.include.replace(/^#/, "")];
        if (!target || seen.has(target)) return [];
        seen.add(target);
        return expand(target, seen);
      }
      if (r.match === undefined && r.begin === undefined) return (r.patterns ?? []).flatMap((p) => expand(p, new Set(seen)));
      return [make(r)];
    };
    this.root = { patterns: [], raw };
    this.root.patterns = raw.patterns.flatMap((p) => expand(p));
  }

  get scopeName(): string {
    return this.raw.scopeName;
  }

  /** The tokens of one line (without its line break) and the state for the next line. */
  tokenizeLine(line: string, state: LineState = []): { tokens: Token[]; state: LineState } {
    const stack: Frame[] = [...state];
    const tokens: Token[] = [];
    const base = [this.raw.scopeName];
    if (line.length > MAX_LINE_LENGTH) {
      const top = stack[stack.length - 1];
      return { tokens: [{ text: line, scopes: top ? innerScopes(top) : base }], state: stack };
    }
    // Each expression's first match at or after the place last asked (or null: none to the end
    // of the line). Still the first match while it is not behind the place, so each expression
    // scans the line about once, not once per token.
    const found = new Map<RegExp, RegExpExecArray | null>();
    const search = (re: RegExp, pos: number): RegExpExecArray | null => {
      const known = found.get(re);
      if (known === null) return null;
      if (known !== undefined && known.index >= pos) return known;
      const m = execAt(re, line, pos);
      found.set(re, m);
      return m;
    };
    const emit = (from: number, to: number, scopes: string[]): void => {
      if (to <= from) return;
      const last = tokens[tokens.length - 1];
      if (last && sameScopes(last.scopes, scopes)) last.text += line.slice(from, to);
      else tokens.push({ text: line.slice(from, to), scopes });
    };
    /** Scopes each captured group, the rest of the match in `scopes`. */
    const emitMatch = (m: RegExpExecArray, scopes: string[], captures?: Record<string, RawCapture>): void => {
      const start = m.index;
      const end = m.index + m[0].length;
      const marks: (string[] | null)[] = new Array(end - start).fill(null);
      const indices = m.indices ?? [];
      for (let g = 0; g < indices.length; g++) {
        const name = captures?.[String(g)]?.name;
        const span = indices[g];
        if (!name || !span) continue;
        for (let i = span[0]; i < span[1]; i++) {
          const inner = marks[i - start] ?? scopes;
          marks[i - start] = [...inner, name];
        }
      }
      for (let i = start; i < end; i++) emit(i, i + 1, marks[i - start] ?? scopes);
    };
    let pos = 0;
    // Zero-length matches in a row at one place (a guard against rules that would match there
    // forever: after a few, one character is taken as it is).
    let stuck = 0;
    for (;;) {
      const top = stack[stack.length - 1];
      const inner = top ? innerScopes(top) : base;
      const rules = top ? top.rule.patterns : this.root.patterns;
      // The open rule's end wins a tie with its patterns (TextMate's default).
      let best: { m: RegExpExecArray; rule: Rule | null } | null = null;
      if (top?.rule.end) {
        const m = search(top.rule.end, pos);
        if (m) best = { m, rule: null };
      }
      for (const rule of rules) {
        const re = rule.match ?? rule.begin;
        if (!re) continue;
        const m = search(re, pos);
        if (m && (best === null || m.index < best.m.index)) best = { m, rule };
      }
      if (best === null) {
        emit(pos, line.length, inner);
        break;
      }
      const { m, rule } = best;
      emit(pos, m.index, inner);
      if (rule === null && top) {
        emitMatch(m, top.scopes, top.rule.endCaptures ?? top.rule.captures);
        stack.pop();
      } else if (rule?.match) {
        emitMatch(m, rule.name ? [...inner, rule.name] : inner, rule.captures);
      } else if (rule?.begin) {
        const scopes = rule.name ? [...inner, rule.name] : inner;
        emitMatch(m, scopes, rule.beginCaptures ?? rule.captures);
        stack.push({ rule, scopes });
      }
      const end = m.index + m[0].length;
      if (end > pos) {
        pos = end;
        stuck = 0;
        continue;
      }
      if (++stuck > 3) {
        if (pos >= line.length) break;
        const now = stack[stack.length - 1];
        emit(pos, pos + 1, now ? innerScopes(now) : base);
        pos++;
        stuck = 0;
      }
    }
    return { tokens, state: stack };
  }

  /** The tokens of a whole text, line by line (the line breaks are not tokens). */
  tokenize(text: string): Token[][] {
    let state: LineState = [];
    return text.split("\n").map((line) => {
      const r = this.tokenizeLine(line, state);
      state = r.state;
      return r.tokens;
    });
  }
}

/** The scopes inside an open rule: its own, and its `contentName`. */
function innerScopes(f: Frame): string[] {
  return f.rule.contentName ? [...f.scopes, f.rule.contentName] : f.scopes;
}

function sameScopes(a: string[], b: string[]): boolean {
  return a.length === b.length && a.every((s, i) => s === b[i]);
}

/** The first match of `re` at or after `pos` (lookbehind sees the whole line). */
function execAt(re: RegExp, line: string, pos: number): RegExpExecArray | null {
  re.lastIndex = pos;
  return re.exec(line);
}
