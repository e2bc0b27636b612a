//! Where pieces come from: `<workspace>/.agent/pieces/`, the user's `keyless/pieces/`, then the
//! pieces that ship inside the binary (the repository's `pieces/` folder).

use crate::exec::workspace::Workspace;
use crate::store::{Store, StoreError};
use keyless_core::diag::Diagnostic;
use keyless_core::piece::run::{PieceRun, RunSnapshot, RunState};
use keyless_core::piece::{validate, Piece, Strictness};
use keyless_core::Code;
use std::path::{Path, PathBuf};

/// A session's piece cannot take a reply, or a piece does not load.
#[derive(Debug, thiserror::Error)]
pub enum PieceError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The stored run no longer loads (its YAML or its state).
    #[error("the stored piece run cannot be read: {0}")]
    Stored(String),
    /// The run has ended: the session takes no more replies.
    #[error("the piece run has ended ({0}); start a new session")]
    Ended(String),
    /// A piece the user asked for is unknown or invalid.
    #[error("{0}")]
    Invalid(String),
    /// `PUT /v1/pieces/{name}`: strict validation refused the piece; the findings say where.
    #[error("the piece is invalid: {} problem(s); the first: {}", .0.len(), .0.first().map_or(String::new(), |f| format!("{} {} (line {}): {}", f.code, f.key.as_deref().unwrap_or(""), f.line_or_zero(), f.message)))]
    Rejected(Vec<Diagnostic>),
    /// No workspace piece by that name (to read or delete).
    #[error("{0}")]
    NotFound(String),
    /// The workspace's piece folder cannot be written.
    #[error("cannot write the workspace's pieces: {0}")]
    Io(String),
    /// What the piece needs beyond the workspace is missing: a required MCP server that is not
    /// declared or does not start, an unreadable SSH registry.
    #[error("{1}")]
    Tools(Code, String),
}

impl PieceError {
    /// The code it leads with (a store failure's own code is the store's).
    #[must_use]
    pub fn code(&self) -> Code {
        match self {
            Self::Store(_) | Self::Stored(_) => Code::Internal,
            Self::Ended(_) => Code::PieceTransition,
            Self::Invalid(_) => Code::ConfigValidation,
            Self::Rejected(f) => f.first().map_or(Code::PieceYaml, |f| f.code),
            Self::NotFound(_) => Code::PieceNotFound,
            Self::Io(_) => Code::FileIo,
            Self::Tools(code, _) => *code,
        }
    }
}

/// Validates a piece's YAML; the error lists the first five problems with their codes and lines.
///
/// # Errors
/// [`PieceError::Invalid`] with the problems.
pub fn validated(yaml: &str, strictness: Strictness) -> Result<Piece, PieceError> {
    let v = validate(yaml, strictness);
    v.piece.ok_or_else(|| {
        let first: Vec<String> = v
            .errors
            .iter()
            .take(5)
            .map(|f| {
                format!(
                    "{} {} (line {}): {}",
                    f.code,
                    f.key.as_deref().unwrap_or(""),
                    f.line_or_zero(),
                    f.message
                )
            })
            .collect();
        PieceError::Invalid(format!("the piece is invalid: {}", first.join("; ")))
    })
}

/// A piece by name (see [`lookup`]) or from a YAML file: `run --piece NAME|FILE`. A file is
/// checked strictly, as `piece_yaml` is by the API; a named piece leniently.
///
/// # Errors
/// [`PieceError::Invalid`]: unknown name, unreadable file, or an invalid piece.
pub fn load(workspace: &Path, name_or_file: &str) -> Result<(String, Piece), PieceError> {
    if let Some((yaml, _)) = lookup(workspace, name_or_file) {
        let piece = validated(&yaml, Strictness::Lenient)?;
        return Ok((yaml, piece));
    }
    let path = Path::new(name_or_file);
    if path.is_file() {
        let yaml = std::fs::read_to_string(path)
            .map_err(|e| PieceError::Invalid(format!("cannot read {name_or_file}: {e}")))?;
        let piece = validated(&yaml, Strictness::Strict)?;
        return Ok((yaml, piece));
    }
    let names: Vec<String> = list(workspace).into_iter().map(|(n, _, _)| n).collect();
    Err(PieceError::Invalid(format!(
        "no piece named \"{name_or_file}\" and no such file; pieces here: {}",
        names.join(", ")
    )))
}

/// Starts `piece` in a new session and returns its run (at the first movement).
///
/// # Errors
/// Store failures.
pub fn start(
    store: &Store,
    session: &str,
    yaml: &str,
    piece: Piece,
) -> Result<PieceRun, PieceError> {
    let run = PieceRun::start(piece);
    let snap =
        serde_json::to_string(&run.snapshot()).map_err(|e| PieceError::Stored(e.to_string()))?;
    store.set_piece(session, yaml, &snap)?;
    Ok(run)
}

