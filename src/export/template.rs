//! The text templates of exported samples: tiny `{{name}}` / `{{#name}}…{{/name}}` files in
//! templates/, embedded at build time and overridable per file from a folder.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Every name a template may use; anything else is a typo and an error at load time.
pub const NAMES: &[&str] = &[
    "benchmark",
    "suite",
    "file",
    "kernel",
    "description",
    "slow_source",
    "code",
    "performance",
    "speedup",
    "ci_low",
    "ci_high",
    "size_set",
    "device",
    "techniques",
    "slow_launch",
    "fast_launch",
    "sizes",
    "fast_interface",
    "optimization",
];

/// The template files, by name, with the built-in text of each.
pub const FILES: &[(&str, &str)] = &[
    ("system.txt", include_str!("../../templates/system.txt")),
    ("user.md", include_str!("../../templates/user.md")),
    ("assistant.md", include_str!("../../templates/assistant.md")),
    (
        "performance.md",
        include_str!("../../templates/performance.md"),
    ),
];

#[derive(Debug, thiserror::Error)]
pub enum TemplateError {
    #[error("template {file}: unknown name `{name}` (known: {})", NAMES.join(", "))]
    UnknownName { file: String, name: String },
    #[error("template {file}: {message}")]
    Syntax { file: String, message: String },
    #[error("template {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

#[derive(Debug, Clone, PartialEq)]
enum Node {
    Text(String),
    Var(String),
    Section(String, Vec<Node>),
}

/// One parsed template file.
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    file: String,
    nodes: Vec<Node>,
}

impl Template {
    pub fn parse(file: &str, text: &str) -> Result<Template, TemplateError> {
        let syntax = |message: String| TemplateError::Syntax {
            file: file.to_string(),
            message,
        };
        // Stack of open sections: (name, nodes collected so far).
        let mut stack: Vec<(String, Vec<Node>)> = vec![(String::new(), Vec::new())];
        let mut rest = text;
        while let Some(start) = rest.find("{{") {
            let before = &rest[..start];
            let after = &rest[start + 2..];
            let end = after
                .find("}}")
                .ok_or_else(|| syntax(format!("unclosed `{{{{` near `{}`", snippet(after))))?;
            let tag = after[..end].trim();
            let mut next = &after[end + 2..];
            let is_section_tag = tag.starts_with('#') || tag.starts_with('/');
            // A section tag alone on its line takes the line break with it, so templates can
            // put tags on their own lines without leaving blank lines behind.
            let offset = text.len() - rest.len() + start;
            let line_start = offset == 0 || text.as_bytes()[offset - 1] == b'\n';
            if is_section_tag && line_start && next.starts_with('\n') {
                next = &next[1..];
            }
            if !before.is_empty() {
                push_text(&mut stack.last_mut().expect("root").1, before);
            }
            if let Some(name) = tag.strip_prefix('#') {
                let name = check_name(file, name.trim())?;
                stack.push((name, Vec::new()));
            } else if let Some(name) = tag.strip_prefix('/') {
                let name = name.trim();
                if stack.len() < 2 {
                    return Err(syntax(format!("`{{{{/{name}}}}}` closes nothing")));
                }
                let (open, body) = stack.pop().expect("len checked");
                if open != name {
                    return Err(syntax(format!("`{{{{/{name}}}}}` closes section `{open}`")));
                }
                stack
                    .last_mut()
                    .expect("root")
                    .1
                    .push(Node::Section(open, body));
            } else {
                let name = check_name(file, tag)?;
                stack.last_mut().expect("root").1.push(Node::Var(name));
            }
            rest = next;
        }
        if !rest.is_empty() {
            push_text(&mut stack.last_mut().expect("root").1, rest);
        }
        if stack.len() != 1 {
            let (open, _) = stack.pop().expect("len checked");
            return Err(syntax(format!("section `{open}` is never closed")));
        }
        Ok(Template {
            file: file.to_string(),
            nodes: stack.pop().expect("root").1,
        })
    }

    /// Fill the template; names absent from `vars` count as empty.
    pub fn render(&self, vars: &BTreeMap<&str, String>) -> String {
        let mut out = String::new();
        render_nodes(&self.nodes, vars, &mut out);
        out
    }

    pub fn file(&self) -> &str {
        &self.file
    }
}

fn snippet(s: &str) -> String {
    s.chars().take(20).collect()
}

fn push_text(nodes: &mut Vec<Node>, text: &str) {
    if let Some(Node::Text(t)) = nodes.last_mut() {
        t.push_str(text);
    } else {
        nodes.push(Node::Text(text.to_string()));
    }
}

