//! Where a kernel came from: the suite's git commit, and the licence governing each file
//! (the nearest LICENSE/COPYING file, overridden by the file's own header).

use crate::record::Licence;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The commit of the git checkout holding `root`, read from `.git` (HEAD, loose refs,
/// packed-refs; worktrees and submodules via `gitdir:`), else from `git rev-parse HEAD`.
pub fn git_commit(root: &Path) -> Option<String> {
    let abs = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    read_git_head(&abs).or_else(|| {
        // Ask git only where it could know more than the files say (a repository whose
        // HEAD we could not read, or GIT_DIR): starting git costs a few ms per run.
        let in_repo = abs.ancestors().any(|d| d.join(".git").exists());
        if !in_repo && std::env::var_os("GIT_DIR").is_none() {
            return None;
        }
        let out = std::process::Command::new("git")
            .arg("-C")
            .arg(root)
            .args(["rev-parse", "HEAD"])
            .stderr(std::process::Stdio::null())
            .output()
            .ok()?;
        let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
        (out.status.success() && is_hash(&s)).then_some(s)
    })
}

fn is_hash(s: &str) -> bool {
    (s.len() == 40 || s.len() == 64) && s.bytes().all(|b| b.is_ascii_hexdigit())
}

fn read_git_head(root: &Path) -> Option<String> {
    let mut dir = Some(root);
    while let Some(d) = dir {
        let dot = d.join(".git");
        if dot.exists() {
            let gitdir = if dot.is_file() {
                let text = std::fs::read_to_string(&dot).ok()?;
                let target = text.trim().strip_prefix("gitdir:")?.trim();
                d.join(target)
            } else {
                dot
            };
            return resolve_head(&gitdir);
        }
        dir = d.parent();
    }
    None
}

fn resolve_head(gitdir: &Path) -> Option<String> {
    // Linked worktrees keep refs in the common dir.
    let common = std::fs::read_to_string(gitdir.join("commondir"))
        .ok()
        .map(|c| gitdir.join(c.trim()))
        .unwrap_or_else(|| gitdir.to_path_buf());
    let head = std::fs::read_to_string(gitdir.join("HEAD")).ok()?;
    let head = head.trim();
    let Some(refname) = head.strip_prefix("ref:").map(str::trim) else {
        return is_hash(head).then(|| head.to_string());
    };
    for base in [gitdir, common.as_path()] {
        if let Ok(h) = std::fs::read_to_string(base.join(refname)) {
            let h = h.trim();
            if is_hash(h) {
                return Some(h.to_string());
            }
        }
    }
    let packed = std::fs::read_to_string(common.join("packed-refs")).ok()?;
    packed.lines().find_map(|l| {
        let (hash, name) = l.split_once(' ')?;
        (name.trim() == refname && is_hash(hash)).then(|| hash.to_string())
    })
}

/// Licence lookup with a cache of LICENSE files per folder (many files share one).
pub struct Licences {
    root: PathBuf,
    by_dir: Mutex<HashMap<PathBuf, Option<Licence>>>,
}

impl Licences {
    pub fn new(root: &Path) -> Self {
        Licences {
            root: root.to_path_buf(),
            by_dir: Mutex::new(HashMap::new()),
        }
    }

    /// The licence governing `rel_path` (root-relative) whose text is `text`.
    pub fn for_file(&self, rel_path: &str, text: &str) -> Option<Licence> {
        let inherited = self.nearest_file(rel_path);
        let header = header_comments(text);
        if let Some(id) = classify(&header) {
            return Some(Licence {
                redistributable: redistributable(&id),
                id,
                source: "header".into(),
                copyright: copyright_line(&header),
            });
        }
        match (copyright_line(&header), inherited) {
            // A copyright header without licence text: the folder's licence still governs
            // when it names the same holder; otherwise nothing says we may redistribute.
            (Some(c), Some(lic)) => {
                let licence_text = self.licence_text(&lic.source).unwrap_or_default();
                if holder_matches(&c, &licence_text) {
                    Some(Licence {
                        copyright: Some(c),
                        ..lic
                    })
                } else {
                    Some(unknown_header(c))
                }
            }
            (Some(c), None) => Some(unknown_header(c)),
            (None, inherited) => inherited,
        }
    }

    fn licence_text(&self, rel: &str) -> Option<String> {
        std::fs::read_to_string(self.root.join(rel)).ok()
    }

    /// The nearest LICENSE/COPYING file from the file's folder up to the suite root.
    fn nearest_file(&self, rel_path: &str) -> Option<Licence> {
        let mut dir = Path::new(rel_path).parent().map(Path::to_path_buf);
        while let Some(d) = dir {
            if let Some(found) = self.in_dir(&d) {
                return found;
            }
            dir = d.parent().map(Path::to_path_buf);
        }
        None
    }

    /// `Some(result)` when the folder has a licence file, `None` to keep walking up.
    fn in_dir(&self, dir: &Path) -> Option<Option<Licence>> {
        if let Some(hit) = self.by_dir.lock().expect("licence cache").get(dir) {
            return hit.clone().map(Some);
        }
        let found = self.scan_dir(dir);
        self.by_dir
            .lock()
            .expect("licence cache")
            .insert(dir.to_path_buf(), found.clone());
        found.map(Some)
    }

    fn scan_dir(&self, dir: &Path) -> Option<Licence> {
        let abs = self.root.join(dir);
        let mut names: Vec<String> = std::fs::read_dir(&abs)
            .ok()?
            .flatten()
            .filter(|e| e.file_type().map(|t| t.is_file()).unwrap_or(false))
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| {
                let u = n.to_ascii_uppercase();
                u.starts_with("LICENSE") || u.starts_with("LICENCE") || u.starts_with("COPYING")
            })
            .collect();
        names.sort();
        let name = names.first()?;
        let rel = if dir.as_os_str().is_empty() {
            name.clone()
        } else {
            format!("{}/{}", dir.to_string_lossy().replace('\\', "/"), name)
        };
        let text = std::fs::read_to_string(abs.join(name)).unwrap_or_default();
        let id = classify(&text).unwrap_or_else(|| "LicenseRef-unknown".to_string());
        Some(Licence {
            redistributable: redistributable(&id),
            id,
            source: rel,
            copyright: copyright_line(&text),
        })
    }
}

