//! Property test: random operation sequences applied to an in-memory `Session` and to a
//! tiny independent model (a list of entries, a leaf, labels, a name) must agree on the
//! entries, the leaf, branches, the tree, labels, the name and the context (FORMAT.md
//! section 9) at the leaf and at random entries; a written and reloaded session must give
//! the same entries, tree and context. `PROPTEST_CASES` raises the case count (default 64).

use proptest::prelude::*;
use sessiontree::json::Raw;
use sessiontree::{build_context, Json, LeafArg, Session, SessionTree};
use std::collections::BTreeMap;

#[derive(Clone, Debug)]
enum Op {
    User(String),
    Assistant(String),
    ToolResult(String),
    System(String),
    Custom,
    CustomMessage(String),
    Label(usize, Option<String>),
    SessionInfo(String),
    Compaction(String, Option<usize>),
    BranchSummary(Option<usize>, String),
    ContextEdit(usize, Option<String>),
    Branch(usize),
    ResetLeaf,
}

#[derive(Clone, Debug, PartialEq)]
enum Kind {
    /// A message with this role.
    Msg(&'static str),
    Custom,
    CustomMessage,
    Label,
    SessionInfo,
    /// `systemMessage` fold text, `firstKeptEntryId`.
    Compaction(Option<String>, String),
    BranchSummary,
    /// target, replacement text (`None`: remove).
    ContextEdit(String, Option<String>),
}

#[derive(Clone, Debug)]
struct MEntry {
    id: String,
    parent: Option<String>,
    kind: Kind,
    text: String,
}

#[derive(Default, Debug)]
struct Model {
    entries: Vec<MEntry>,
    leaf: Option<usize>,
    labels: BTreeMap<String, String>,
    name: Option<String>,
}

impl Model {
    fn index(&self, id: &str) -> usize {
        self.entries
            .iter()
            .position(|e| e.id == id)
            .expect("known id")
    }

    fn path(&self, leaf: Option<usize>) -> Vec<usize> {
        let mut out = Vec::new();
        let mut cur = leaf;
        while let Some(i) = cur {
            out.push(i);
            cur = self.entries[i].parent.as_deref().map(|p| self.index(p));
        }
        out.reverse();
        out
    }

    /// FORMAT.md 9.3-9.4 plus edits: (role, text) per message.
    fn context(&self, leaf: Option<usize>) -> Vec<(String, String)> {
        let path = self.path(leaf);
        let c = path
            .iter()
            .rposition(|&i| matches!(self.entries[i].kind, Kind::Compaction(..)));
        let selected: Vec<usize> = match c {
            None => path.clone(),
            Some(ci) => {
                let Kind::Compaction(_, first) = &self.entries[path[ci]].kind else {
                    unreachable!()
                };
                let mut sel = vec![path[ci]];
                if let Some(k) = path[..ci]
                    .iter()
                    .position(|&i| &self.entries[i].id == first)
                {
                    sel.extend(
                        path[k..ci]
                            .iter()
                            .copied()
                            .filter(|&i| self.entries[i].kind != Kind::Msg("system")),
                    );
                }
                sel.extend(&path[ci + 1..]);
                sel
            }
        };
        let mut edits: BTreeMap<&str, &Option<String>> = BTreeMap::new();
        for &i in &selected {
            if let Kind::ContextEdit(t, r) = &self.entries[i].kind {
                edits.insert(t, r);
            }
        }
        let mut out = Vec::new();
        for &i in &selected {
            let e = &self.entries[i];
            let msgs: Vec<(String, String)> = match &e.kind {
                Kind::Msg(role) => vec![(role.to_string(), e.text.clone())],
                Kind::CustomMessage => vec![("custom".into(), e.text.clone())],
                Kind::BranchSummary if !e.text.is_empty() => {
                    vec![("branchSummary".into(), e.text.clone())]
                }
                Kind::Compaction(sys, _) if Some(i) == c.map(|ci| path[ci]) => {
                    let mut v = Vec::new();
                    if let Some(s) = sys {
                        v.push(("system".into(), s.clone()));
                    }
                    v.push(("compactionSummary".into(), e.text.clone()));
                    v
                }
                _ => vec![],
            };
            match edits.get(e.id.as_str()) {
                None => out.extend(msgs),
                Some(None) => {}
                Some(Some(r)) => out.extend(msgs.into_iter().map(|(role, t)| {
                    if matches!(
                        role.as_str(),
                        "user" | "assistant" | "toolResult" | "custom"
                    ) {
                        (role, r.clone())
                    } else {
                        (role, t)
                    }
                })),
            }
        }
        out
    }

