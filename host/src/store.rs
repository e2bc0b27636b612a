//! Sessions in SQLite (`.agent/keyless.db`): sessions, turns, batches with their results, and an
//! audit log of every file change and command. A batch id makes execution exactly-once: a batch
//! that is already stored is answered from the store and never runs again.

use keyless_core::api::{AuditEntry, BatchSummary, CommandRecord, ResultStatus, SessionSummary};
use keyless_core::message::{CommandOutcome, CommandResult};
use keyless_core::turn::BatchStatus;
use keyless_core::Code;
use keyless_core::CommandKind;
use keyless_core::Control;
use rusqlite::{params, Connection, OptionalExtension};
use std::path::Path;

/// Errors of the store layer.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("session database: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("no saved session \"{0}\"")]
    SessionNotFound(String),
}

impl StoreError {
    #[must_use]
    pub fn code(&self) -> Code {
        match self {
            StoreError::Sqlite(_) => Code::FileIo,
            StoreError::SessionNotFound(_) => Code::SessionNotFound,
        }
    }
}

impl From<&StoreError> for crate::error::HostError {
    fn from(e: &StoreError) -> Self {
        Self::Coded {
            code: e.code(),
            message: e.to_string(),
        }
    }
}

impl From<StoreError> for crate::error::HostError {
    fn from(e: StoreError) -> Self {
        Self::from(&e)
    }
}

/// Where a session stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionState {
    pub id: String,
    pub turn: u32,
    pub batch: u32,
    pub invalid_in_a_row: u32,
}

/// A stored batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredBatch {
    pub status: String,
    /// The text the model received (results or correction).
    pub text: String,
    pub control: Option<String>,
}

/// A stored batch with its reply and the text the model received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchDetail {
    pub session: String,
    pub turn: u32,
    pub batch: u32,
    pub status: BatchStatus,
    pub reply: String,
    pub text: String,
    pub control: Option<Control>,
    /// In a piece session, the movement's tools the batch ran under (JSON of `EffectiveTools`).
    pub gate: Option<String>,
    /// What the host knew of the workspace when the batch was judged (JSON of the policy's
    /// `Context`): the one the previous answer gave the views.
    pub context: Option<String>,
}

/// A batch of a session's history ([`Store::history`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryBatch {
    pub id: String,
    pub turn: u32,
    pub batch: u32,
    pub status: BatchStatus,
    /// The text the model was sent (results or a correction).
    pub text: String,
    /// The reply as received.
    pub reply: String,
    pub results: Vec<HistoryResult>,
}

/// How one command of a batch ended, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryResult {
    pub number: u32,
    pub kind: CommandKind,
    pub target: String,
    pub status: ResultStatus,
    pub code: Option<String>,
    /// An @@ask's answer, or a commit's result.
    pub note: Option<String>,
    pub diff: Vec<keyless_core::diff::FileDiff>,
}

/// A stored spelling read back as its type; a value the store never writes is a conversion error.
fn stored<T>(col: usize, text: &str, read: impl Fn(&str) -> Option<T>) -> rusqlite::Result<T> {
    read(text).ok_or_else(|| {
        rusqlite::Error::FromSqlConversionFailure(
            col,
            rusqlite::types::Type::Text,
            format!("unknown stored value \"{text}\"").into(),
        )
    })
}

#[derive(Debug)]
pub struct Store {
    conn: Connection,
}

const SCHEMA: &str = "
PRAGMA journal_mode = WAL;
PRAGMA synchronous = FULL;
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY, workspace TEXT NOT NULL, created_at INTEGER NOT NULL,
    turn INTEGER NOT NULL DEFAULT 1, batch INTEGER NOT NULL DEFAULT 1,
    invalid_in_a_row INTEGER NOT NULL DEFAULT 0, piece_yaml TEXT, piece_state TEXT);
CREATE TABLE IF NOT EXISTS turns (
    session_id TEXT NOT NULL, turn INTEGER NOT NULL, started_at INTEGER NOT NULL,
    ended_at INTEGER, end_reason TEXT, PRIMARY KEY (session_id, turn));
