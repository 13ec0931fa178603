//! A small C/CUDA lexer: blanks comments and literals, splits a file into top-level
//! chunks and directives, and yields identifier tokens.
//!
//! Splitting before parsing is what makes isolation robust: tree-sitter parses each
//! top-level chunk on its own, so a macro used as a declaration, or an `#if` inside a
//! parameter list, spoils only the chunk it sits in instead of the rest of the file.

/// The text with comments and the contents of string/char literals replaced by spaces
/// (newlines kept), byte for byte: offsets into it are offsets into the original.
pub fn mask(text: &str) -> String {
    mask_with(text, true)
}

/// The byte index of the bracket `c` that closes the `o` at `open` (brackets nest; give masked
/// text when literals or comments may hold brackets). `None` when it is never closed.
pub fn matching(text: &str, open: usize, o: u8, c: u8) -> Option<usize> {
    let mut depth = 0usize;
    for (i, &b) in text.as_bytes().iter().enumerate().skip(open) {
        if b == o {
            depth += 1;
        } else if b == c {
            depth = depth.checked_sub(1)?;
            if depth == 0 {
                return Some(i);
            }
        }
    }
    None
}

/// The byte index of the bracket `o` that opens the `c` at `close`, scanning backwards
/// (brackets nest): the mirror of [`matching`]. `None` when it is never opened or `close` is
/// past the end.
pub fn matching_open(text: &str, close: usize, o: u8, c: u8) -> Option<usize> {
    let mut depth = 0usize;
    for (i, &b) in text.as_bytes().get(..=close)?.iter().enumerate().rev() {
        if b == c {
            depth += 1;
        } else if b == o {
            depth = depth.checked_sub(1)?;
            if depth == 0 {
                return Some(i);
            }
        }
    }
    None
}

/// The innermost `o` before byte `pos` that no `c` before `pos` closes (the group `pos` sits
/// in), scanning backwards; `None` at the start of the text or when a byte of `stop` (at any
/// depth) comes first. `f(a, g(b), |` gives the `(` after `f`; with `stop` `b";"`, `x; |`
/// gives None.
pub fn enclosing_open(text: &str, pos: usize, o: u8, c: u8, stop: &[u8]) -> Option<usize> {
    let before = &text.as_bytes()[..pos.min(text.len())];
    let mut depth = 0usize;
    for (i, &b) in before.iter().enumerate().rev() {
        if b == c {
            depth += 1;
        } else if b == o {
            if depth == 0 {
                return Some(i);
            }
            depth -= 1;
        } else if stop.contains(&b) {
            return None;
        }
    }
    None
}

/// Every `o` before byte `pos` that no `c` before `pos` closes, innermost first: the groups
/// `pos` sits in (a stray `c` closes nothing).
pub fn enclosing_opens(text: &str, pos: usize, o: u8, c: u8) -> Vec<usize> {
    let mut out = Vec::new();
    let mut end = pos;
    while let Some(i) = enclosing_open(text, end, o, c, b"") {
        out.push(i);
        end = i;
    }
    out
}

/// Each byte of `text` with its index and the bracket depth after it: a byte of `open`
/// raises the depth, a byte of `close` lowers it. Kinds are not paired (`(]` is a group) and
/// the depth is signed (an unmatched close makes it negative). Give masked text when
/// literals or comments may hold brackets.
pub fn depths<'a>(
    text: &'a str,
    open: &'a [u8],
    close: &'a [u8],
) -> impl Iterator<Item = (usize, u8, i32)> + 'a {
    let mut depth = 0i32;
    text.bytes().enumerate().map(move |(i, b)| {
        if open.contains(&b) {
            depth += 1;
        } else if close.contains(&b) {
            depth -= 1;
        }
        (i, b, depth)
    })
}

/// The bytes of `text` outside every group (depth 0 in [`depths`], so not after an
/// unmatched close either), with their indices; the brackets themselves are left out.
pub fn top_level<'a>(
    text: &'a str,
    open: &'a [u8],
    close: &'a [u8],
) -> impl Iterator<Item = (usize, u8)> + 'a {
    depths(text, open, close)
        .filter(move |&(_, b, d)| d == 0 && !open.contains(&b) && !close.contains(&b))
        .map(|(i, b, _)| (i, b))
}

/// The byte index of the first `target` outside every group (see [`top_level`]).
pub fn find_top_level(text: &str, target: u8, open: &[u8], close: &[u8]) -> Option<usize> {
    top_level(text, open, close)
        .find(|&(_, b)| b == target)
        .map(|(i, _)| i)
}

/// `text` split at its commas outside every group (see [`top_level`]), pieces untrimmed;
/// one piece (the whole text) when there is none.
pub fn split_top_level_commas<'a>(text: &'a str, open: &[u8], close: &[u8]) -> Vec<&'a str> {
    let mut out = Vec::new();
    let mut from = 0;
    for (i, _) in top_level(text, open, close).filter(|&(_, b)| b == b',') {
        out.push(&text[from..i]);
        from = i + 1;
    }
    out.push(&text[from..]);
    out
}

