//! The front end's one tree-sitter parser and its one walk, beneath everything else in
//! `cuda`: the index, the query walks and the whole-text view (`syntax`) all read trees
//! through these, so none of them needs another.

use std::cell::RefCell;
use tree_sitter::{Node, Parser, Point, Range, Tree};

thread_local! {
    static PARSER: RefCell<Parser> = RefCell::new({
        let mut p = Parser::new();
        p.set_language(&tree_sitter_cuda::LANGUAGE.into())
            .expect("tree-sitter-cuda is ABI-compatible with tree-sitter");
        p
    });
}

/// Parse CUDA source (one parser per thread, reused).
pub(crate) fn parse(text: &str) -> Option<Tree> {
    PARSER.with(|p| p.borrow_mut().parse(text, None))
}

/// Parse only the bytes `range` of `text`; nodes keep the whole text's offsets.
pub(crate) fn parse_range(text: &str, range: std::ops::Range<usize>) -> Option<Tree> {
    let point = |b: usize| {
        let before = &text[..b];
        let line = before.rfind('\n').map_or(0, |k| k + 1);
        Point::new(before.matches('\n').count(), b - line)
    };
    let r = Range {
        start_byte: range.start,
        end_byte: range.end,
        start_point: point(range.start),
        end_point: point(range.end),
    };
    PARSER.with(|p| {
        let mut p = p.borrow_mut();
        p.set_included_ranges(&[r]).ok()?;
        let tree = p.parse(text, None);
        // The whole text again for the next parse.
        p.set_included_ranges(&[]).ok()?;
        tree
    })
}

/// Pre-order walk over every node (named and anonymous).
pub fn visit<'t>(root: Node<'t>, f: &mut impl FnMut(Node<'t>)) {
    let mut c = root.walk();
    loop {
        f(c.node());
        if c.goto_first_child() {
            continue;
        }
        loop {
            if c.goto_next_sibling() {
                break;
            }
            if !c.goto_parent() {
                return;
            }
        }
    }
}
