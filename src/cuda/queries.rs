//! The tree-sitter queries (data in `queries/*.scm`), compiled once.

use std::sync::LazyLock;
use tree_sitter::Query;

fn compile(name: &str, source: &str) -> Query {
    Query::new(&tree_sitter_cuda::LANGUAGE.into(), source)
        .unwrap_or_else(|e| panic!("query {name} does not compile: {e}"))
}

fn capture(q: &Query, name: &str) -> u32 {
    q.capture_index_for_name(name)
        .unwrap_or_else(|| panic!("query lacks capture @{name}"))
}

pub(crate) struct Declarators {
    pub query: Query,
    pub enumerator: u32,
}

pub(crate) static DECLARATORS: LazyLock<Declarators> = LazyLock::new(|| {
    let query = compile("declarators", include_str!("queries/declarators.scm"));
    Declarators {
        enumerator: capture(&query, "enumerator"),
        query,
    }
});

pub(crate) struct Functions {
    pub query: Query,
    pub function: u32,
    pub declarator: u32,
    pub body: u32,
    pub template_params: u32,
}

pub(crate) static FUNCTIONS: LazyLock<Functions> = LazyLock::new(|| {
    let query = compile("functions", include_str!("queries/functions.scm"));
    Functions {
        function: capture(&query, "function"),
        declarator: capture(&query, "declarator"),
        body: capture(&query, "body"),
        template_params: capture(&query, "template_params"),
        query,
    }
});

pub(crate) struct Launches {
    pub query: Query,
    pub kernel: u32,
    pub template_args: u32,
    pub config: u32,
    pub args: u32,
    pub launch: u32,
}

pub(crate) static LAUNCHES: LazyLock<Launches> = LazyLock::new(|| {
    let query = compile("launches", include_str!("queries/launches.scm"));
    Launches {
        kernel: capture(&query, "kernel"),
        template_args: capture(&query, "template_args"),
        config: capture(&query, "config"),
        args: capture(&query, "args"),
        launch: capture(&query, "launch"),
        query,
    }
});

pub(crate) struct Portability {
    pub query: Query,
    pub compound_literal: u32,
}

pub(crate) static PORTABILITY: LazyLock<Portability> = LazyLock::new(|| {
    let query = compile("portability", include_str!("queries/portability.scm"));
    Portability {
        compound_literal: capture(&query, "compound_literal"),
        query,
    }
});

#[cfg(test)]
mod tests {
    /// Every query file compiles against the grammar and has the captures the code reads.
    #[test]
    fn every_query_compiles() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src/cuda/queries");
        let files: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "scm"))
            .collect();
        assert_eq!(
            files.len(),
            4,
            "a new query file must be wired in here: {files:?}"
        );
        for f in &files {
            let src = std::fs::read_to_string(f).unwrap();
            super::compile(&f.display().to_string(), &src);
        }
        let _ = &*super::DECLARATORS;
        let _ = &*super::FUNCTIONS;
        let _ = &*super::LAUNCHES;
        let _ = &*super::PORTABILITY;
    }
}