/// The text with comments blanked but literals kept: for emitting directives.
pub fn mask_comments(text: &str) -> String {
    mask_with(text, false)
}

fn mask_with(text: &str, literals: bool) -> String {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let mut i = 0;
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    // A UTF-8 byte-order mark is whitespace.
    if b.starts_with(&[0xef, 0xbb, 0xbf]) {
        out[..3].copy_from_slice(b"   ");
        i = 3;
    }
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                let mut j = i + 2;
                while j < b.len() && b[j] != b'\n' {
                    // A backslash-newline continues a line comment.
                    if b[j] == b'\\' && b.get(j + 1) == Some(&b'\n') {
                        j += 1;
                    }
                    j += 1;
                }
                blank(&mut out, i, j);
                i = j;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let mut j = i + 2;
                while j < b.len() && !(b[j] == b'*' && b.get(j + 1) == Some(&b'/')) {
                    j += 1;
                }
                let end = (j + 2).min(b.len());
                blank(&mut out, i, end);
                i = end;
            }
            q @ (b'"' | b'\'') => {
                // A quote right after an alphanumeric is a C++14 digit separator
                // (`1'000`) only inside a number; we treat it as a literal anyway,
                // but stop at the end of the line so one stray quote cannot
                // swallow the file.
                let mut j = i + 1;
                while j < b.len() && b[j] != q && b[j] != b'\n' {
                    if b[j] == b'\\' && j + 1 < b.len() {
                        j += 1;
                    }
                    j += 1;
                }
                if j < b.len() && b[j] == q {
                    if literals {
                        blank(&mut out, i + 1, j);
                    }
                    i = j + 1;
                } else {
                    i = j;
                }
            }
            _ => i += 1,
        }
    }
    // Only ASCII bytes were written over whole characters (comments and literals are
    // blanked in full), so the result is valid UTF-8.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// A top-level piece of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PieceKind {
    /// A preprocessor line at file scope (continuations included).
    Directive,
    /// A declaration or definition: from its first token to its `;` or closing `}`.
    Chunk,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Piece {
    pub kind: PieceKind,
    pub start: usize,
    pub end: usize,
    /// The named namespaces the piece sits in, outermost first (`a::b`); empty at file
    /// scope, in `extern "C"` or in an anonymous namespace.
    pub namespace: String,
}

/// (brace depth, paren depth) at a nested `#if`, and after its first branch.
type NestedIf = (i32, i32, Option<(i32, i32)>);

/// Where a comment starting at `i` ends: after the line of a `//` comment (at its newline)
/// or after the `*/` of a `/* */` one (the text's end if it is unclosed); None when no
/// comment starts at `i`.
pub fn comment_end(b: &[u8], i: usize) -> Option<usize> {
    let rest = b.get(i..)?;
    if rest.starts_with(b"//") {
        Some(
            rest.iter()
                .position(|&c| c == b'\n')
                .map_or(b.len(), |k| i + k),
        )
    } else if rest.starts_with(b"/*") {
        let body = &rest[2..];
        Some(
            body.windows(2)
                .position(|w| w == b"*/")
                .map_or(b.len(), |k| i + 2 + k + 2),
        )
    } else {
        None
    }
}