    fn fold_system(msgs: &[(String, String)]) -> Option<String> {
        let sys: Vec<&str> = msgs
            .iter()
            .filter(|(r, _)| r == "system")
            .map(|(_, t)| t.as_str())
            .collect();
        if sys.is_empty() {
            return None;
        }
        Some(
            sys.into_iter()
                .filter(|t| !t.is_empty())
                .collect::<Vec<_>>()
                .join("\n\n"),
        )
    }

    fn push(&mut self, id: String, parent: Option<String>, kind: Kind, text: &str) {
        self.entries.push(MEntry {
            id,
            parent,
            kind,
            text: text.to_string(),
        });
        self.leaf = Some(self.entries.len() - 1);
    }

    fn leaf_id(&self) -> Option<String> {
        self.leaf.map(|i| self.entries[i].id.clone())
    }
}

fn text() -> impl Strategy<Value = String> {
    "[a-c ]{0,5}"
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => text().prop_map(Op::User),
        3 => text().prop_map(Op::Assistant),
        2 => text().prop_map(Op::ToolResult),
        1 => text().prop_map(Op::System),
        1 => Just(Op::Custom),
        2 => text().prop_map(Op::CustomMessage),
        1 => (any::<usize>(), proptest::option::of(text())).prop_map(|(t, l)| Op::Label(t, l)),
        1 => "[a\r\n ]{0,5}".prop_map(Op::SessionInfo),
        2 => (text(), proptest::option::of(any::<usize>())).prop_map(|(s, k)| Op::Compaction(s, k)),
        1 => (proptest::option::of(any::<usize>()), text()).prop_map(|(t, s)| Op::BranchSummary(t, s)),
        2 => (any::<usize>(), proptest::option::of(text())).prop_map(|(t, r)| Op::ContextEdit(t, r)),
        2 => any::<usize>().prop_map(Op::Branch),
        1 => Just(Op::ResetLeaf),
    ]
}

fn js(s: &str) -> String {
    Json::string(s).as_str().to_string()
}

