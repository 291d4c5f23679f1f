//! `cargo xtask import-loops`: module import loops inside each crate.
//!
//! An edge A -> B means module A names an item of module B: a `use` or a
//! path through `crate::`, `super::`, `self::` or a child module's name,
//! resolved to the longest module prefix that exists. `mod b;` is not an
//! edge; `pub use b::Thing;` is. A loop is a strongly connected set of more
//! than one module. `#[cfg(test)]` items and statements (the test modules,
//! test-only hooks) are skipped: they are not part of a crate's layering.

use crate::util::root;
use anyhow::{Context, Result, bail};
use proc_macro2::{TokenStream, TokenTree};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use syn::visit::{self, Visit};

/// The crates checked, relative to the workspace root.
const CRATES: &[&str] = &[
    "abi",
    "boards",
    "core",
    "device-fpga",
    "model-fpga",
    "host-bridge",
    "delegate",
    "link-host",
    "plugin-fpga",
    "examples/device-npu",
    "examples/plugin-npu",
    "firmware",
];

/// A module's path from its crate root (`[]` is the root).
type Mod = Vec<String>;

/// A crate's modules (each with its own items, less inline child modules).
type Modules = BTreeMap<Mod, Vec<syn::Item>>;

/// `cargo xtask import-loops`: fails if any crate has a loop.
pub fn run() -> Result<()> {
    let mut root_files = Vec::new();
    for krate in CRATES {
        root_files.extend(roots(&root().join(krate).join("src"))?);
    }
    // A thread per crate root: parsing is most of the time.
    let reports: Vec<_> = std::thread::scope(|s| {
        let threads: Vec<_> = root_files.iter().map(|f| s.spawn(|| report(f))).collect();
        threads.into_iter().map(|t| t.join()).collect()
    });
    let mut total = 0;
    for report in reports {
        let (loops, text) = report.map_err(|_| anyhow::anyhow!("a crate's check panicked"))??;
        print!("{text}");
        total += loops;
    }
    if total > 0 {
        bail!("{total} import loops (README.md, \"Crates\": imports point one way)");
    }
    Ok(())
}

/// One crate root's loop count, and its report.
fn report(root_file: &Path) -> Result<(usize, String)> {
    let modules = load(root_file)?;
    let edges = edges(&modules);
    let loops = loops(&edges);
    let name = root_file.strip_prefix(root())?.display();
    let head = format!("{name}: {} modules, {} loops\n", modules.len(), loops.len());
    Ok((loops.len(), head + &describe(&loops, &edges)))
}

/// The crate roots under `src`: `lib.rs`, `main.rs`, `bin/*.rs`.
fn roots(src: &Path) -> Result<Vec<PathBuf>> {
    let mut roots: Vec<_> = ["lib.rs", "main.rs"].map(|f| src.join(f)).into();
    if let Ok(bins) = std::fs::read_dir(src.join("bin")) {
        for bin in bins {
            roots.push(bin?.path());
        }
    }
    roots.retain(|p| p.extension().is_some_and(|e| e == "rs") && p.is_file());
    roots.sort();
    Ok(roots)
}

/// The modules of the crate rooted at `root_file`, following `mod x;`.
fn load(root_file: &Path) -> Result<Modules> {
    let mut modules = Modules::new();
    let dir = root_file.parent().context("root file has a directory")?;
    collect(vec![], parse(root_file)?.items, Some(dir), &mut modules)?;
    Ok(modules)
}

fn parse(file: &Path) -> Result<syn::File> {
    let text = std::fs::read_to_string(file).with_context(|| format!("{}", file.display()))?;
    syn::parse_file(&text).with_context(|| format!("parsing {}", file.display()))
}

