//! `cuda::structs`: the struct definitions of a text, from the front end's one parser
//! (issue 28): `struct P {…};` and `typedef struct [tag] {…} P;`, with their attributes,
//! base classes and members, so a question about a struct's layout is asked of parsed
//! facts, not of a brace scan over text.

use super::host::{per_text, TextCache};
use super::syntax::{single_spaced, text};
use super::tree::visit;
use std::borrow::Cow;
use std::sync::{Arc, LazyLock};
use tree_sitter::Node;

/// One struct definition (a `struct` with a body).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StructDef {
    /// The names it is known by: its tag, then the names a `typedef` of it declares (not
    /// a pointer's: `*PP` of `typedef struct {…} P, *PP;`).
    pub names: Vec<String>,
    /// Its attributes as written: `alignas(16)`, `__attribute__((aligned(8)))` on the
    /// struct or after its body in a `typedef`; CUDA's `__align__(16)` reads as
    /// `alignas  (16)` (the grammar does not know it; the spelling keeps offsets).
    pub attributes: Vec<String>,
    /// Its base classes' clause (`: Base`), whose members come first in its layout.
    pub bases: Option<String>,
    /// Its members in order; comments are none.
    pub members: Vec<Member>,
}

/// One member of a struct body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Member {
    /// A plain data field declaration, `float a, b[2][N];`: its type (qualifiers left
    /// out, spaces single) and each declarator's name and array extents as written, in
    /// source order.
    Field {
        ty: String,
        declarators: Vec<(String, Vec<String>)>,
    },
    /// Anything else, as written without its `;`, spaces single: a pointer, a method, a
    /// bit-field, a static or default-initialized member, a nested type, a field with an
    /// attribute, a preprocessor line.
    Other(String),
}

/// The struct definitions of a text, in document order (nested ones after the one
/// holding them), parsed once per process.
pub fn definitions(src: &str) -> Arc<Vec<StructDef>> {
    static STRUCTS: LazyLock<TextCache<Vec<StructDef>>> = LazyLock::new(Default::default);
    per_text(&STRUCTS, src, |s| {
        let code = align_as_alignas(s);
        // The host index's one parse, unless `__align__` had to be respelled.
        let tree = match &code {
            Cow::Borrowed(_) => super::host::tree(s),
            Cow::Owned(c) => super::syntax::parse(c),
        };
        let mut out = Vec::new();
        visit(tree.root_node(), &mut |n| {
            if n.kind() == "struct_specifier" {
                out.extend(definition(n, &code));
            }
        });
        out
    })
}

/// The first definition of struct `name` in a text ([`definitions`]).
pub fn definition_of(src: &str, name: &str) -> Option<StructDef> {
    let defs = definitions(src);
    let def = defs.iter().find(|d| d.names.iter().any(|n| n == name));
    def.cloned()
}

/// A text with each `__align__` spelled `alignas  `, same length: tree-sitter-cuda reads
/// `struct __align__(16) P {…}` as a function named `__align__`, `alignas(16)` as the
/// struct's qualifier.
fn align_as_alignas(src: &str) -> Cow<'_, str> {
    const ALIGN: &str = "__align__";
    if !src.contains(ALIGN) {
        return Cow::Borrowed(src);
    }
    let masked = super::lex::mask(src);
    let mut out = src.to_string();
    for id in super::lex::idents(&masked) {
        if id.text == ALIGN && !id.member {
            out.replace_range(id.offset..id.offset + ALIGN.len(), "alignas  ");
        }
    }
    Cow::Owned(out)
}

/// Attribute nodes: what a struct, a typedef or a field may carry besides its type.
const ATTRIBUTES: [&str; 4] = [
    "alignas_qualifier",
    "attribute_specifier",
    "attribute_declaration",
    "ms_declspec_modifier",
];

fn definition(n: Node, src: &str) -> Option<StructDef> {
    let body = n.child_by_field_name("body")?;
    let mut names: Vec<String> = n
        .child_by_field_name("name")
        .map(|t| text(t, src).to_string())
        .into_iter()
        .collect();
    let mut attributes = attributes_of(n, src);
    if let Some(td) = n.parent().filter(|p| p.kind() == "type_definition") {
        let mut c = td.walk();
        let declared = td.children_by_field_name("declarator", &mut c);
        let declared: Vec<Node> = declared.collect();
        names.extend(
            declared
                .into_iter()
                .filter(|d| d.kind() == "type_identifier")
                .map(|d| text(d, src).to_string()),
        );
        attributes.extend(attributes_of(td, src));
    }
    let mut c = n.walk();
    let bases = n.children(&mut c).find(|k| k.kind() == "base_class_clause");
    let mut c = body.walk();
    let members = body
        .named_children(&mut c)
        .filter(|m| m.kind() != "comment")
        .map(|m| member(m, src))
        .collect();
    Some(StructDef {
        names,
        attributes,
        bases: bases.map(|b| single_spaced(text(b, src))),
        members,
    })
}

