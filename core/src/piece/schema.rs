//! The rule table: every key of a piece, its type, format and whether it is required. Both
//! validators read it.

/// String formats a field's value (or each entry of a list) must have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Any,
    /// Not empty after trimming.
    NonEmpty,
    /// `[a-z0-9-]+`
    PieceName,
    /// `[a-z0-9_-]{1,64}`
    McpSlug,
    /// `'*'` or lowercase hex/hyphen, 8+ characters.
    ConnectionId,
    /// `[A-Za-z0-9_.-]{1,64}`, so `@@done next=<movement>` can name it.
    MovementName,
}

impl Format {
    pub(super) fn check(self, s: &str) -> Result<(), &'static str> {
        let ok = match self {
            Format::Any => true,
            Format::NonEmpty => !s.trim().is_empty(),
            Format::PieceName => {
                !s.is_empty()
                    && s.bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            }
            Format::McpSlug => {
                (1..=64).contains(&s.len())
                    && s.bytes().all(|b| {
                        b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-'
                    })
            }
            Format::ConnectionId => crate::ssh::is_connection_id(s),
            Format::MovementName => {
                (1..=64).contains(&s.len())
                    && s.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
            }
        };
        if ok {
            return Ok(());
        }
        Err(match self {
            Format::Any => "",
            Format::NonEmpty => "must not be empty",
            Format::PieceName => "must be lowercase letters, digits and '-' ([a-z0-9-]+)",
            Format::McpSlug => "must be an MCP server slug ([a-z0-9_-]{1,64})",
            Format::ConnectionId => "must be '*' or a lowercase hex/hyphen connection id of 8+ characters",
            Format::MovementName => "must be 1-64 letters, digits, '_', '.' or '-' so that @@done next=<movement> can name it",
        })
    }
}

/// A field's type.
#[derive(Debug, Clone, Copy)]
pub enum Ty {
    Str(Format),
    Bool,
    PositiveInt,
    StrList(Format),
    Object(&'static [Field]),
    ObjectList {
        fields: &'static [Field],
        non_empty: bool,
    },
}

/// One row of the rule table.
#[derive(Debug, Clone, Copy)]
pub struct Field {
    pub key: &'static str,
    pub ty: Ty,
    pub required: bool,
    /// Lenient mode drops bad entries of this list (with a warning) instead of rejecting.
    pub lenient_drop: bool,
}

const fn field(key: &'static str, ty: Ty, required: bool) -> Field {
    Field {
        key,
        ty,
        required,
        lenient_drop: false,
    }
}

pub const TRIGGERS: &[Field] = &[field("keywords", Ty::StrList(Format::NonEmpty), false)];

pub const RULE: &[Field] = &[
    field("condition", Ty::Str(Format::NonEmpty), true),
    field("next", Ty::Str(Format::NonEmpty), true),
];

pub const MOVEMENT: &[Field] = &[
    field("name", Ty::Str(Format::MovementName), true),
    field("edit", Ty::Bool, true),
    field("persona", Ty::Str(Format::NonEmpty), true),
    field("instruction", Ty::Str(Format::NonEmpty), true),
    field("allowed_tools", Ty::StrList(Format::NonEmpty), true),
    field("allowed_commands", Ty::StrList(Format::NonEmpty), false),
    field(
        "allowed_ssh_connections",
        Ty::StrList(Format::ConnectionId),
        false,
    ),
    field(
        "rules",
        Ty::ObjectList {
            fields: RULE,
            non_empty: false,
        },
        true,
    ),
    field("default_next", Ty::Str(Format::NonEmpty), false),
    field("max_consecutive_revisits", Ty::PositiveInt, false),
];

pub const TOP: &[Field] = &[
    field("name", Ty::Str(Format::PieceName), true),
    field("description", Ty::Str(Format::NonEmpty), true),
    field("max_movements", Ty::PositiveInt, true),
    field("initial_movement", Ty::Str(Format::NonEmpty), true),
    field("triggers", Ty::Object(TRIGGERS), false),
    Field {
        key: "required_mcp",
        ty: Ty::StrList(Format::McpSlug),
        required: false,
        lenient_drop: true,
    },
    Field {
        key: "shared_tools",
        ty: Ty::StrList(Format::NonEmpty),
        required: false,
        lenient_drop: true,
    },
    field("model", Ty::Str(Format::NonEmpty), false),
    field(
        "movements",
        Ty::ObjectList {
            fields: MOVEMENT,
            non_empty: true,
        },
        true,
    ),
];