/// Adds module `path` and its non-test children; `dir` is where its
/// children's files are (`None`: inline modules only, as in the tests).
fn collect(path: Mod, items: Vec<syn::Item>, dir: Option<&Path>, out: &mut Modules) -> Result<()> {
    let mut own = Vec::new();
    for item in items {
        if is_test(&item) {
            continue;
        }
        let syn::Item::Mod(m) = item else {
            own.push(item);
            continue;
        };
        let name = m.ident.to_string();
        let child = [path.clone(), vec![name.clone()]].concat();
        let child_dir = dir.map(|d| d.join(&name));
        let items = match m.content {
            Some((_, items)) => items,
            None => {
                let d = dir.context("`mod x;` outside a file")?;
                let file = [d.join(format!("{name}.rs")), d.join(&name).join("mod.rs")]
                    .into_iter()
                    .find(|f| f.is_file())
                    .with_context(|| format!("no file for `mod {name};` in {}", d.display()))?;
                parse(&file)?.items
            }
        };
        collect(child, items, child_dir.as_deref(), out)?;
    }
    out.insert(path, own);
    Ok(())
}

/// An item under `#[cfg(test)]` or `#[cfg(all(test, ..))]`.
fn is_test(item: &syn::Item) -> bool {
    let attrs = match item {
        syn::Item::Mod(i) => &i.attrs,
        syn::Item::Fn(i) => &i.attrs,
        syn::Item::Use(i) => &i.attrs,
        syn::Item::Impl(i) => &i.attrs,
        syn::Item::Const(i) => &i.attrs,
        syn::Item::Static(i) => &i.attrs,
        syn::Item::Struct(i) => &i.attrs,
        syn::Item::Enum(i) => &i.attrs,
        syn::Item::Macro(i) => &i.attrs,
        _ => return false,
    };
    test_only(attrs)
}

/// A statement under `#[cfg(test)]` (its expression's attributes, for the
/// common expressions).
fn is_test_stmt(stmt: &syn::Stmt) -> bool {
    use syn::Expr;
    let attrs = match stmt {
        syn::Stmt::Local(l) => &l.attrs,
        syn::Stmt::Macro(m) => &m.attrs,
        syn::Stmt::Item(i) => return is_test(i),
        syn::Stmt::Expr(e, _) => match e {
            Expr::If(e) => &e.attrs,
            Expr::Block(e) => &e.attrs,
            Expr::Call(e) => &e.attrs,
            Expr::MethodCall(e) => &e.attrs,
            Expr::Macro(e) => &e.attrs,
            Expr::Unsafe(e) => &e.attrs,
            Expr::Assign(e) => &e.attrs,
            _ => return false,
        },
    };
    test_only(attrs)
}

fn test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.meta.require_list().is_ok_and(|l| {
                let cfg = l.tokens.to_string();
                cfg == "test" || cfg.starts_with("all (test ,")
            })
    })
}

/// Every edge, with the first path that made it.
fn edges(modules: &Modules) -> BTreeMap<(Mod, Mod), String> {
    let mut edges = BTreeMap::new();
    for (module, items) in modules {
        let mut paths = Paths(Vec::new());
        for item in items {
            paths.visit_item(item);
        }
        for path in paths.0 {
            if let Some(to) = resolve(modules, module, &path)
                && to != *module
            {
                edges
                    .entry((module.clone(), to))
                    .or_insert_with(|| path.join("::"));
            }
        }
    }
    edges
}

/// The module a path in `module` names an item of (or is), if in the crate.
fn resolve(modules: &Modules, module: &Mod, path: &[String]) -> Option<Mod> {
    let (mut target, rest) = match path.first()?.as_str() {
        "crate" => (vec![], &path[1..]),
        "self" => (module.clone(), &path[1..]),
        "super" => {
            let ups = path.iter().take_while(|s| *s == "super").count();
            (
                module[..module.len().checked_sub(ups)?].to_vec(),
                &path[ups..],
            )
        }
        first if modules.contains_key(&[&module[..], &[first.to_string()]].concat()) => {
            (module.clone(), path)
        }
        _ => return None,
    };
    target.extend(rest.iter().cloned());
    while !modules.contains_key(&target) {
        target.pop()?;
    }
    Some(target)
}