fn unknown_header(copyright: String) -> Licence {
    Licence {
        id: "LicenseRef-unknown".into(),
        source: "header".into(),
        copyright: Some(copyright),
        redistributable: false,
    }
}

/// The comments at the top of a file, before the first line of code (preprocessor
/// lines and blank lines do not end the header), at most 300 lines.
pub fn header_comments(text: &str) -> String {
    let mut out = String::new();
    let mut in_block = false;
    for line in text.lines().take(300) {
        let t = line.trim();
        if in_block {
            if let Some(end) = t.find("*/") {
                out.push_str(&t[..end]);
                out.push('\n');
                in_block = false;
                let rest = t[end + 2..].trim();
                if !rest.is_empty() && !rest.starts_with("//") && !rest.starts_with("/*") {
                    break;
                }
            } else {
                out.push_str(t);
                out.push('\n');
            }
            continue;
        }
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        if let Some(c) = t.strip_prefix("//") {
            out.push_str(c);
            out.push('\n');
        } else if let Some(c) = t.strip_prefix("/*") {
            match c.find("*/") {
                Some(end) => {
                    out.push_str(&c[..end]);
                    out.push('\n');
                }
                None => {
                    out.push_str(c);
                    out.push('\n');
                    in_block = true;
                }
            }
        } else {
            break;
        }
    }
    out
}

/// Collapse whitespace and decorations so phrases match across line breaks and
/// comment prefixes (`*cr`, `///`).
fn flat(text: &str) -> String {
    let mut s = String::with_capacity(text.len());
    let mut space = false;
    for c in text.chars() {
        if c.is_alphanumeric() || ".,()-/:\"'+".contains(c) {
            if space && !s.is_empty() {
                s.push(' ');
            }
            space = false;
            s.extend(c.to_lowercase());
        } else {
            space = true;
        }
    }
    s
}