/// Remove `//` and `/* */` comments, keeping line breaks and string literals.
pub fn strip_comments(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'"' || b[i] == b'\'' {
            let q = b[i];
            let st = i;
            i += 1;
            while i < b.len() && b[i] != q && b[i] != b'\n' {
                if b[i] == b'\\' {
                    i += 1;
                }
                i += 1;
            }
            i = (i + 1).min(b.len());
            out.push_str(&s[st..i]);
        } else if let Some(end) = comment_end(b, i) {
            // Lines stay where they were: a block comment keeps its newlines.
            let lines = b[i..end].iter().filter(|&&c| c == b'\n').count();
            out.extend(std::iter::repeat_n('\n', lines));
            i = end;
        } else {
            let ch = s[i..].chars().next().expect("in bounds");
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    out
}

/// For the scanners below: skip white space from `i` (a newline starts a line, where a
/// `#` begins a directive) and give the byte there; None at the end of the text.
fn next_nonblank(b: &[u8], i: &mut usize, line_start: &mut bool) -> Option<u8> {
    while let Some(&c) = b.get(*i) {
        if !c.is_ascii_whitespace() {
            return Some(c);
        }
        if c == b'\n' {
            *line_start = true;
        }
        *i += 1;
    }
    None
}

/// Split masked text into file-scope directives and chunks. `extern "C" { … }` and
/// `namespace x { … }` are transparent: their contents become chunks of their own.
pub fn split_top_level(masked: &str, original: &str) -> Vec<Piece> {
    let b = masked.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let mut line_start = true;
    let mut chunk: Option<usize> = None;
    let mut header_end: Option<usize> = None;
    let (mut brace, mut paren) = (0i32, 0i32);
    // Nested `#if` inside a chunk: the depth at the `#if` and after the first branch,
    // so that branches opening the same brace twice count once.
    let mut nested_if: Vec<NestedIf> = Vec::new();

    let mut open = OpenBlocks::default();
    let flush = |out: &mut Vec<Piece>, chunk: &mut Option<usize>, end: usize, ns: String| {
        if let Some(s) = chunk.take() {
            let e = trim_end(b, s, end);
            if e > s {
                out.push(Piece {
                    kind: PieceKind::Chunk,
                    start: s,
                    end: e,
                    namespace: ns,
                });
            }
        }
    };

    while let Some(c) = next_nonblank(b, &mut i, &mut line_start) {
        if c == b'#' && line_start {
            let end = directive_end(b, i);
            if brace == 0 && paren == 0 {
                flush(&mut out, &mut chunk, i, open.namespace());
                header_end = None;
                out.push(Piece {
                    kind: PieceKind::Directive,
                    start: i,
                    end,
                    namespace: open.namespace(),
                });
            } else {
                let word = directive_word(&masked[i..end]);
                match word {
                    "if" | "ifdef" | "ifndef" => nested_if.push((brace, paren, None)),
                    "elif" | "else" => {
                        if let Some(top) = nested_if.last_mut() {
                            if top.2.is_none() {
                                top.2 = Some((brace, paren));
                            }
                            brace = top.0;
                            paren = top.1;
                        }
                    }
                    "endif" => {
                        if let Some((_, _, Some((b1, p1)))) = nested_if.pop() {
                            brace = b1;
                            paren = p1;
                        }
                    }
                    _ => {}
                }
            }
            i = end;
            line_start = true;
            continue;
        }
        if line_start && brace == 0 && paren == 0 {
            if let Some(s) = chunk {
                if starts_declaration(&masked[i..]) && ends_unfinished(&masked[s..i]) {
                    // `MACRO(x)` or `MACRO_DECL` alone on its line before a definition:
                    // a statement of its own, not the start of the definition.
                    flush(&mut out, &mut chunk, i, open.namespace());
                    header_end = None;
                }
            }
        }
        line_start = false;
        if chunk.is_none() {
            if c == b';' {
                i += 1;
                continue;
            }
            if c == b'}' && brace == 0 && paren == 0 {
                open.close();
                i += 1;
                continue;
            }
            chunk = Some(i);
            header_end = None;
            nested_if.clear();
        }
        let start = chunk.unwrap_or(i);
        match c {
            b'{' => {
                if brace == 0 && paren == 0 {
                    let head = original[start..i].trim();
                    if is_transparent_block(head) {
                        chunk = None;
                        open.open(head);
                        i += 1;
                        continue;
                    }
                    header_end.get_or_insert(i);
                }
                brace += 1;
            }
            b'}' => {
                if brace == 0 && paren == 0 {
                    flush(&mut out, &mut chunk, i, open.namespace());
                    open.close();
                    i += 1;
                    continue;
                }
                brace -= 1;
                if brace == 0 && paren == 0 {
                    let head = &masked[start..header_end.unwrap_or(i)];
                    if !is_declaration_header(head) {
                        flush(&mut out, &mut chunk, i + 1, open.namespace());
                    }
                }
            }
            b'(' => paren += 1,
            b')' => paren = (paren - 1).max(0),
            b';' if brace == 0 && paren == 0 => {
                flush(&mut out, &mut chunk, i + 1, open.namespace())
            }
            _ => {}
        }
        i += 1;
    }
    flush(&mut out, &mut chunk, b.len(), open.namespace());
    out
}

/// The transparent blocks open around a point of the file: each a named namespace's name
/// or None (`extern "C"`, an anonymous namespace), and the namespace path they make.
#[derive(Default)]
struct OpenBlocks {
    names: Vec<Option<String>>,
    path: String,
}

impl OpenBlocks {
    /// A transparent block whose head is `head` opens.
    fn open(&mut self, head: &str) {
        let name = head
            .strip_prefix("namespace")
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .map(str::to_string);
        self.names.push(name);
        self.path = self.joined();
    }

    /// The innermost one closes (a stray `}` closes nothing).
    fn close(&mut self) {
        if self.names.pop().is_some() {
            self.path = self.joined();
        }
    }

    fn joined(&self) -> String {
        let named: Vec<&str> = self.names.iter().flatten().map(String::as_str).collect();
        named.join("::")
    }

    /// The namespace path (`a::b`), empty outside every named namespace.
    fn namespace(&self) -> String {
        self.path.clone()
    }
}

/// Words that begin a definition when they open a line.
const DECLARATION_STARTERS: &[&str] = &[
    "__global__",
    "__device__",
    "__host__",
    "template",
    "typedef",
    "struct",
    "class",
    "union",
    "enum",
    "__constant__",
    "__shared__",
    "texture",
    "extern",
    "static",
    "void",
];

fn starts_declaration(rest: &str) -> bool {
    let end = rest
        .find(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .unwrap_or(rest.len());
    DECLARATION_STARTERS.contains(&&rest[..end])
}

/// A chunk that ends in `)` or a plain identifier (not a qualifier such as `static`
/// or `__global__`, which continue onto the next line).
fn ends_unfinished(chunk: &str) -> bool {
    let t = chunk.trim_end();
    if t.ends_with(')') {
        // `__launch_bounds__(…)` / `__align__(…)` continue the declaration.
        let mut depth = 0i32;
        let mut open = 0;
        for (i, c) in t.char_indices().rev() {
            match c {
                ')' => depth += 1,
                '(' => {
                    depth -= 1;
                    if depth == 0 {
                        open = i;
                        break;
                    }
                }
                _ => {}
            }
        }
        let before = t[..open].trim_end();
        return !(before.ends_with("__launch_bounds__") || before.ends_with("__align__"));
    }
    // Past the last non-identifier character, whatever its width (found by the fuzzer:
    // a multi-byte character before the word).
    let start = t
        .char_indices()
        .rev()
        .find(|&(_, c)| !c.is_ascii_alphanumeric() && c != '_')
        .map(|(p, c)| p + c.len_utf8())
        .unwrap_or(0);
    let word = &t[start..];
    !word.is_empty()
        && !word.starts_with(|c: char| c.is_ascii_digit())
        && !crate::cuda::builtins::is_keyword(word)
        && word.chars().any(|c| c.is_ascii_uppercase())
        && word.chars().all(|c| !c.is_ascii_lowercase())
}

fn trim_end(b: &[u8], start: usize, mut end: usize) -> usize {
    while end > start && b[end - 1].is_ascii_whitespace() {
        end -= 1;
    }
    end
}

/// End of the directive starting at `i` (exclusive, before the newline), following
/// backslash-newline continuations.
fn directive_end(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i] != b'\n' {
        if b[i] == b'\\' {
            // `\` then optional `\r`, then newline: the directive goes on.
            let mut j = i + 1;
            if b.get(j) == Some(&b'\r') {
                j += 1;
            }
            if b.get(j) == Some(&b'\n') {
                i = j + 1;
                continue;
            }
        }
        i += 1;
    }
    i
}

/// `if`, `define`, … of a directive's text.
pub fn directive_word(text: &str) -> &str {
    let t = text.trim_start().trim_start_matches('#').trim_start();
    let end = t
        .find(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .unwrap_or(t.len());
    &t[..end]
}

fn is_transparent_block(head: &str) -> bool {
    if let Some(rest) = head.strip_prefix("extern") {
        return rest.trim() == "\"C\"" || rest.trim() == "\"C++\"";
    }
    if let Some(rest) = head.strip_prefix("namespace") {
        let rest = rest.trim();
        return rest.is_empty() || rest.chars().all(|c| c.is_alphanumeric() || c == '_');
    }
    false
}

/// Whether a chunk whose header (text before its first top-level `{`) is `head` goes
/// on to a `;` after its closing brace: types, typedefs and initialized variables do,
/// functions do not.
pub fn is_declaration_header(head: &str) -> bool {
    let mut depth = 0i32;
    // A default in `template <int N = 256>` is not an initializer (llm.c's encoder.cuh).
    for c in strip_template_prefix(head).chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            '=' if depth == 0 => return true,
            _ => {}
        }
    }
    // A template header may name parameters before the kind word: look at the
    // words after the closing `>` of `template<…>`.
    let first_word = idents(strip_template_prefix(head))
        .into_iter()
        .map(|t| t.text)
        .find(|w| {
            !matches!(
                *w,
                "static" | "const" | "extern" | "__device__" | "__host__" | "volatile" | "inline"
            )
        });
    matches!(
        first_word,
        Some("typedef" | "struct" | "class" | "union" | "enum")
    )
}