/// The paths an item names: `use` trees, path expressions and types, and
/// `a::b` runs in macro tokens (`format!`, `$crate::`).
struct Paths(Vec<Vec<String>>);

impl Paths {
    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => self.use_leaf(prefix, &n.ident),
            syn::UseTree::Rename(r) => self.use_leaf(prefix, &r.ident),
            syn::UseTree::Glob(_) => self.0.push(prefix.clone()),
            syn::UseTree::Group(g) => g.items.iter().for_each(|t| self.use_tree(prefix, t)),
        }
    }

    fn use_leaf(&mut self, prefix: &[String], ident: &syn::Ident) {
        let mut path = prefix.to_vec();
        if ident != "self" {
            path.push(ident.to_string());
        }
        self.0.push(path);
    }

    fn tokens(&mut self, tokens: TokenStream) {
        let mut run: Vec<String> = Vec::new();
        let mut colons = 0;
        for token in tokens {
            match token {
                TokenTree::Ident(i) if run.is_empty() || colons == 2 => {
                    run.push(i.to_string());
                    colons = 0;
                    continue;
                }
                TokenTree::Punct(p) if p.as_char() == ':' && !run.is_empty() && colons < 2 => {
                    colons += 1;
                    continue;
                }
                TokenTree::Group(ref g) => self.tokens(g.stream()),
                _ => {}
            }
            if run.len() > 1 {
                self.0.push(std::mem::take(&mut run));
            }
            run.clear();
            colons = 0;
            if let TokenTree::Ident(i) = token {
                run.push(i.to_string());
            }
        }
        if run.len() > 1 {
            self.0.push(run);
        }
    }
}