fn attributes_of(n: Node, src: &str) -> Vec<String> {
    let mut c = n.walk();
    let attrs = n
        .children(&mut c)
        .filter(|k| ATTRIBUTES.contains(&k.kind()));
    attrs.map(|a| single_spaced(text(a, src))).collect()
}

/// A member as a plain field, or as written.
fn member(m: Node, src: &str) -> Member {
    let other = || Member::Other(single_spaced(text(m, src).trim_end_matches(';')));
    if m.kind() != "field_declaration" {
        return other();
    }
    let Some(ty) = m.child_by_field_name("type") else {
        return other();
    };
    if !matches!(
        ty.kind(),
        "primitive_type" | "sized_type_specifier" | "type_identifier"
    ) {
        return other();
    }
    let mut declarators = Vec::new();
    let mut c = m.walk();
    for k in m.named_children(&mut c) {
        let mut c2 = m.walk();
        let is_declarator = m
            .children_by_field_name("declarator", &mut c2)
            .any(|d| d == k);
        if is_declarator {
            match plain_declarator(k, src) {
                Some(d) => declarators.push(d),
                None => return other(),
            }
        } else if k != ty && k.kind() != "type_qualifier" {
            // A storage class, an attribute, a bit-field, a default value.
            return other();
        }
    }
    if declarators.is_empty() {
        return other();
    }
    Member::Field {
        ty: single_spaced(text(ty, src)),
        declarators,
    }
}

/// `a` → (`a`, []), `v[2][N]` → (`v`, [`2`, `N`]); `[]` gives `""`; other declarators
/// (pointers, functions, parentheses) None.
fn plain_declarator(mut d: Node, src: &str) -> Option<(String, Vec<String>)> {
    let mut extents = Vec::new();
    while d.kind() == "array_declarator" {
        let size = d.child_by_field_name("size");
        extents.push(size.map_or("", |s| text(s, src)).to_string());
        d = d.child_by_field_name("declarator")?;
    }
    extents.reverse();
    (d.kind() == "field_identifier").then(|| (text(d, src).to_string(), extents))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(ty: &str, ds: &[(&str, &[&str])]) -> Member {
        Member::Field {
            ty: ty.into(),
            declarators: ds
                .iter()
                .map(|(n, e)| (n.to_string(), e.iter().map(|x| x.to_string()).collect()))
                .collect(),
        }
    }

    #[test]
    fn struct_definitions_give_names_attributes_and_members() {
        let src = "typedef struct pt_s {\n  float x; // the first\n  const float y, z;\n} Point, *PPoint;\n\
            struct Cell { double v[2][N]; unsigned int w[]; };\n\
            struct Ptr;\nstruct Ptr *p;\n\
            struct Ptr { float *a; float b : 3; static int c; float d = 0; void f(); };\n\
            struct __align__(16) Wide { float a; };\n\
            typedef struct __align__(8) { float a; } W8;\n\
            typedef struct { float a; } __attribute__((aligned(8))) A8;\n\
            struct alignas(4) A4 : Base { float a; };\n\
            void host() { struct Local { struct Inner { int i; } in; int n; } l; }\n";
        let defs = definitions(src);
        let names: Vec<&[String]> = defs.iter().map(|d| d.names.as_slice()).collect();
        assert_eq!(
            names,
            [
                &["pt_s", "Point"][..],
                &["Cell"],
                &["Ptr"],
                &["Wide"],
                &["W8"],
                &["A8"],
                &["A4"],
                &["Local"],
                &["Inner"],
            ]
        );
        let point = definition_of(src, "Point").unwrap();
        assert_eq!(point, definition_of(src, "pt_s").unwrap());
        assert_eq!(
            point.members,
            [
                field("float", &[("x", &[])]),
                field("float", &[("y", &[]), ("z", &[])])
            ]
        );
        assert!(point.attributes.is_empty() && point.bases.is_none());
        assert_eq!(
            definition_of(src, "Cell").unwrap().members,
            [
                field("double", &[("v", &["2", "N"])]),
                field("unsigned int", &[("w", &[""])])
            ]
        );
        let others: Vec<Member> = ["float *a", "float b : 3", "static int c", "float d = 0"]
            .into_iter()
            .chain(["void f()"])
            .map(|s| Member::Other(s.into()))
            .collect();
        assert_eq!(definition_of(src, "Ptr").unwrap().members, others);
        let attrs = |n: &str| definition_of(src, n).unwrap().attributes;
        assert_eq!(attrs("Wide"), ["alignas (16)"]);
        assert_eq!(attrs("W8"), ["alignas (8)"]);
        assert_eq!(attrs("A8"), ["__attribute__((aligned(8)))"]);
        let a4 = definition_of(src, "A4").unwrap();
        assert_eq!(
            (a4.attributes, a4.bases),
            (vec!["alignas(4)".to_string()], Some(": Base".into()))
        );
        assert_eq!(
            definition_of(src, "Local").unwrap().members,
            [
                Member::Other("struct Inner { int i; } in".into()),
                field("int", &[("n", &[])])
            ]
        );
        assert_eq!(definition_of(src, "Nowhere"), None);
        assert_eq!(definition_of(src, "PPoint"), None);
    }
}