/// The SPDX id of a licence text, when recognised.
pub fn classify(text: &str) -> Option<String> {
    if let Some(pos) = text.find("SPDX-License-Identifier:") {
        let id = text[pos + 24..]
            .split_whitespace()
            .next()
            .unwrap_or("")
            .trim_end_matches("*/");
        if !id.is_empty() {
            return Some(id.to_string());
        }
    }
    let t = flat(text);
    let has = |p: &str| t.contains(p);
    let id = if has("illinois open source license") || has("university of illinois/ncsa") {
        "NCSA"
    } else if has("apache license") && (has("version 2.0") || has("2.0")) {
        "Apache-2.0"
    } else if has("gnu lesser general public license") || has("gnu library general public") {
        if has("version 3") {
            "LGPL-3.0-or-later"
        } else {
            "LGPL-2.1-or-later"
        }
    } else if has("gnu general public license") {
        let later = has("any later version");
        match (has("version 3"), later) {
            (true, true) => "GPL-3.0-or-later",
            (true, false) => "GPL-3.0-only",
            (false, true) => "GPL-2.0-or-later",
            (false, false) => "GPL-2.0-only",
        }
    } else if has("the artistic license") {
        "Artistic-1.0"
    } else if has("redistribution and use in source and binary forms") {
        if has("advertising materials") {
            "BSD-4-Clause"
        } else if has("neither the name") || has("nor the names of") {
            "BSD-3-Clause"
        } else {
            "BSD-2-Clause"
        }
    } else if has("permission is hereby granted, free of charge") {
        // NCSA's grant reads "to deal with the Software"; MIT's "to deal in".
        if has("to deal with the software") {
            "NCSA"
        } else {
            "MIT"
        }
    } else if has("mit license") || has("opensource.org/licenses/mit") {
        "MIT"
    } else if has("permission to use, copy, modify, and/or distribute") {
        "ISC"
    } else if has("boost software license") {
        "BSL-1.0"
    } else if has("nvidia")
        && (has("without an express license agreement")
            || has("subject to nvidia ownership rights"))
    {
        "LicenseRef-NVIDIA-SDK"
    } else if has("educational purpose") && has("without fee") {
        "LicenseRef-educational-use"
    } else {
        return None;
    };
    Some(id.to_string())
}

/// Whether the licence lets a dataset carry the code (with attribution, and for
/// copyleft ones under the same licence).
pub fn redistributable(id: &str) -> bool {
    matches!(
        id,
        "MIT"
            | "NCSA"
            | "Apache-2.0"
            | "BSD-2-Clause"
            | "BSD-3-Clause"
            | "BSD-4-Clause"
            | "ISC"
            | "BSL-1.0"
            | "Zlib"
            | "Artistic-1.0"
            | "Artistic-2.0"
            | "GPL-2.0-only"
            | "GPL-2.0-or-later"
            | "GPL-3.0-only"
            | "GPL-3.0-or-later"
            | "LGPL-2.1-or-later"
            | "LGPL-3.0-or-later"
            | "MPL-2.0"
            | "Unlicense"
            | "CC0-1.0"
    )
}

/// The first line that states a copyright, trimmed.
pub fn copyright_line(text: &str) -> Option<String> {
    text.lines()
        .map(|l| l.trim_matches(|c: char| c.is_whitespace() || "*/#!;-".contains(c)))
        .find(|l| {
            let lower = l.to_ascii_lowercase();
            (lower.contains("copyright") || lower.contains("(c) "))
                && !lower.contains("copyright notice")
                && !lower.contains("copyright holder")
                && !lower.contains("copyright laws")
                && l.chars().any(|c| c.is_ascii_digit())
        })
        .map(|l| l.trim_start_matches("cr").trim().to_string())
}

