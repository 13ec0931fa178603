//! The front end's one tree-sitter parser and its one walk, beneath everything else in
//! `cuda`: the index, the query walks and the whole-text view (`syntax`) all read trees
//! through these, so none of them needs another.

use std::cell::RefCell;
use tree_sitter::{Node, Parser, Tree};

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