CREATE TABLE IF NOT EXISTS batches (
    id TEXT PRIMARY KEY, session_id TEXT NOT NULL, turn INTEGER NOT NULL, batch INTEGER NOT NULL,
    created_at INTEGER NOT NULL, status TEXT NOT NULL, text TEXT, control TEXT);
CREATE TABLE IF NOT EXISTS results (
    batch_id TEXT NOT NULL, number INTEGER NOT NULL, command TEXT NOT NULL, target TEXT NOT NULL,
    status TEXT NOT NULL, code TEXT, reason TEXT, exit_code INTEGER, duration_ms INTEGER,
    PRIMARY KEY (batch_id, number));
CREATE TABLE IF NOT EXISTS audit (
    id INTEGER PRIMARY KEY AUTOINCREMENT, at INTEGER NOT NULL, session_id TEXT NOT NULL,
    batch_id TEXT NOT NULL, command TEXT NOT NULL, target TEXT NOT NULL, status TEXT NOT NULL, code TEXT);
";

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(0))
}

impl Store {
    /// Opens (or creates) the database.
    ///
    /// # Errors
    /// When SQLite cannot open or migrate it.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        let conn = Connection::open(path)?;
        conn.busy_timeout(std::time::Duration::from_secs(10))?;
        conn.execute_batch(SCHEMA)?;
        // Databases made before pieces: add the columns (an "already exists" error is fine).
        for col in [
            "piece_yaml",
            "piece_state",
            "mode",
            "pace",
            "git_dir",
            "origin_url",
            "repo_recorded",
            "context",
            "task_branch",
            "base_branch",
            "base_commit",
            "task",
            "moves",
        ] {
            let _ = conn.execute(&format!("ALTER TABLE sessions ADD COLUMN {col} TEXT"), []);
        }
        for col in ["reply", "gate", "context"] {
            let _ = conn.execute(&format!("ALTER TABLE batches ADD COLUMN {col} TEXT"), []);
        }
        for col in ["diff", "note"] {
            let _ = conn.execute(&format!("ALTER TABLE results ADD COLUMN {col} TEXT"), []);
        }
        Ok(Self { conn })
    }

    /// # Errors
    /// SQLite failures.
    pub fn create_session(&self, id: &str, workspace: &str) -> Result<SessionState, StoreError> {
        self.conn.execute(
            "INSERT INTO sessions (id, workspace, created_at) VALUES (?1, ?2, ?3)",
            params![id, workspace, now()],
        )?;
        self.conn.execute(
            "INSERT INTO turns (session_id, turn, started_at) VALUES (?1, 1, ?2)",
            params![id, now()],
        )?;
        Ok(SessionState {
            id: id.to_string(),
            turn: 1,
            batch: 1,
            invalid_in_a_row: 0,
        })
    }

    /// Records the repository as it is at session start (see [`crate::exec::git::RepoRecord`]).
    ///
    /// # Errors
    /// SQLite failures.
    pub fn set_repo(
        &self,
        session: &str,
        r: &crate::exec::git::RepoRecord,
    ) -> Result<(), StoreError> {
        self.conn.execute(
            "UPDATE sessions SET repo_recorded = '1', git_dir = ?2, origin_url = ?3, task_branch = ?4, base_branch = ?5, base_commit = ?6 WHERE id = ?1",
            params![
                session,
                r.git_dir.as_ref().map(|p| p.display().to_string()),
                r.origin_url,
                r.task_branch,
                r.base_branch,
                r.base_commit
            ],
        )?;
        Ok(())
    }

    /// The repository recorded at session start; `None` for sessions made before keyless
    /// recorded it.
    ///
    /// # Errors
    /// KA_SESSION_NOT_FOUND, SQLite failures.
    pub fn repo(&self, session: &str) -> Result<Option<crate::exec::git::RepoRecord>, StoreError> {
        self.conn
            .query_row(
                "SELECT repo_recorded, git_dir, origin_url, task_branch, base_branch, base_commit FROM sessions WHERE id = ?1",
                params![session],
                |r| {
                    let recorded: Option<String> = r.get(0)?;
                    let git_dir: Option<String> = r.get(1)?;
                    Ok(recorded.map(|_| crate::exec::git::RepoRecord {
                        git_dir: git_dir.map(std::path::PathBuf::from),
                        origin_url: r.get(2).ok().flatten(),
                        task_branch: r.get(3).ok().flatten(),
                        base_branch: r.get(4).ok().flatten(),
                        base_commit: r.get(5).ok().flatten(),
                    }))
                },
            )
            .optional()?
            .ok_or_else(|| StoreError::SessionNotFound(session.to_string()))
    }

    /// # Errors
    /// KA_SESSION_NOT_FOUND when there is no such session.
    pub fn session(&self, id: &str) -> Result<SessionState, StoreError> {
        self.conn
            .query_row(
                "SELECT turn, batch, invalid_in_a_row FROM sessions WHERE id = ?1",
                params![id],
                |r| {
                    Ok(SessionState {
                        id: id.to_string(),
                        turn: r.get(0)?,
                        batch: r.get(1)?,
                        invalid_in_a_row: r.get(2)?,
                    })
                },
            )
            .optional()?
            .ok_or_else(|| StoreError::SessionNotFound(id.to_string()))
    }

    /// # Errors
    /// SQLite failures.
    /// The policy context last given to the views of `session` (JSON), which its next batch is
    /// stored with.
    ///
    /// # Errors
    /// SQLite failures.
    pub fn set_context(&self, session: &str, json: &str) -> Result<(), StoreError> {
        self.conn.execute(
            "UPDATE sessions SET context = ?2 WHERE id = ?1",
            params![session, json],
        )?;
        Ok(())
    }

    /// The policy context last given to the views of `session`.
    ///
    /// # Errors
    /// SQLite failures.
    pub fn context(&self, session: &str) -> Result<Option<String>, StoreError> {
        Ok(self
            .conn
            .query_row(
                "SELECT context FROM sessions WHERE id = ?1",
                params![session],
                |r| r.get::<_, Option<String>>(0),
            )
            .optional()?
            .flatten())
    }

    pub fn save_position(&self, s: &SessionState) -> Result<(), StoreError> {
        self.conn.execute(
            "UPDATE sessions SET turn = ?2, batch = ?3, invalid_in_a_row = ?4 WHERE id = ?1",
            params![s.id, s.turn, s.batch, s.invalid_in_a_row],
        )?;
        Ok(())
    }

    /// Ends `turn` and opens the next one.
    ///
    /// # Errors
    /// SQLite failures.
    pub fn end_turn(&self, session: &str, turn: u32, reason: &str) -> Result<(), StoreError> {
        let tx = self.conn.unchecked_transaction()?;
        tx.execute(
            "UPDATE turns SET ended_at = ?3, end_reason = ?4 WHERE session_id = ?1 AND turn = ?2",
            params![session, turn, now(), reason],
        )?;
        tx.execute(
            "INSERT OR IGNORE INTO turns (session_id, turn, started_at) VALUES (?1, ?2, ?3)",
            params![session, turn + 1, now()],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// The stored batch with this id, if any.
    ///
    /// # Errors
    /// SQLite failures.
    pub fn batch(&self, id: &str) -> Result<Option<StoredBatch>, StoreError> {
        Ok(self
            .conn
            .query_row(
                "SELECT status, text, control FROM batches WHERE id = ?1",
                params![id],
                |r| {
                    Ok(StoredBatch {
                        status: r.get(0)?,
                        text: r.get::<_, Option<String>>(1)?.unwrap_or_default(),
                        control: r.get(2)?,
                    })
                },
            )
            .optional()?)
    }

    /// The id of the batch at `turn`/`batch` of a session (the newest, when a retry stored
    /// several) and when it was created (Unix seconds).
    ///
    /// # Errors
    /// SQLite failures.
    pub fn batch_at(
        &self,
        session: &str,
        turn: u32,
        batch: u32,
    ) -> Result<Option<(String, i64)>, StoreError> {
        Ok(self
            .conn
            .query_row(
                "SELECT id, created_at FROM batches WHERE session_id = ?1 AND turn = ?2 AND batch = ?3 ORDER BY (status = 'done') DESC, rowid DESC LIMIT 1",
                params![session, turn, batch],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?)
    }

    /// Claims a batch before it runs. Returns false when the id is already stored.
    ///
    /// # Errors
    /// SQLite failures.
    pub fn begin_batch(
        &self,
        id: &str,
        s: &SessionState,
        reply: &str,
        gate: Option<&str>,
    ) -> Result<bool, StoreError> {
        // The batch keeps the context the views judged it with: the session's last one.
        let n = self.conn.execute(
            "INSERT OR IGNORE INTO batches (id, session_id, turn, batch, created_at, status, reply, gate, context) VALUES (?1, ?2, ?3, ?4, ?5, 'running', ?6, ?7, (SELECT context FROM sessions WHERE id = ?2))",
            params![id, s.id, s.turn, s.batch, now(), reply, gate],
        )?;
        Ok(n == 1)
    }

    /// Every session, newest first.
    ///
    /// # Errors
    /// SQLite failures.
    pub fn sessions(&self) -> Result<Vec<SessionSummary>, StoreError> {
        let mut stmt = self.conn.prepare(
            "SELECT s.id, s.created_at, s.turn, s.batch, s.piece_yaml IS NOT NULL, s.task, \
             COALESCE(s.task_branch, s.base_branch), s.mode, \
             (SELECT status FROM batches b WHERE b.session_id = s.id ORDER BY b.rowid DESC LIMIT 1), \
             (SELECT end_reason FROM turns t WHERE t.session_id = s.id AND t.end_reason IS NOT NULL \
              AND t.turn >= (SELECT MAX(turn) FROM batches b2 WHERE b2.session_id = s.id) ORDER BY t.turn DESC LIMIT 1), \
             s.moves \
             FROM sessions s ORDER BY s.created_at DESC, s.rowid DESC LIMIT 200",
        )?;
        let rows = stmt.query_map([], |r| {
            let last_batch = r
                .get::<_, Option<String>>(8)?
                .and_then(|b| BatchStatus::from_name(&b));
            let last_end = r
                .get::<_, Option<String>>(9)?
                .and_then(|e| keyless_core::turn::TurnEnd::from_name(&e));
            Ok(SessionSummary {
                session: r.get(0)?,
                created_at: r.get(1)?,
                turn: r.get(2)?,
                batch: r.get(3)?,
                piece: r.get(4)?,
                task: r.get(5)?,
                branch: r.get(6)?,
                mode: r.get(7)?,
                state: keyless_core::api::session_state(last_batch, last_end),
                moves: r
                    .get::<_, Option<String>>(10)?
                    .and_then(|m| serde_json::from_str(&m).ok())
                    .unwrap_or_default(),
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Records that a session continues in a new chat (for the dashboard).
    ///
    /// # Errors
    /// SQLite failures; KA_SESSION_NOT_FOUND.
    pub fn add_move(
        &self,
        session: &str,
        site: &str,
        tab: Option<u32>,
        at: (u32, u32),
    ) -> Result<(), StoreError> {
        let old: Option<String> = self
            .conn
            .query_row(
                "SELECT moves FROM sessions WHERE id = ?1",
                params![session],
                |r| r.get(0),
            )
            .optional()?
            .ok_or_else(|| StoreError::SessionNotFound(session.to_string()))?;
        let mut moves: Vec<keyless_core::api::SessionMove> = old
            .and_then(|m| serde_json::from_str(&m).ok())
            .unwrap_or_default();
        moves.push(keyless_core::api::SessionMove {
            site: site.to_string(),
            tab,
            at: now(),
            turn: at.0,
            batch: at.1,
        });
        let text = serde_json::to_string(&moves).unwrap_or_else(|_| "[]".into());
        self.conn.execute(
            "UPDATE sessions SET moves = ?2 WHERE id = ?1",
            params![session, text],
        )?;
        Ok(())
    }

    /// One batch in full.
    ///
    /// # Errors
    /// SQLite failures.
    pub fn batch_detail(&self, id: &str) -> Result<Option<BatchDetail>, StoreError> {
        Ok(self
            .conn
            .query_row("SELECT session_id, turn, batch, status, reply, text, control, gate, context FROM batches WHERE id = ?1", params![id], |r| {
                let control: Option<String> = r.get(6)?;
                Ok(BatchDetail {
                    session: r.get(0)?,
                    turn: r.get(1)?,
                    batch: r.get(2)?,
                    status: stored(3, &r.get::<_, String>(3)?, BatchStatus::from_name)?,
                    reply: r.get::<_, Option<String>>(4)?.unwrap_or_default(),
                    text: r.get::<_, Option<String>>(5)?.unwrap_or_default(),
                    control: control
                        .map(|c| stored(6, &c, Control::from_name))
                        .transpose()?,
                    gate: r.get(7)?,
                    context: r.get(8)?,
                })
            })
            .optional()?)
    }

    /// The stored result of each command of batch `id`, by number.
    ///
    /// # Errors
    /// SQLite failures.
    pub fn results(&self, id: &str) -> Result<Vec<CommandRecord>, StoreError> {
        let mut stmt = self.conn.prepare(
            "SELECT number, status, code, reason, exit_code, duration_ms, diff FROM results WHERE batch_id = ?1 ORDER BY number",
        )?;
        let rows = stmt.query_map(params![id], |r| {
            Ok(CommandRecord {
                number: r.get(0)?,
                status: stored(1, &r.get::<_, String>(1)?, ResultStatus::from_name)?,
                code: r.get(2)?,
                reason: r.get(3)?,
                exit_code: r.get(4)?,
                duration_ms: r.get(5)?,
                diff: r
                    .get::<_, Option<String>>(6)?
                    .and_then(|d| serde_json::from_str(&d).ok())
                    .unwrap_or_default(),
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Stores a finished batch, its results and their audit entries, in one transaction.
    ///
    /// # Errors
    /// SQLite failures.
    pub fn finish_batch(
        &self,
        id: &str,
        session: &str,
        status: &str,
        text: &str,
        control: Option<&str>,
        results: &[CommandResult],
    ) -> Result<(), StoreError> {
        let tx = self.conn.unchecked_transaction()?;
        tx.execute(
            "UPDATE batches SET status = ?2, text = ?3, control = ?4 WHERE id = ?1",
            params![id, status, text, control],
        )?;
        for r in results {
            let st = r.outcome.status().as_str();
            let (code, reason, exit, ms) = match &r.outcome {
                CommandOutcome::Ok {
                    exit_code,
                    duration_ms,
                    ..
                } => (None, None, *exit_code, *duration_ms),
                CommandOutcome::Error {
                    code,
                    reason,
                    exit_code,
                    duration_ms,
                    ..
                } => (
                    Some(code.as_str()),
                    Some(reason.clone()),
                    *exit_code,
                    *duration_ms,
                ),
                CommandOutcome::Skipped { reason } => (None, Some(reason.to_string()), None, None),
            };
            let diff = (!r.diff.is_empty())
                .then(|| serde_json::to_string(&r.diff).ok())
                .flatten();
            // What a handover tells of: the user's answer to an @@ask, a commit's result.
            let note = match (&r.kind, &r.outcome) {
                (
                    CommandKind::Ask | CommandKind::Commit,
                    CommandOutcome::Ok {
                        output: Some(o), ..
                    },
                ) => Some(o.as_str()),
                _ => None,
            };
            tx.execute(
                "INSERT OR REPLACE INTO results (batch_id, number, command, target, status, code, reason, exit_code, duration_ms, diff, note) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                params![id, r.number, r.kind.name(), r.target, st, code, reason, exit, ms.map(|m| i64::try_from(m).unwrap_or(i64::MAX)), diff, note],
            )?;
            if st != "skipped" {
                tx.execute(
                    "INSERT INTO audit (at, session_id, batch_id, command, target, status, code) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                    params![now(), session, id, r.kind.name(), r.target, st, code],
                )?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// Attaches a piece (its YAML and run state) to a session.
    ///
    /// # Errors
    /// SQLite failures.
    pub fn set_session_settings(
        &self,
        session: &str,
        mode: Option<&str>,
        pace: Option<&str>,
    ) -> Result<(), StoreError> {
        self.conn.execute(
            "UPDATE sessions SET mode = COALESCE(?2, mode), pace = COALESCE(?3, pace) WHERE id = ?1",
            params![session, mode, pace],
        )?;
        Ok(())
    }

    /// The mode and pace a session chose (`None`: the host's own).
    ///
    /// # Errors
    /// SQLite failures; KA_SESSION_NOT_FOUND.
    pub fn session_settings(
        &self,
        session: &str,
    ) -> Result<(Option<String>, Option<String>), StoreError> {
        self.conn
            .query_row(
                "SELECT mode, pace FROM sessions WHERE id = ?1",
                params![session],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?
            .ok_or_else(|| StoreError::SessionNotFound(session.to_string()))
    }

    /// # Errors
    /// SQLite failures.
    pub fn set_piece(&self, session: &str, yaml: &str, state: &str) -> Result<(), StoreError> {
        self.conn.execute(
            "UPDATE sessions SET piece_yaml = ?2, piece_state = ?3 WHERE id = ?1",
            params![session, yaml, state],
        )?;
        Ok(())
    }

    /// The session's piece YAML and run state, if it follows a piece.
    ///
    /// # Errors
    /// SQLite failures.
    pub fn piece(&self, session: &str) -> Result<Option<(String, String)>, StoreError> {
        Ok(self
            .conn
            .query_row(
                "SELECT piece_yaml, piece_state FROM sessions WHERE id = ?1",
                params![session],
                |r| {
                    Ok((
                        r.get::<_, Option<String>>(0)?,
                        r.get::<_, Option<String>>(1)?,
                    ))
                },
            )
            .optional()?
            .and_then(|(y, s)| Some((y?, s?))))
    }

    /// The session's batches, oldest first.
    ///
    /// # Errors
    /// SQLite failures.
    /// The id of the newest batch of any session, if there is one.
    ///
    /// # Errors
    /// SQLite failures.
    pub fn newest_batch(&self) -> Result<Option<String>, StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT id FROM batches ORDER BY rowid DESC LIMIT 1")?;
        let mut rows = stmt.query([])?;
        Ok(match rows.next()? {
            Some(r) => Some(r.get(0)?),
            None => None,
        })
    }

    pub fn batches(&self, session: &str) -> Result<Vec<BatchSummary>, StoreError> {
        let mut stmt = self.conn.prepare("SELECT id, turn, batch, status, control FROM batches WHERE session_id = ?1 ORDER BY rowid")?;
        let rows = stmt.query_map(params![session], |r| {
            let control: Option<String> = r.get(4)?;
            Ok(BatchSummary {
                id: r.get(0)?,
                turn: r.get(1)?,
                batch: r.get(2)?,
                status: stored(3, &r.get::<_, String>(3)?, BatchStatus::from_name)?,
                control: control
                    .map(|c| stored(4, &c, Control::from_name))
                    .transpose()?,
                counts: keyless_core::message::BatchCounts::default(),
                outcome: keyless_core::api::BatchOutcome::Empty,
                undo: keyless_core::api::UndoState::NoChanges,
            })
        })?;
        let mut list: Vec<BatchSummary> = rows.collect::<Result<_, _>>()?;
        for b in &mut list {
            b.counts = self.counts(&b.id)?;
            b.outcome = keyless_core::api::BatchOutcome::of(b.status, &b.counts);
        }
        Ok(list)
    }

    /// How batch `id`'s commands ended.
    ///
    /// # Errors
    /// SQLite failures.
    pub fn counts(&self, id: &str) -> Result<keyless_core::message::BatchCounts, StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT status, code FROM results WHERE batch_id = ?1")?;
        let mut c = keyless_core::message::BatchCounts::default();
        let rows = stmt.query_map(params![id], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, Option<String>>(1)?))
        })?;
        for row in rows {
            let (status, code) = row?;
            if let Some(st) = ResultStatus::from_name(&status) {
                c.add(st, code.as_deref());
            }
        }
        Ok(c)
    }

    /// Records the task the user gave a session.
    ///
    /// # Errors
    /// SQLite failures.
    pub fn set_task(&self, session: &str, task: &str) -> Result<(), StoreError> {
        self.conn.execute(
            "UPDATE sessions SET task = ?2 WHERE id = ?1",
            params![session, task],
        )?;
        Ok(())
    }

    /// The task the user gave a session, if it was recorded.
    ///
    /// # Errors
    /// SQLite failures; KA_SESSION_NOT_FOUND.
    pub fn task(&self, session: &str) -> Result<Option<String>, StoreError> {
        self.conn
            .query_row(
                "SELECT task FROM sessions WHERE id = ?1",
                params![session],
                |r| r.get(0),
            )
            .optional()?
            .ok_or_else(|| StoreError::SessionNotFound(session.to_string()))
    }

    /// A session's batches, oldest first, each with the text the model was sent and how each
    /// of its commands ended: what a handover is made from.
    ///
    /// # Errors
    /// SQLite failures.
    pub fn history(&self, session: &str) -> Result<Vec<HistoryBatch>, StoreError> {
        let mut stmt = self.conn.prepare(
            "SELECT id, turn, batch, status, text, reply FROM batches WHERE session_id = ?1 ORDER BY rowid",
        )?;
        let rows = stmt.query_map(params![session], |r| {
            Ok(HistoryBatch {
                id: r.get(0)?,
                turn: r.get(1)?,
                batch: r.get(2)?,
                status: stored(3, &r.get::<_, String>(3)?, BatchStatus::from_name)?,
                text: r.get::<_, Option<String>>(4)?.unwrap_or_default(),
                reply: r.get::<_, Option<String>>(5)?.unwrap_or_default(),
                results: Vec::new(),
            })
        })?;
        let mut list: Vec<HistoryBatch> = rows.collect::<Result<_, _>>()?;
        let mut stmt = self.conn.prepare(
            "SELECT number, command, target, status, code, note, diff FROM results WHERE batch_id = ?1 ORDER BY number",
        )?;
        for b in &mut list {
            let rows = stmt.query_map(params![b.id], |r| {
                Ok(HistoryResult {
                    number: r.get(0)?,
                    kind: stored(1, &r.get::<_, String>(1)?, CommandKind::from_name)?,
                    target: r.get(2)?,
                    status: stored(3, &r.get::<_, String>(3)?, ResultStatus::from_name)?,
                    code: r.get(4)?,
                    note: r.get(5)?,
                    diff: r
                        .get::<_, Option<String>>(6)?
                        .and_then(|d| serde_json::from_str(&d).ok())
                        .unwrap_or_default(),
                })
            })?;
            b.results = rows.collect::<Result<_, _>>()?;
        }
        Ok(list)
    }

    /// The audit trail, oldest first (optionally one session's).
    ///
    /// # Errors
    /// SQLite failures.
    pub fn audit(&self, session: Option<&str>, limit: u32) -> Result<Vec<AuditEntry>, StoreError> {
        let mut stmt = self.conn.prepare(
            "SELECT at, session_id, batch_id, command, target, status, code FROM audit WHERE ?1 IS NULL OR session_id = ?1 ORDER BY id DESC LIMIT ?2",
        )?;
        let rows = stmt.query_map(params![session, limit], |r| {
            Ok(AuditEntry {
                at: r.get(0)?,
                session: r.get(1)?,
                batch: r.get(2)?,
                command: r.get(3)?,
                target: r.get(4)?,
                status: stored(5, &r.get::<_, String>(5)?, ResultStatus::from_name)?,
                code: r.get(6)?,
            })
        })?;
        let mut v: Vec<AuditEntry> = rows.collect::<Result<_, _>>()?;
        v.reverse();
        Ok(v)
    }
}