fn check_name(file: &str, name: &str) -> Result<String, TemplateError> {
    if NAMES.contains(&name) {
        Ok(name.to_string())
    } else {
        Err(TemplateError::UnknownName {
            file: file.to_string(),
            name: name.to_string(),
        })
    }
}

fn render_nodes(nodes: &[Node], vars: &BTreeMap<&str, String>, out: &mut String) {
    for n in nodes {
        match n {
            Node::Text(t) => out.push_str(t),
            Node::Var(name) => out.push_str(vars.get(name.as_str()).map_or("", |v| v)),
            Node::Section(name, body) => {
                if vars.get(name.as_str()).is_some_and(|v| !v.is_empty()) {
                    render_nodes(body, vars, out);
                }
            }
        }
    }
}

/// The full set of templates one export uses.
#[derive(Debug, Clone)]
pub struct Templates {
    pub system: Template,
    pub user: Template,
    pub assistant: Template,
    pub performance: Template,
    /// Which files came from the override folder (for the dataset card).
    pub overridden: Vec<String>,
}

impl Templates {
    /// The built-in templates, each replaced by `<dir>/<file>` where that file exists.
    pub fn load(dir: Option<&Path>) -> Result<Templates, TemplateError> {
        let mut parsed = BTreeMap::new();
        let mut overridden = Vec::new();
        for (file, builtin) in FILES {
            let text = match dir.map(|d| d.join(file)).filter(|p| p.is_file()) {
                Some(p) => {
                    overridden.push(file.to_string());
                    std::fs::read_to_string(&p)
                        .map_err(|source| TemplateError::Io { path: p, source })?
                }
                None => builtin.to_string(),
            };
            parsed.insert(*file, Template::parse(file, &text)?);
        }
        let mut take = |f: &str| parsed.remove(f).expect("every file parsed");
        Ok(Templates {
            system: take("system.txt"),
            user: take("user.md"),
            assistant: take("assistant.md"),
            performance: take("performance.md"),
            overridden,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&'static str, &str)]) -> BTreeMap<&'static str, String> {
        pairs.iter().map(|(k, v)| (*k, v.to_string())).collect()
    }

    #[test]
    fn sections_on_their_own_lines_leave_no_blank_lines() {
        let t = Template::parse(
            "t",
            "a\n{{#description}}\nD: {{description}}\n{{/description}}\nb {{kernel}}\n",
        )
        .unwrap();
        assert_eq!(t.render(&vars(&[("kernel", "k")])), "a\nb k\n");
        assert_eq!(
            t.render(&vars(&[("kernel", "k"), ("description", "x")])),
            "a\nD: x\nb k\n"
        );
    }

    #[test]
    fn inline_sections_keep_surrounding_text() {
        let t = Template::parse(
            "t",
            "x{{#techniques}}, using {{techniques}}{{/techniques}}.",
        )
        .unwrap();
        assert_eq!(t.render(&vars(&[])), "x.");
        assert_eq!(
            t.render(&vars(&[("techniques", "tiling")])),
            "x, using tiling."
        );
    }

    #[test]
    fn typos_and_bad_nesting_are_errors_naming_the_file() {
        let e = Template::parse("user.md", "{{benchmrk}}")
            .unwrap_err()
            .to_string();
        assert!(e.contains("user.md") && e.contains("benchmrk"), "{e}");
        let e = Template::parse("a.md", "{{#kernel}}x")
            .unwrap_err()
            .to_string();
        assert!(e.contains("never closed"), "{e}");
        let e = Template::parse("a.md", "{{#kernel}}x{{/code}}")
            .unwrap_err()
            .to_string();
        assert!(e.contains("closes section `kernel`"), "{e}");
        let e = Template::parse("a.md", "{{kernel").unwrap_err().to_string();
        assert!(e.contains("unclosed"), "{e}");
    }

    #[test]
    fn builtin_templates_load_and_override_by_file() {
        let t = Templates::load(None).unwrap();
        assert!(t.overridden.is_empty());
        assert!(t
            .system
            .render(&vars(&[]))
            .starts_with("You are a CUDA optimization expert"));
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("system.txt"), "Be fast.").unwrap();
        let t = Templates::load(Some(dir.path())).unwrap();
        assert_eq!(t.overridden, vec!["system.txt".to_string()]);
        assert_eq!(t.system.render(&vars(&[])), "Be fast.");
        // The others are still the built-in ones.
        assert!(t
            .user
            .render(&vars(&[("benchmark", "sgemm")]))
            .contains("from the sgemm benchmark"));
    }
}