/// `head` without a leading `template < … >`.
pub fn strip_template_prefix(head: &str) -> &str {
    let t = head.trim_start();
    let Some(rest) = t.strip_prefix("template") else {
        return t;
    };
    let rest = rest.trim_start();
    if !rest.starts_with('<') {
        return t;
    }
    let mut depth = 0i32;
    for (i, c) in rest.char_indices() {
        match c {
            '<' => depth += 1,
            '>' => {
                depth -= 1;
                if depth == 0 {
                    return strip_template_prefix(&rest[i + 1..]);
                }
            }
            _ => {}
        }
    }
    t
}

/// One identifier in masked text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ident<'a> {
    pub text: &'a str,
    pub offset: usize,
    /// Preceded by `.`, `->` or `::` (a member or a qualified name, not a free name).
    pub member: bool,
    /// On an `#if`/`#ifdef`/`#elif` line: a macro that may be defined nowhere.
    pub in_condition: bool,
}

/// Identifiers in masked text (numbers such as `1.0f` or `0x1F` yield none).
/// Directive names (`#pragma`, `#include` lines) are skipped.
pub fn idents(masked: &str) -> Vec<Ident<'_>> {
    let b = masked.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let mut line_start = true;
    // End of the `#if`-family directive being scanned.
    let mut cond_end = 0;
    while let Some(c) = next_nonblank(b, &mut i, &mut line_start) {
        if c == b'#' && line_start {
            // `#pragma …`, `#include …`, `#error …` carry no references; the condition
            // of `#if`/`#ifdef`/`#elif` and a `#define` body do.
            let end = directive_end(b, i);
            let word = directive_word(&masked[i..end]);
            let skip_all = matches!(
                word,
                "pragma" | "include" | "error" | "warning" | "line" | "undef"
            );
            let word_end = masked[i..end]
                .find(word)
                .map(|p| i + p + word.len())
                .unwrap_or(i + 1);
            if skip_all {
                i = end;
                continue;
            }
            if matches!(word, "if" | "ifdef" | "ifndef" | "elif") {
                cond_end = end;
            }
            i = word_end;
            line_start = false;
            continue;
        }
        line_start = false;
        if c.is_ascii_digit() || (c == b'.' && b.get(i + 1).is_some_and(|d| d.is_ascii_digit())) {
            // A pp-number: digits, letters, `.`, `_`, and signs after an exponent.
            let mut j = i + 1;
            while j < b.len() {
                let d = b[j];
                let sign =
                    (d == b'+' || d == b'-') && matches!(b[j - 1], b'e' | b'E' | b'p' | b'P');
                if d.is_ascii_alphanumeric() || d == b'.' || d == b'_' || d == b'\'' || sign {
                    j += 1;
                } else {
                    break;
                }
            }
            i = j;
            continue;
        }
        // Non-ASCII bytes (a byte-order mark, a stray symbol) separate tokens.
        if c.is_ascii_alphabetic() || c == b'_' {
            let mut j = i + 1;
            while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
                j += 1;
            }
            let member = preceded_by_member(b, i);
            out.push(Ident {
                text: &masked[i..j],
                offset: i,
                member,
                in_condition: i < cond_end,
            });
            i = j;
            continue;
        }
        i += 1;
    }
    out
}