fn apply(s: &mut Session, m: &mut Model, op: &Op) {
    let parent = m.leaf_id();
    let n = m.entries.len();
    match op {
        Op::User(t) | Op::Assistant(t) | Op::ToolResult(t) | Op::System(t) => {
            let (role, msg) = match op {
                Op::User(_) => (
                    "user",
                    format!(r#"{{"role":"user","content":{},"timestamp":1}}"#, js(t)),
                ),
                Op::System(_) => (
                    "system",
                    format!(r#"{{"role":"system","content":{},"timestamp":1}}"#, js(t)),
                ),
                Op::Assistant(_) => (
                    "assistant",
                    format!(
                        r#"{{"role":"assistant","content":[{{"type":"text","text":{}}}],"provider":"p","model":"m","timestamp":1}}"#,
                        js(t)
                    ),
                ),
                _ => (
                    "toolResult",
                    format!(
                        r#"{{"role":"toolResult","toolCallId":"c","toolName":"bash","content":[{{"type":"text","text":{}}}],"isError":false,"timestamp":1}}"#,
                        js(t)
                    ),
                ),
            };
            let id = s.append_message(&Json::parse(&msg).unwrap()).unwrap();
            m.push(id, parent, Kind::Msg(role), t);
        }
        Op::Custom => {
            let id = s
                .append_custom_entry("state", Some(&Json::parse("{\"k\":1}").unwrap()))
                .unwrap();
            m.push(id, parent, Kind::Custom, "");
        }
        Op::CustomMessage(t) => {
            let id = s
                .append_custom_message("note", &Json::string(t), true, None)
                .unwrap();
            m.push(id, parent, Kind::CustomMessage, t);
        }
        Op::Label(t, l) => {
            if n == 0 {
                return;
            }
            let target = m.entries[t % n].id.clone();
            let id = s.append_label_change(&target, l.as_deref()).unwrap();
            match l.as_deref() {
                Some(l) if !l.is_empty() => m.labels.insert(target, l.to_string()),
                _ => m.labels.remove(&target),
            };
            m.push(id, parent, Kind::Label, "");
        }
        Op::SessionInfo(name) => {
            let id = s.append_session_info(name).unwrap();
            let mut clean = String::new();
            for c in name.chars() {
                if c == '\r' || c == '\n' {
                    if !clean.ends_with('\u{1}') {
                        clean.push('\u{1}');
                    }
                } else {
                    clean.push(c);
                }
            }
            let clean = clean.replace('\u{1}', " ").trim().to_string();
            m.name = (!clean.is_empty()).then(|| clean.clone());
            m.push(id, parent, Kind::SessionInfo, &clean);
        }
        Op::Compaction(summary, first) => {
            let first_id = first.filter(|_| n > 0).map(|k| m.entries[k % n].id.clone());
            let sys = Model::fold_system(&m.context(m.leaf));
            let id = s
                .append_compaction(summary, first_id.as_deref(), 100.0, None, None, None)
                .unwrap();
            let first_id = first_id.unwrap_or_else(|| id.clone());
            m.push(id, parent, Kind::Compaction(sys, first_id), summary);
        }
        Op::BranchSummary(target, summary) => {
            let target = target
                .filter(|_| n > 0)
                .map(|k| m.entries[k % n].id.clone());
            let id = s
                .branch_with_summary(target.as_deref(), summary, None, None, None)
                .unwrap();
            m.push(id, target, Kind::BranchSummary, summary);
        }
        Op::ContextEdit(t, r) => {
            let editable: Vec<usize> = m
                .path(m.leaf)
                .into_iter()
                .filter(|&i| {
                    matches!(
                        m.entries[i].kind,
                        Kind::Msg("user" | "assistant" | "toolResult") | Kind::CustomMessage
                    )
                })
                .collect();
            if editable.is_empty() {
                return;
            }
            let target = m.entries[editable[t % editable.len()]].id.clone();
            let repl = r
                .as_ref()
                .map(|r| Json::parse(&format!(r#"{{"content":{}}}"#, js(r))).unwrap());
            let id = s.append_context_edit(&target, repl.as_ref()).unwrap();
            m.push(id, parent, Kind::ContextEdit(target, r.clone()), "");
        }
        Op::Branch(k) => {
            if n == 0 {
                return;
            }
            let target = m.entries[k % n].id.clone();
            s.branch(&target).unwrap();
            m.leaf = Some(k % n);
        }
        Op::ResetLeaf => {
            s.reset_leaf();
            m.leaf = None;
        }
    }
}

/// The text of a context message: its content (string, or text blocks joined), or its
/// summary.
fn message_text(r: Raw<'_>) -> String {
    if let Some(s) = r.get("summary") {
        return s.as_str().unwrap().into_owned();
    }
    let c = r.get("content").expect("content");
    match c.as_str() {
        Some(s) => s.into_owned(),
        None => c
            .elements()
            .iter()
            .filter_map(|b| {
                b.get("text")
                    .and_then(|t| t.as_str())
                    .map(|t| t.into_owned())
            })
            .collect::<Vec<_>>()
            .join(""),
    }
}

fn context_of(tree: &SessionTree, leaf: LeafArg<'_>) -> Vec<(String, String)> {
    build_context(tree, leaf)
        .messages
        .iter()
        .map(|msg| (msg.role().expect("role"), message_text(msg.raw())))
        .collect()
}

fn ids<'a>(v: impl IntoIterator<Item = &'a sessiontree::Entry>) -> Vec<String> {
    v.into_iter().map(|e| e.id().unwrap().to_string()).collect()
}

/// Roots and children lists as ids.
fn tree_shape(tree: &SessionTree) -> (Vec<String>, Vec<Vec<String>>) {
    let view = tree.get_tree();
    let id = |i: &u32| tree.entry_at(*i).id().unwrap().to_string();
    (
        view.roots.iter().map(id).collect(),
        view.children
            .iter()
            .map(|c| c.iter().map(id).collect())
            .collect(),
    )
}

fn model_shape(m: &Model) -> (Vec<String>, Vec<Vec<String>>) {
    let roots = m
        .entries
        .iter()
        .filter(|e| e.parent.is_none())
        .map(|e| e.id.clone())
        .collect();
    let children = m
        .entries
        .iter()
        .map(|p| {
            m.entries
                .iter()
                .filter(|e| e.parent.as_deref() == Some(p.id.as_str()))
                .map(|e| e.id.clone())
                .collect()
        })
        .collect();
    (roots, children)
}

fn labels_of(tree: &SessionTree) -> BTreeMap<String, String> {
    tree.labels()
        .into_iter()
        .map(|(k, l)| {
            (
                k.to_string(),
                Raw::parse(l.label.as_bytes())
                    .unwrap()
                    .as_str()
                    .unwrap()
                    .into_owned(),
            )
        })
        .collect()
}

/// Everything the model predicts, checked against `tree` with `leaf` as its leaf.
fn check(tree: &mut SessionTree, m: &Model, leaf: Option<usize>, probes: &[usize]) {
    assert_eq!(
        ids(tree.entries()),
        m.entries.iter().map(|e| e.id.clone()).collect::<Vec<_>>()
    );
    let leaf_id = leaf.map(|i| m.entries[i].id.clone());
    assert_eq!(tree.leaf_id().map(str::to_string), leaf_id, "leaf");
    let model_path: Vec<String> = m
        .path(leaf)
        .iter()
        .map(|&i| m.entries[i].id.clone())
        .collect();
    assert_eq!(ids(tree.get_branch(None)), model_path, "get_branch(leaf)");
    assert_eq!(tree_shape(tree), model_shape(m), "get_tree");
    for e in &m.entries {
        let mut got = ids(tree.get_children(&e.id));
        let mut want: Vec<String> = m
            .entries
            .iter()
            .filter(|c| c.parent.as_deref() == Some(e.id.as_str()))
            .map(|c| c.id.clone())
            .collect();
        got.sort();
        want.sort();
        assert_eq!(got, want, "get_children({})", e.id);
    }
    assert_eq!(labels_of(tree), m.labels, "labels");
    assert_eq!(tree.name(), m.name, "name");
    let at_leaf = match &leaf_id {
        Some(id) => LeafArg::Id(id),
        None => LeafArg::Null,
    };
    assert_eq!(
        context_of(tree, at_leaf),
        m.context(leaf),
        "context at the leaf"
    );
    for &p in probes {
        if m.entries.is_empty() {
            break;
        }
        let i = p % m.entries.len();
        assert_eq!(
            ids(tree.get_branch(Some(&m.entries[i].id))),
            m.path(Some(i))
                .iter()
                .map(|&j| m.entries[j].id.clone())
                .collect::<Vec<_>>()
        );
        assert_eq!(
            context_of(tree, LeafArg::Id(&m.entries[i].id)),
            m.context(Some(i)),
            "context at {}",
            m.entries[i].id
        );
    }
}

fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(64);
    ProptestConfig {
        cases,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn session_matches_model(ops in proptest::collection::vec(op(), 0..40), probes in proptest::collection::vec(any::<usize>(), 3)) {
        let mut s = Session::in_memory("/tmp");
        let mut m = Model::default();
        for op in &ops {
            apply(&mut s, &mut m, op);
        }
        let mut tree = s.tree().clone();
        check(&mut tree, &m, m.leaf, &probes);

        // Round trip through a file: the reloaded leaf is the last entry.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let mut file = String::new();
        for line in std::iter::once(s.tree().header().text()).chain(s.tree().entries().iter().map(|e| e.text())) {
            file.push_str(line.trim_end_matches('\n'));
            file.push('\n');
        }
        std::fs::write(&path, &file).unwrap();
        let mut loaded = sessiontree::load(&path).unwrap().tree;
        prop_assert!(loaded.diagnostics().is_empty(), "{:?}", loaded.diagnostics());
        let texts = |t: &SessionTree| t.entries().iter().map(|e| e.text().trim_end_matches('\n').to_string()).collect::<Vec<_>>();
        prop_assert_eq!(texts(&loaded), texts(s.tree()));
        let last = m.entries.len().checked_sub(1);
        check(&mut loaded, &m, last, &probes);
        if let Some(l) = m.leaf {
            let id = &m.entries[l].id;
            prop_assert_eq!(context_of(&loaded, LeafArg::Id(id)), context_of(s.tree(), LeafArg::Id(id)));
        }
    }
}