impl<'a> Visit<'a> for Paths {
    fn visit_item_use(&mut self, u: &'a syn::ItemUse) {
        if u.leading_colon.is_none() {
            self.use_tree(&mut Vec::new(), &u.tree);
        }
    }
    fn visit_path(&mut self, p: &'a syn::Path) {
        if p.leading_colon.is_none() && p.segments.len() > 1 {
            self.0
                .push(p.segments.iter().map(|s| s.ident.to_string()).collect());
        }
        visit::visit_path(self, p);
    }
    fn visit_macro(&mut self, m: &'a syn::Macro) {
        self.visit_path(&m.path);
        self.tokens(m.tokens.clone());
    }
    // `pub(crate)`, `pub(super)`, `pub(in ..)` restrict, they import nothing.
    fn visit_visibility(&mut self, _: &'a syn::Visibility) {}
    fn visit_item_mod(&mut self, _: &'a syn::ItemMod) {}
    fn visit_item(&mut self, item: &'a syn::Item) {
        if !is_test(item) {
            visit::visit_item(self, item);
        }
    }
    fn visit_impl_item_fn(&mut self, f: &'a syn::ImplItemFn) {
        if !test_only(&f.attrs) {
            visit::visit_impl_item_fn(self, f);
        }
    }
    fn visit_stmt(&mut self, stmt: &'a syn::Stmt) {
        if !is_test_stmt(stmt) {
            visit::visit_stmt(self, stmt);
        }
    }
}

/// The strongly connected sets of more than one module (Tarjan).
fn loops(edges: &BTreeMap<(Mod, Mod), String>) -> Vec<Vec<Mod>> {
    struct Tarjan<'a> {
        next: BTreeMap<&'a Mod, Vec<&'a Mod>>,
        index: BTreeMap<&'a Mod, (usize, usize)>,
        stack: Vec<&'a Mod>,
        on_stack: BTreeSet<&'a Mod>,
        found: Vec<Vec<Mod>>,
    }
    impl<'a> Tarjan<'a> {
        fn visit(&mut self, v: &'a Mod) -> usize {
            let i = self.index.len();
            self.index.insert(v, (i, i));
            self.stack.push(v);
            self.on_stack.insert(v);
            let mut low = i;
            for w in self.next.get(v).cloned().unwrap_or_default() {
                low = match self.index.get(w) {
                    None => low.min(self.visit(w)),
                    Some(&(wi, _)) if self.on_stack.contains(w) => low.min(wi),
                    Some(_) => low,
                };
            }
            self.index.insert(v, (i, low));
            if low == i {
                let mut set = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(w);
                    set.push(w.clone());
                    if w == v {
                        break;
                    }
                }
                if set.len() > 1 {
                    set.sort();
                    self.found.push(set);
                }
            }
            low
        }
    }
    let mut t = Tarjan {
        next: BTreeMap::new(),
        index: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for (from, to) in edges.keys() {
        t.next.entry(from).or_default().push(to);
    }
    let nodes: Vec<_> = t.next.keys().copied().collect();
    for v in nodes {
        if !t.index.contains_key(v) {
            t.visit(v);
        }
    }
    t.found.sort();
    t.found
}

fn name(m: &Mod) -> String {
    if m.is_empty() {
        "crate".into()
    } else {
        m.join("::")
    }
}

/// Each loop's modules, and its arrows with the path that made each.
fn describe(loops: &[Vec<Mod>], edges: &BTreeMap<(Mod, Mod), String>) -> String {
    let mut out = String::new();
    for set in loops {
        let names: Vec<_> = set.iter().map(name).collect();
        out += &format!("  loop of {}: {}\n", set.len(), names.join(", "));
        for ((from, to), via) in edges {
            if set.contains(from) && set.contains(to) {
                out += &format!("    {} -> {}  ({via})\n", name(from), name(to));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn modules(src: &str) -> Modules {
        let mut modules = Modules::new();
        collect(
            vec![],
            syn::parse_file(src).unwrap().items,
            None,
            &mut modules,
        )
        .unwrap();
        modules
    }

    fn loop_names(src: &str) -> Vec<Vec<String>> {
        let loops = loops(&edges(&modules(src)));
        loops.iter().map(|l| l.iter().map(name).collect()).collect()
    }

    #[test]
    fn a_child_importing_its_parents_reexport_is_a_loop() {
        let src = "pub use a::Thing; pub struct Other;
                   mod a { use super::Other; pub struct Thing; }";
        assert_eq!(loop_names(src), [["crate", "a"]]);
    }

    #[test]
    fn mod_declarations_and_one_way_imports_are_not_loops() {
        let src = "mod types { pub struct T; }
                   mod a { use crate::types::T; pub fn f(_: T) {} }
                   pub use a::f; pub use types::T;";
        assert!(loop_names(src).is_empty());
    }

    #[test]
    fn paths_resolve_to_the_longest_existing_module() {
        let m = modules("mod a { mod b { pub fn f() {} } }");
        let path = |p: &str| p.split("::").map(String::from).collect::<Vec<_>>();
        let at = |m: &str| path(m);
        assert_eq!(resolve(&m, &at("a"), &path("b::f")), Some(at("a::b")));
        assert_eq!(
            resolve(&m, &at("a::b"), &path("super::super::a::x")),
            Some(at("a"))
        );
        assert_eq!(resolve(&m, &at("a::b"), &path("crate::Z")), Some(vec![]));
        assert_eq!(resolve(&m, &at("a"), &path("std::mem::take")), None);
        assert_eq!(resolve(&m, &Mod::new(), &path("super::x")), None);
    }

    #[test]
    fn expressions_macros_and_long_loops_count_but_tests_and_visibility_do_not() {
        let src = "pub use a::f;
                   mod a { pub fn f() { crate::b::g(); crate::d::x() } }
                   mod b { pub(crate) fn g() { format!(\"{}\", super::c::h()); } }
                   mod c { pub(super) fn h() {} pub fn k() { crate::a::f() }
                           #[cfg(test)] mod tests { use crate::b::g; } }
                   mod d { #[cfg(test)] use crate::a::f;
                           pub fn x() { #[cfg(test)] crate::a::f(); } }
                   mod e { pub fn y() { f::z() } mod f { pub(in crate::e) fn z() {} } }";
        assert_eq!(loop_names(src), [["a", "b", "c"]]);
    }
}