/// Names written qualified by the namespace `ns` in masked text (`std::uint32_t` gives
/// `uint32_t` for `std`), in order, without repeats; `cuda::std::x` is not `std::x`.
pub fn qualified_names<'a>(masked: &'a str, ns: &str) -> Vec<&'a str> {
    let ids = idents(masked);
    let mut out: Vec<&str> = Vec::new();
    for w in ids.windows(2) {
        let between = &masked[w[0].offset + w[0].text.len()..w[1].offset];
        if w[0].text == ns && !w[0].member && between.trim() == "::" && !out.contains(&w[1].text) {
            out.push(w[1].text);
        }
    }
    out
}

fn preceded_by_member(b: &[u8], i: usize) -> bool {
    let mut k = i;
    while k > 0 && matches!(b[k - 1], b' ' | b'\t' | b'\n' | b'\r') {
        k -= 1;
    }
    if k == 0 {
        return false;
    }
    match b[k - 1] {
        b'.' => true,
        b'>' => k >= 2 && b[k - 2] == b'-',
        b':' => k >= 2 && b[k - 2] == b':',
        _ => false,
    }
}

/// 1-based line of a byte offset.
pub fn line_of(text: &str, offset: usize) -> u32 {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&c| c == b'\n')
        .count() as u32
        + 1
}

/// Precomputed line starts for fast offset → line lookups.
pub struct Lines(Vec<usize>);

impl Lines {
    pub fn new(text: &str) -> Self {
        let mut v = vec![0];
        v.extend(
            text.bytes()
                .enumerate()
                .filter(|(_, c)| *c == b'\n')
                .map(|(i, _)| i + 1),
        );
        Lines(v)
    }
    /// 1-based line of a byte offset.
    pub fn line(&self, offset: usize) -> u32 {
        match self.0.binary_search(&offset) {
            Ok(i) => i as u32 + 1,
            Err(i) => i as u32,
        }
    }
}

const OPERATORS: &[&str] = &[
    "<<=", ">>=", "...", "->*", "<<", ">>", "->", "++", "--", "<=", ">=", "==", "!=", "&&", "||",
    "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "::", "##",
];

/// Token-normalized text (comments and whitespace removed): used to mark identical pairs.
pub fn normalized_tokens(source: &str) -> Vec<String> {
    let masked = mask(source);
    let b = masked.as_bytes();
    let src = source.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() || c == b'\\' && b.get(i + 1) == Some(&b'\n') {
            i += 1;
            continue;
        }
        let start = i;
        if c == b'"' || c == b'\'' {
            // Literal contents are blanked in the mask: find the closing quote there,
            // take the text from the original.
            let mut j = i + 1;
            while j < b.len() && b[j] != c && b[j] != b'\n' {
                j += 1;
            }
            i = (j + 1).min(b.len());
        } else if c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80 {
            let mut j = i + 1;
            while j < b.len() {
                let d = b[j];
                let number_part = c.is_ascii_digit()
                    && (d == b'.' || ((d == b'+' || d == b'-') && matches!(b[j - 1], b'e' | b'E')));
                if d.is_ascii_alphanumeric() || d == b'_' || d >= 0x80 || number_part {
                    j += 1;
                } else {
                    break;
                }
            }
            i = j;
        } else if let Some(op) = OPERATORS.iter().find(|op| masked[i..].starts_with(**op)) {
            i += op.len();
        } else {
            i += 1;
            while i < b.len() && !masked.is_char_boundary(i) {
                i += 1;
            }
        }
        out.push(String::from_utf8_lossy(&src[start..i]).into_owned());
    }
    out
}