/// Gives a run what the host found for it (MCP tools, SSH registry), so its movements offer the
/// extension commands.
///
/// # Errors
/// [`PieceError::Tools`]: a required MCP server is not declared or does not start.
pub fn attach_tools(
    run: &mut PieceRun,
    tools: &crate::exec::tools::Tools,
    session: &str,
) -> Result<(), PieceError> {
    let catalog = tools
        .catalog(session, run.piece())
        .map_err(|f| PieceError::Tools(f.code, f.reason))?;
    run.set_catalog(catalog);
    Ok(())
}

/// The session's piece run, if it follows a piece, ready for its next reply (a run that waited for
/// an answer or subtasks resumes). A run that has ended takes no more replies.
///
/// # Errors
/// [`PieceError::Ended`], or a stored run that no longer loads.
pub fn resume(store: &Store, session: &str) -> Result<Option<PieceRun>, PieceError> {
    let Some((yaml, state)) = store.piece(session)? else {
        return Ok(None);
    };
    let piece = validate(&yaml, Strictness::Lenient)
        .piece
        .ok_or_else(|| PieceError::Stored("the stored piece no longer validates".into()))?;
    let snap: RunSnapshot =
        serde_json::from_str(&state).map_err(|e| PieceError::Stored(e.to_string()))?;
    let mut run = PieceRun::restore(piece, snap);
    let waiting = match run.state() {
        RunState::Running { .. } => false,
        RunState::NeedsUserInput { .. } | RunState::WaitingForSubtasks { .. } => true,
        ended => return Err(PieceError::Ended(format!("{ended:?}"))),
    };
    if waiting {
        run.resume();
    }
    Ok(Some(run))
}

/// Stores the session's piece run after a batch.
///
/// # Errors
/// Store failures.
pub fn save(store: &Store, session: &str, snap: &RunSnapshot) -> Result<(), PieceError> {
    let yaml = store.piece(session)?.map(|(y, _)| y).unwrap_or_default();
    let state = serde_json::to_string(snap).map_err(|e| PieceError::Stored(e.to_string()))?;
    store.set_piece(session, &yaml, &state)?;
    Ok(())
}

/// The pieces that ship with keyless.
pub const BUILT_IN: &[(&str, &str)] = &[
    (
        "plan-implement-review",
        include_str!("../../pieces/plan-implement-review.yaml"),
    ),
    ("review-only", include_str!("../../pieces/review-only.yaml")),
    ("fix-loop", include_str!("../../pieces/fix-loop.yaml")),
    ("ssh-ops", include_str!("../../pieces/ssh-ops.yaml")),
];

fn dirs(workspace: &Path) -> Vec<PathBuf> {
    let mut v = vec![workspace.join(".agent").join("pieces")];
    if let Some(p) = crate::dirs::user_config_path() {
        v.push(p.with_file_name("pieces"));
    }
    v
}

fn valid_name(name: &str) -> bool {
    keyless_core::piece::valid_file_name(name)
}

/// A piece's YAML and where it came from, by name: the first of the workspace's `.agent/pieces/`,
/// the user's `pieces/` and the built-in set. [`list`] resolves names the same way.
#[must_use]
pub fn lookup(workspace: &Path, name: &str) -> Option<(String, String)> {
    if !valid_name(name) {
        return None;
    }
    for d in dirs(workspace) {
        let p = d.join(format!("{name}.yaml"));
        if let Ok(text) = std::fs::read_to_string(&p) {
            return Some((text, p.display().to_string()));
        }
    }
    BUILT_IN
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, y)| ((*y).to_string(), "built-in".to_string()))
}

/// Every piece a session can start by name: (name, description, source). Each name is the piece
/// [`lookup`] resolves; a name whose resolved piece does not load is left out (it does not fall
/// back to a piece of the same name further down, which starting it would not use either).
#[must_use]
pub fn list(workspace: &Path) -> Vec<(String, String, String)> {
    let mut seen: Vec<String> = Vec::new();
    let mut out: Vec<(String, String, String)> = Vec::new();
    let mut add = |name: String, yaml: &str, source: String| {
        if !valid_name(&name) || seen.contains(&name) {
            return;
        }
        seen.push(name.clone());
        if let Some(p) = validate(yaml, Strictness::Lenient).piece {
            out.push((name, p.description, source));
        }
    };
    for d in dirs(workspace) {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        let mut files: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
            .collect();
        files.sort();
        for f in files {
            if let (Some(stem), Ok(text)) = (
                f.file_stem().map(|s| s.to_string_lossy().into_owned()),
                std::fs::read_to_string(&f),
            ) {
                add(stem, &text, f.display().to_string());
            }
        }
    }
    for (n, y) in BUILT_IN {
        add((*n).to_string(), y, "built-in".into());
    }
    out
}

