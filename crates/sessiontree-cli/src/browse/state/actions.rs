//! The actions screen: the menu (Ctrl+A in the tree), the prompt or confirmation each
//! action asks for, and the [`Job`] a confirmed one hands to the edge.

use super::tree::TreeState;
use std::path::PathBuf;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    Label,
    Rename,
    Fork,
    CloseInterrupted,
    ExportHtml,
    ExportMd,
    Resume,
}

impl Action {
    pub const MENU: [(char, Action, &'static str); 7] = [
        ('l', Action::Label, "label the entry"),
        ('r', Action::Rename, "rename the session"),
        ('f', Action::Fork, "fork at the entry into a new file"),
        (
            'c',
            Action::CloseInterrupted,
            "close interrupted tool calls",
        ),
        ('h', Action::ExportHtml, "export as HTML"),
        ('m', Action::ExportMd, "export as Markdown"),
        ('p', Action::Resume, "resume in pi"),
    ];
}

pub enum Modal {
    /// The action menu (tree view).
    Menu,
    /// An action waiting for text (label, name, output file); Enter confirms.
    Input {
        action: Action,
        prompt: String,
        text: String,
    },
    /// An action waiting for y/n.
    Confirm { action: Action, question: String },
    /// The key help.
    Help,
}

/// A confirmed action with everything it needs.
#[derive(Clone, Debug, PartialEq)]
pub enum Job {
    Label {
        file: PathBuf,
        id: String,
        label: Option<String>,
    },
    Rename {
        file: PathBuf,
        name: String,
    },
    Fork {
        file: PathBuf,
        id: String,
    },
    CloseInterrupted {
        file: PathBuf,
    },
    Export {
        file: PathBuf,
        leaf: String,
        markdown: bool,
        out: PathBuf,
    },
    Resume {
        file: PathBuf,
    },
}

/// The prompt or confirmation an action from the menu asks for, about the tree's selection.
pub(super) fn prompt(action: Action, t: &TreeState) -> Modal {
    let id = t.sel_id().unwrap_or("").to_string();
    let stem = t
        .path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "session".into());
    let label_now = t
        .loaded
        .tree
        .get_label(&id)
        .map(|l| sessiontree::json::Raw::trusted(&l.label).js_string())
        .unwrap_or_default();
    match action {
        Action::Label => Modal::Input {
            action,
            prompt: format!("Label for {id} (empty clears), Enter to write:"),
            text: label_now,
        },
        Action::Rename => Modal::Input {
            action,
            prompt: "Session name, Enter to write:".into(),
            text: t.loaded.tree.name().unwrap_or_default(),
        },
        Action::ExportHtml => Modal::Input {
            action,
            prompt: format!("Export the tree (leaf {id}) as HTML to, Enter to write:"),
            text: format!("{stem}.html"),
        },
        Action::ExportMd => Modal::Input {
            action,
            prompt: format!("Export the branch to {id} as Markdown to, Enter to write:"),
            text: format!("{stem}.md"),
        },
        Action::Fork => Modal::Confirm {
            action,
            question: format!("Fork at {id} into a new session file? (y/n)"),
        },
        Action::CloseInterrupted => Modal::Confirm {
            action,
            question:
                "Append an error result for every dangling tool call on the current branch? (y/n)"
                    .into(),
        },
        Action::Resume => Modal::Confirm {
            action,
            question: format!("Resume {} in pi? (y/n)", t.path.display()),
        },
    }
}

/// The job of a confirmed action on `file` (and the entry `id`, in the tree), with the
/// text typed at its prompt; or why it cannot run, for the status line.
pub(super) fn job(
    action: &Action,
    text: String,
    file: PathBuf,
    id: String,
) -> Result<Job, &'static str> {
    Ok(match action {
        Action::Label => Job::Label {
            file,
            id,
            label: (!text.trim().is_empty()).then_some(text),
        },
        Action::Rename => {
            if text.trim().is_empty() {
                return Err("a name cannot be empty");
            }
            Job::Rename { file, name: text }
        }
        Action::Fork => Job::Fork { file, id },
        Action::CloseInterrupted => Job::CloseInterrupted { file },
        Action::ExportHtml | Action::ExportMd => {
            if text.trim().is_empty() {
                return Err("no output file");
            }
            Job::Export {
                file,
                leaf: id,
                markdown: *action == Action::ExportMd,
                out: PathBuf::from(text),
            }
        }
        Action::Resume => Job::Resume { file },
    })
}