/// Whether the code synchronizes a whole grid through cooperative groups:
/// `this_grid().sync()`, or `.sync()` / `sync(…)` on a name bound to a grid group
/// (`cg::grid_group grid = cg::this_grid();`, `auto g = this_grid();`, a `grid_group`
/// parameter). Such a kernel must be launched cooperatively (`cuLaunchCooperativeKernel`):
/// a plain launch fails at the sync.
pub fn syncs_grid(text: &str) -> bool {
    // Every form below names `this_grid` or `grid_group`: most kernels (which say
    // `gridDim`) are answered without masking their text (`harness check` asks per launch).
    if !text.contains("this_grid") && !text.contains("grid_group") {
        return false;
    }
    let m = mask(text);
    let ids = idents(&m);
    // What follows an identifier, blanks skipped.
    let after = |id: &Ident| m[id.offset + id.text.len()..].trim_start();
    let calls_sync = |rest: &str| {
        rest.strip_prefix('.')
            .map(str::trim_start)
            .and_then(|r| r.strip_prefix("sync"))
            .map(str::trim_start)
            .is_some_and(|r| r.starts_with('('))
    };
    let mut grids: Vec<&str> = Vec::new();
    for (i, id) in ids.iter().enumerate() {
        match id.text {
            // `this_grid().sync()`
            "this_grid" => {
                let rest = after(id);
                if let Some(close) = rest.strip_prefix('(').map(str::trim_start) {
                    if let Some(r) = close.strip_prefix(')') {
                        if calls_sync(r.trim_start()) {
                            return true;
                        }
                    }
                }
                // `auto g = this_grid()` / `grid_group g = cg::this_grid()`: the name two or
                // three identifiers back, before the `=`.
                for back in ids[..i].iter().rev().take(3) {
                    let gap = &m[back.offset + back.text.len()..id.offset];
                    if gap.trim_start().starts_with('=') {
                        grids.push(back.text);
                        break;
                    }
                }
            }
            // `grid_group g` (a declaration or a parameter)
            "grid_group" => {
                if let Some(n) = ids.get(i + 1) {
                    let gap = &m[id.offset + id.text.len()..n.offset];
                    if gap
                        .chars()
                        .all(|c| c.is_whitespace() || c == '&' || c == '*')
                    {
                        grids.push(n.text);
                    }
                }
            }
            _ => {}
        }
    }
    ids.iter().enumerate().any(|(i, id)| {
        (grids.contains(&id.text) && !id.member && calls_sync(after(id)))
            // `cg::sync(grid)`
            || (id.text == "sync"
                && ids
                    .get(i + 1)
                    .is_some_and(|n| grids.contains(&n.text) && {
                        let gap = &m[id.offset + id.text.len()..n.offset];
                        gap.trim() == "("
                    }))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matching_open_mirrors_matching() {
        let t = "f(a, (b)) + g(]";
        assert_eq!(matching_open(t, 8, b'(', b')'), Some(1));
        assert_eq!(matching(t, 1, b'(', b')'), Some(8));
        assert_eq!(matching_open(t, 7, b'(', b')'), Some(5));
        // Not a close at `close`, never opened, or past the end.
        assert_eq!(matching_open(t, 3, b'(', b')'), None);
        assert_eq!(matching_open(") )", 2, b'(', b')'), None);
        assert_eq!(matching_open(t, 99, b'(', b')'), None);
    }

    #[test]
    fn enclosing_open_finds_the_group_around_a_position() {
        let t = "x; f(a, g(b), c";
        assert_eq!(enclosing_open(t, t.len(), b'(', b')', b";"), Some(4));
        assert_eq!(enclosing_open(t, 11, b'(', b')', b";"), Some(9));
        // A stop byte at any depth, or no open group.
        assert_eq!(enclosing_open(t, 2, b'(', b')', b";"), None);
        assert_eq!(enclosing_open("a) b", 4, b'(', b')', b""), None);
        assert_eq!(enclosing_open(t, 99, b'(', b')', b""), Some(4));
        let b = "{ a { b } { c } ";
        assert_eq!(enclosing_opens(b, 13, b'{', b'}'), vec![10, 0]);
        assert_eq!(enclosing_opens(b, b.len(), b'{', b'}'), vec![0]);
        assert_eq!(enclosing_opens("} {", 3, b'{', b'}'), vec![2]);
    }

    #[test]
    fn depths_and_the_top_level() {
        let d: Vec<i32> = depths("(a]))", b"([", b")]").map(|x| x.2).collect();
        assert_eq!(d, [1, 1, 0, -1, -2]);
        let t = "a+(b+c)+d) +e";
        let plus: Vec<usize> = top_level(t, b"(", b")")
            .filter(|&(_, b)| b == b'+')
            .map(|x| x.0)
            .collect();
        // Not inside the group, nor after the unmatched `)`.
        assert_eq!(plus, [1, 7]);
        assert_eq!(find_top_level("f(a, b), c", b',', b"(", b")"), Some(7));
        assert_eq!(find_top_level("f(a, b)", b',', b"(", b")"), None);
        assert_eq!(find_top_level("é, x", b',', b"(", b")"), Some(2));
    }

    #[test]
    fn split_top_level_commas_keeps_groups_whole() {
        assert_eq!(
            split_top_level_commas("T<a, b>, f(x, y) , [1,2],", b"<([", b">)]"),
            ["T<a, b>", " f(x, y) ", " [1,2]", ""]
        );
        assert_eq!(split_top_level_commas("", b"(", b")"), [""]);
        assert_eq!(split_top_level_commas("a), b, c", b"(", b")"), ["a), b, c"]);
    }

    #[test]
    fn comment_end_finds_both_kinds_and_unclosed_ones() {
        let t = b"a // x\nb /* y */c /* open";
        assert_eq!(comment_end(t, 0), None);
        assert_eq!(comment_end(t, 2), Some(6));
        assert_eq!(t[6], b'\n');
        assert_eq!(comment_end(t, 9), Some(16));
        assert_eq!(t[16], b'c');
        assert_eq!(comment_end(t, 18), Some(t.len()));
    }

    #[test]
    fn mask_blanks_comments_and_literals_keeping_offsets() {
        let t = "a /* x{ */ b // y}\n\"s{\" 'c' é";
        let m = mask(t);
        assert_eq!(m.len(), t.len());
        assert_eq!(m, "a          b      \n\"  \" ' ' é");
    }

    fn pieces(t: &str) -> Vec<(PieceKind, &str)> {
        let m = mask(t);
        split_top_level(&m, t)
            .into_iter()
            .map(|p| (p.kind, &t[p.start..p.end]))
            .collect()
    }

    #[test]
    fn splits_functions_types_and_directives() {
        let t = "#define A 1\nstruct S { int a; } s;\n__global__ void k(int *x) { if (1) { x[0] = 1; } }\nint g = 3;\ntypedef struct {\n int b;\n} T;\n";
        let want = [
            "#define A 1",
            "struct S { int a; } s;",
            "__global__ void k(int *x) { if (1) { x[0] = 1; } }",
            "int g = 3;",
            "typedef struct {\n int b;\n} T;",
        ];
        let kinds: Vec<PieceKind> = pieces(t).iter().map(|p| p.0).collect();
        assert_eq!(kinds[0], PieceKind::Directive);
        assert!(
            kinds[1..].iter().all(|k| *k == PieceKind::Chunk),
            "{kinds:?}"
        );
        assert_eq!(pieces(t).iter().map(|p| p.1).collect::<Vec<_>>(), want);
    }

    #[test]
    fn qualified_names_of_one_namespace() {
        let m = mask("std::uint32_t a; cuda::std::int8_t b; cub::BlockReduce<float, 128> r; std :: conditional<true, int, int>::type c; std::uint32_t d; // std::min\n");
        assert_eq!(qualified_names(&m, "std"), ["uint32_t", "conditional"]);
        assert_eq!(qualified_names(&m, "cub"), ["BlockReduce"]);
    }

    #[test]
    fn extern_c_and_namespace_blocks_are_transparent() {
        let t = "extern \"C\" {\n__global__ void k() { }\n}\nnamespace ns { __device__ int f() { return 1; } }";
        assert_eq!(
            pieces(t),
            [
                (PieceKind::Chunk, "__global__ void k() { }"),
                (PieceKind::Chunk, "__device__ int f() { return 1; }"),
            ]
        );
    }

    /// Each chunk knows the named namespaces around it; `extern "C"` and anonymous
    /// namespaces add no name, and a stray `}` at file scope closes nothing.
    #[test]
    fn chunks_know_the_named_namespaces_around_them() {
        let t = "namespace a { int x; namespace b { extern \"C\" { int y; } } namespace { int z; } }\n}\nint w;\nnamespace c { int v; }";
        let m = mask(t);
        let got: Vec<(&str, String)> = split_top_level(&m, t)
            .into_iter()
            .map(|p| (&t[p.start..p.end], p.namespace))
            .collect();
        let want = [
            ("int x;", "a"),
            ("int y;", "a::b"),
            ("int z;", "a"),
            ("int w;", ""),
            ("int v;", "c"),
        ];
        assert_eq!(
            got,
            want.iter()
                .map(|(c, n)| (*c, n.to_string()))
                .collect::<Vec<_>>()
        );
    }

    #[test]
    fn nested_if_branches_opening_braces_count_once() {
        let t = "__global__ void k(int n) {\n#ifdef A\n for (;;) {\n#else\n while (1) {\n#endif\n n++; }\n}\n#define X 1\n";
        let p = pieces(t);
        assert_eq!(p.len(), 2, "{p:?}");
        assert_eq!(p[1], (PieceKind::Directive, "#define X 1"));
    }

    #[test]
    fn directive_continuations_and_braces_in_macros() {
        let t = "#define M(x) { \\\n  x; }\nvoid f() {}\n";
        let p = pieces(t);
        assert_eq!(p[0], (PieceKind::Directive, "#define M(x) { \\\n  x; }"));
        assert_eq!(p[1], (PieceKind::Chunk, "void f() {}"));
    }

    #[test]
    fn macro_lines_before_definitions_are_split_off() {
        let t = "__launch_bounds__(64, MIN(2, 8))\n__global__ void lb() {}\nDECLARE(x)\n__global__ void k() {}\nMAGIC\nvoid f() {}\n__global__\nvoid g() {}\ntemplate <int N>\n__device__ int h() { return N; }";
        let p = pieces(t);
        let texts: Vec<&str> = p.iter().map(|x| x.1).collect();
        assert_eq!(
            texts,
            vec![
                "__launch_bounds__(64, MIN(2, 8))\n__global__ void lb() {}",
                "DECLARE(x)",
                "__global__ void k() {}",
                "MAGIC",
                "void f() {}",
                "__global__\nvoid g() {}",
                "template <int N>\n__device__ int h() { return N; }"
            ]
        );
    }

    #[test]
    fn idents_skip_numbers_members_and_pragmas() {
        let m = mask("a.b + c->d + ns::e + 1.0f + 0x1F + 2e-5 + f\n#pragma unroll\n#if X\n");
        let v: Vec<_> = idents(&m)
            .iter()
            .filter(|i| !i.member)
            .map(|i| i.text)
            .collect();
        assert_eq!(v, vec!["a", "c", "ns", "f", "X"]);
    }

    #[test]
    fn normalized_tokens_ignore_comments_and_spacing() {
        let a = normalized_tokens("int  a=b<<2; // c\n/* d */ x += 1.5e-3f;");
        let b = normalized_tokens("int a = b << 2;\n\nx+=1.5e-3f;");
        assert_eq!(a, b);
        assert_eq!(a[..4], ["int", "a", "=", "b"]);
        assert_ne!(a, normalized_tokens("int a = b << 3; x += 1.5e-3f;"));
        assert_eq!(normalized_tokens("s = \"a  b\";")[2], "\"a  b\"");
    }

    #[test]
    fn lines_match_line_of() {
        let t = "a\nbb\n\nc";
        let l = Lines::new(t);
        for off in 0..t.len() {
            assert_eq!(l.line(off), line_of(t, off), "offset {off}");
        }
    }

    #[test]
    fn declaration_headers() {
        assert!(is_declaration_header("struct S "));
        assert!(is_declaration_header("template <typename T> struct S "));
        assert!(is_declaration_header("__constant__ float c[3] = "));
        assert!(is_declaration_header("typedef struct "));
        assert!(!is_declaration_header("__global__ void k(int a = 3) "));
        // A template parameter default is no initializer (llm.c encoder.cuh).
        assert!(!is_declaration_header(
            "template <int BLOCK_SIZE=256>\n__global__ void k(float *d) "
        ));
        assert!(!is_declaration_header(
            "template <class T> __device__ T f(T x) "
        ));
    }

    #[test]
    fn grid_syncs_are_found_and_block_syncs_are_not() {
        for code in [
            "namespace cg = cooperative_groups;\n__global__ void k(float *a) { cg::grid_group grid = cg::this_grid(); a[0] = 1; grid.sync(); }",
            "__global__ void k(float *a) { auto g = this_grid(); g.sync(); }",
            "__global__ void k(float *a) { cooperative_groups::this_grid().sync(); }",
            "__device__ void phase(cg::grid_group &gg) { gg.sync(); }",
            "__global__ void k() { cg::grid_group grid = cg::this_grid(); cg::sync(grid); }",
        ] {
            assert!(syncs_grid(code), "{code}");
        }
        for code in [
            "__global__ void k(float *a) { cg::thread_block b = cg::this_thread_block(); b.sync(); }",
            // A grid group used only for its rank and size: any launch serves.
            "__global__ void k(float *a) { cg::grid_group g = cg::this_grid(); a[g.thread_rank()] = g.size(); }",
            "__global__ void k(float *a) { /* grid.sync() */ __syncthreads(); }",
            "__global__ void k(int grid) { grid_dim(grid); }",
        ] {
            assert!(!syncs_grid(code), "{code}");
        }
    }
}