/// Whether `source` (as [`lookup`] and [`list`] name it) is the workspace's own piece folder,
/// which the API changes.
#[must_use]
pub fn is_workspace_source(workspace: &Path, source: &str) -> bool {
    Path::new(source).parent() == Some(workspace.join(".agent").join("pieces").as_path())
}

fn check_name(name: &str) -> Result<(), PieceError> {
    if valid_name(name) {
        Ok(())
    } else {
        Err(PieceError::Invalid(format!(
            "\"{}\" is not a piece name: use 1 to 64 letters, digits, - and _",
            name.chars().take(80).collect::<String>()
        )))
    }
}

/// `PUT /v1/pieces/{name}`: validates `yaml` strictly (its `name` must be `name`) and stores it
/// as the workspace's `.agent/pieces/NAME.yaml`, atomically. Returns the file, the warnings, and
/// what the name resolved to before when the new piece hides it.
///
/// # Errors
/// [`PieceError::Invalid`] for a bad name, [`PieceError::Rejected`] with the findings, or
/// [`PieceError::Io`].
pub fn store_piece(
    ws: &Workspace,
    name: &str,
    yaml: &str,
) -> Result<(String, Vec<Diagnostic>, Option<String>), PieceError> {
    check_name(name)?;
    let v = keyless_core::piece::validate_as(yaml, name);
    if v.piece.is_none() {
        let mut findings = v.errors;
        findings.extend(v.warnings);
        return Err(PieceError::Rejected(findings));
    }
    let before = lookup(ws.root(), name)
        .map(|(_, source)| source)
        .filter(|source| !is_workspace_source(ws.root(), source));
    ws.save_state(&format!("pieces/{name}.yaml"), yaml.as_bytes())
        .map_err(|e| PieceError::Io(e.to_string()))?;
    let file = ws
        .root()
        .join(".agent")
        .join("pieces")
        .join(format!("{name}.yaml"));
    Ok((file.display().to_string(), v.warnings, before))
}

/// `DELETE /v1/pieces/{name}`: removes the workspace's piece of that name. Returns what the name
/// resolves to now (a user or built-in piece it hid), if anything.
///
/// # Errors
/// [`PieceError::NotFound`] when the workspace has no such piece (built-in and user pieces are
/// not deleted through the API), or [`PieceError::Io`].
pub fn delete_piece(ws: &Workspace, name: &str) -> Result<Option<String>, PieceError> {
    check_name(name)?;
    let missing = || {
        PieceError::NotFound(format!(
            "the workspace has no piece \"{name}\" (.agent/pieces/{name}.yaml); built-in and user pieces are not deleted through the API"
        ))
    };
    match ws.remove_state(&format!("pieces/{name}.yaml")) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(missing()),
        Err(e) => return Err(PieceError::Io(e.to_string())),
    }
    Ok(lookup(ws.root(), name).map(|(_, source)| source))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The list shows, for each name, the piece a session would start by that name: an invalid
    /// workspace piece hides the built-in of the same name in both, and a file whose name cannot
    /// be asked for is in neither.
    #[test]
    fn the_list_and_session_start_resolve_names_the_same_way() {
        let tmp = tempfile::tempdir().expect("tmp");
        let dir = tmp.path().join(".agent").join("pieces");
        std::fs::create_dir_all(&dir).expect("dir");
        std::fs::write(dir.join("fix-loop.yaml"), "name: [broken\n").expect("write");
        std::fs::write(dir.join("two words.yaml"), BUILT_IN[1].1).expect("write");
        std::fs::write(dir.join("mine.yaml"), BUILT_IN[1].1).expect("write");
        let listed: Vec<String> = list(tmp.path()).into_iter().map(|(n, _, _)| n).collect();
        assert!(!listed.iter().any(|n| n == "fix-loop"), "{listed:?}");
        assert!(!listed.iter().any(|n| n == "two words"), "{listed:?}");
        assert!(listed.iter().any(|n| n == "mine"), "{listed:?}");
        assert!(listed.iter().any(|n| n == "review-only"), "{listed:?}");
        // Starting the shadowed name loads the workspace file, which fails, like the list says.
        assert!(matches!(
            load(tmp.path(), "fix-loop"),
            Err(PieceError::Invalid(_))
        ));
        assert!(lookup(tmp.path(), "two words").is_none());
        // Every listed name starts the piece the list describes.
        for name in &listed {
            let (yaml, source) = lookup(tmp.path(), name).expect("listed names resolve");
            assert!(
                validate(&yaml, Strictness::Lenient).ok(),
                "{name} from {source}"
            );
        }
    }
}