/// Whether the holder named in a copyright line also appears in the licence text.
fn holder_matches(copyright: &str, licence_text: &str) -> bool {
    let lt = flat(licence_text);
    let words: Vec<String> = flat(copyright)
        .split(' ')
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()).to_string())
        .filter(|w| {
            w.len() > 3
                && !w.chars().all(|c| c.is_ascii_digit() || c == '-')
                && !["copyright", "rights", "reserved", "all"].contains(&w.as_str())
        })
        .collect();
    !words.is_empty() && words.iter().filter(|w| lt.contains(w.as_str())).count() * 2 > words.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIT: &str = "Permission is hereby granted, free of charge, to any person obtaining a copy\nof this software ... to deal\nin the Software without restriction";
    const NCSA: &str = "University of Illinois/NCSA\nOpen Source License\n(C) Copyright 2010 The Board of Trustees of the University of Illinois.\nPermission is hereby granted, free of charge, to any person obtaining a copy of\nthis software ... to deal with\nthe Software without restriction";
    const BSD3: &str = "Redistribution and use in source and binary forms, with or without\nmodification, are permitted ...\n* Neither the name of the copyright holder nor the names of its contributors";

    #[test]
    fn classifies_common_licences() {
        assert_eq!(classify(MIT).as_deref(), Some("MIT"));
        assert_eq!(classify(NCSA).as_deref(), Some("NCSA"));
        assert_eq!(classify(BSD3).as_deref(), Some("BSD-3-Clause"));
        assert_eq!(
            classify("Redistribution and use in source and binary forms are permitted; retain this notice").as_deref(),
            Some("BSD-2-Clause")
        );
        assert_eq!(
            classify("Licensed under the Apache License, Version 2.0 (the \"License\")").as_deref(),
            Some("Apache-2.0")
        );
        assert_eq!(
            classify("under the terms of the GNU General Public License as published by the Free Software Foundation; either version 2 of the License, or (at your option) any later version.").as_deref(),
            Some("GPL-2.0-or-later")
        );
        assert_eq!(
            classify("x\n SPDX-License-Identifier: BSD-2-Clause */").as_deref(),
            Some("BSD-2-Clause")
        );
        assert_eq!(
            classify("MIT License. Read the full licence").as_deref(),
            Some("MIT")
        );
        assert_eq!(classify("just a comment about kernels"), None);
        assert_eq!(
            classify("Copyright 1993-2007 NVIDIA Corporation.\n NOTICE TO USER: This source code is subject to NVIDIA ownership rights under U.S. and international Copyright laws.").as_deref(),
            Some("LicenseRef-NVIDIA-SDK")
        );
        assert!(redistributable("NCSA") && redistributable("BSD-3-Clause"));
        assert!(
            !redistributable("LicenseRef-unknown") && !redistributable("LicenseRef-NVIDIA-SDK")
        );
    }

    #[test]
    fn header_stops_at_code() {
        let src = "/*\n * Copyright 2020 A\n * MIT License\n */\n#include <x.h>\n// more\nint x;\n// Copyright 1999 Later\n";
        let h = header_comments(src);
        assert!(h.contains("Copyright 2020 A") && h.contains("more"), "{h}");
        assert!(!h.contains("Later"), "{h}");
        assert_eq!(copyright_line(&h).as_deref(), Some("Copyright 2020 A"));
    }

    #[test]
    fn nearest_licence_and_header_override() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::write(root.join("LICENSE"), NCSA).unwrap();
        std::fs::write(root.join("a/COPYING"), MIT).unwrap();
        let lic = Licences::new(root);
        // Nearest file wins over the root one.
        let l = lic.for_file("a/b/k.cu", "__global__ void k() {}").unwrap();
        assert_eq!((l.id.as_str(), l.source.as_str()), ("MIT", "a/COPYING"));
        let l = lic.for_file("top.cu", "").unwrap();
        assert_eq!((l.id.as_str(), l.source.as_str()), ("NCSA", "LICENSE"));
        assert!(l.copyright.unwrap().contains("Board of Trustees"));
        // A licence header overrides.
        let l = lic
            .for_file(
                "a/b/k.cu",
                &format!("/*\n Copyright (c) 2021 Someone\n{BSD3}\n*/\nint x;"),
            )
            .unwrap();
        assert_eq!(l.id, "BSD-3-Clause");
        assert_eq!(l.source, "header");
        assert_eq!(l.copyright.as_deref(), Some("Copyright (c) 2021 Someone"));
        // A bare copyright header of the licence's own holder keeps the licence.
        let l = lic
            .for_file("k.cu", "/* (C) Copyright 2012 The Board of Trustees of the\n University of Illinois */\nint x;")
            .unwrap();
        assert_eq!((l.id.as_str(), l.redistributable), ("NCSA", true));
        // ... of another holder: unknown terms, not redistributable.
        let l = lic
            .for_file(
                "k.cu",
                "// Copyright 2009, Some Person, someone@example.org\nint x;",
            )
            .unwrap();
        assert_eq!(
            (l.id.as_str(), l.source.as_str(), l.redistributable),
            ("LicenseRef-unknown", "header", false)
        );
    }

    #[test]
    fn git_commit_from_dot_git() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let git = root.join(".git");
        std::fs::create_dir_all(git.join("refs/heads")).unwrap();
        std::fs::write(git.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        let h = "0123456789abcdef0123456789abcdef01234567";
        std::fs::write(
            git.join("packed-refs"),
            format!("# pack-refs\n{h} refs/heads/main\n"),
        )
        .unwrap();
        std::fs::create_dir_all(root.join("sub")).unwrap();
        assert_eq!(git_commit(&root.join("sub")).as_deref(), Some(h));
        let h2 = "89abcdef0123456789abcdef0123456789abcdef";
        std::fs::write(git.join("refs/heads/main"), format!("{h2}\n")).unwrap();
        assert_eq!(git_commit(root).as_deref(), Some(h2));
        std::fs::write(git.join("HEAD"), format!("{h}\n")).unwrap();
        assert_eq!(git_commit(root).as_deref(), Some(h));
    }
}
