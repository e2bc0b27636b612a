//! MCP tools (the pieces specification's `required_mcp` and `mcp__server__tool`, the `.as` specification's `mcp://`): the names,
//! how a piece's tool patterns match a server's real tools, and what a tool is worth to the policy.
//! Pure: the host runs the servers (`keyless-host mcp list`).

use serde::{Deserialize, Serialize};

/// A server slug, as `required_mcp` takes it: `[a-z0-9_-]{1,64}`.
#[must_use]
pub fn valid_server(s: &str) -> bool {
    (1..=64).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
}

/// A tool name as MCP servers spell them: letters, digits, `_ - . /`, at most 128.
#[must_use]
pub fn valid_tool(s: &str) -> bool {
    (1..=128).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b'/'))
}

/// A piece tool name of the MCP form: `mcp__*`, `mcp__SERVER__*` or `mcp__SERVER__TOOL`. Returns
/// the server (`None` for `mcp__*`) and the tool (`None` for a wildcard); `Err` for a name that
/// starts with `mcp__` but is not of the form.
///
/// # Errors
/// Why the name is malformed.
pub fn pattern(name: &str) -> Result<(Option<&str>, Option<&str>), String> {
    let Some(rest) = name.strip_prefix("mcp__") else {
        return Err(format!("\"{name}\" does not start with mcp__"));
    };
    if rest == "*" {
        return Ok((None, None));
    }
    let Some((server, tool)) = rest.split_once("__") else {
        return Err(format!(
            "\"{name}\" is not mcp__SERVER__TOOL (or mcp__SERVER__*, mcp__*)"
        ));
    };
    if !valid_server(server) {
        return Err(format!(
            "\"{server}\" in \"{name}\" is not a server slug ([a-z0-9_-]{{1,64}})"
        ));
    }
    if tool == "*" {
        return Ok((Some(server), None));
    }
    if !valid_tool(tool) {
        return Err(format!("\"{tool}\" in \"{name}\" is not a tool name"));
    }
    Ok((Some(server), Some(tool)))
}

/// Whether the piece tool name `pattern_name` (`mcp__*`, `mcp__s__*`, `mcp__s__t`) covers tool
/// `tool` of server `server`.
#[must_use]
pub fn covers(pattern_name: &str, server: &str, tool: &str) -> bool {
    match pattern(pattern_name) {
        Ok((None, _)) => true,
        Ok((Some(s), None)) => s == server,
        Ok((Some(s), Some(t))) => s == server && t == tool,
        Err(_) => false,
    }
}

/// One tool of a running MCP server, as the host learnt it from `tools/list`.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpTool {
    pub server: String,
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// The tool's JSON Schema for its arguments, as JSON text.
    #[serde(default)]
    pub input_schema: String,
    /// The server marks it `readOnlyHint` and keyless.json trusts the server's hints.
    #[serde(default)]
    pub read_only: bool,
}

impl McpTool {
    /// `SERVER.TOOL`, as `@@mcp` names it.
    #[must_use]
    pub fn qualified(&self) -> String {
        format!("{}.{}", self.server, self.name)
    }
}

/// How an `@@mcp` call's target is shown and judged: `SERVER.TOOL`.
#[must_use]
pub fn qualified(server: &str, tool: &str) -> String {
    format!("{server}.{tool}")
}

/// One server of keyless.json's `Mcp.Servers`: a program spoken to over stdio (`Command`, `Args`,
/// `Env`) or a Streamable HTTP endpoint (`Url`, `Headers`, whose values may name environment
/// variables as `${NAME}`, so no secret is written in the file). `TrustReadOnly` lets the
/// server's `readOnlyHint` lower its tools to the ReadOnly tier. `ClientId` is an OAuth client
/// registered for keyless beforehand at the server's authorization server (`mcp login`), and
/// `ClientSecretEnv` the environment variable its secret is read from (never the secret itself).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
pub struct ServerConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub env: std::collections::BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub headers: std::collections::BTreeMap<String, String>,
    #[serde(default)]
    pub trust_read_only: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret_env: Option<String>,
}

/// Reads `Mcp.Servers`.
///
/// # Errors
/// A message for the setting: not an object, a bad server name, an unknown field, neither or both
/// of `Command` and `Url`, a URL that is not http(s).
pub fn servers_from_json(
    value: &serde_json::Value,
) -> Result<std::collections::BTreeMap<String, ServerConfig>, String> {
    let serde_json::Value::Object(map) = value else {
        return Err("must be an object of servers by name".into());
    };
    let mut out = std::collections::BTreeMap::new();
    for (name, v) in map {
        if !valid_server(name) {
            return Err(format!(
                "\"{name}\" is not a server name ([a-z0-9_-]{{1,64}}, as required_mcp)"
            ));
        }
        let s: ServerConfig =
            serde_json::from_value(v.clone()).map_err(|e| format!("{name}: {e}"))?;
        match (&s.command, &s.url) {
            (Some(c), None) if !c.trim().is_empty() => {}
            (None, Some(u)) if u.starts_with("http://") || u.starts_with("https://") => {}
            (None, Some(u)) => return Err(format!("{name}: Url \"{u}\" is not http(s)")),
            _ => {
                return Err(format!(
                    "{name}: give either Command (stdio) or Url (Streamable HTTP)"
                ))
            }
        }
        if s.client_id.is_some() && s.url.is_none() {
            return Err(format!("{name}: ClientId is for a server with a Url"));
        }
        if s.client_secret_env.is_some() && s.client_id.is_none() {
            return Err(format!("{name}: ClientSecretEnv needs a ClientId"));
        }
        out.insert(name.clone(), s);
    }
    Ok(out)
}

/// Expands `${NAME}` in a header value from `env`; a name `env` does not know is an error.
///
/// # Errors
/// The variable that is not set.
pub fn expand_env(value: &str, env: impl Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return Err(format!("unclosed ${{ in \"{value}\""));
        };
        let name = &after[..end];
        out.push_str(&env(name).ok_or_else(|| format!("environment variable {name} is not set"))?);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_have_a_form() {
        assert_eq!(pattern("mcp__*"), Ok((None, None)));
        assert_eq!(pattern("mcp__files__*"), Ok((Some("files"), None)));
        assert_eq!(
            pattern("mcp__files__read_file"),
            Ok((Some("files"), Some("read_file")))
        );
        for bad in [
            "mcp__",
            "mcp__files",
            "mcp__Files__x",
            "mcp__files__",
            "mcp__a b__x",
            "mcp__f__x y",
        ] {
            assert!(pattern(bad).is_err(), "{bad}");
        }
        assert!(covers("mcp__*", "a", "b"));
        assert!(covers("mcp__a__*", "a", "b"));
        assert!(!covers("mcp__a__*", "c", "b"));
        assert!(covers("mcp__a__b", "a", "b"));
        assert!(!covers("mcp__a__b", "a", "bb"));
        assert!(!covers("Read", "a", "b"));
    }

    #[test]
    fn servers_are_checked() {
        let ok = serde_json::json!({
            "files": {"Command": "npx", "Args": ["-y", "x"]},
            "web": {"Url": "http://127.0.0.1:1/mcp", "Headers": {"Authorization": "Bearer ${T}"}, "TrustReadOnly": true}
        });
        let s = servers_from_json(&ok).unwrap();
        assert_eq!(s.len(), 2);
        assert!(s["web"].trust_read_only);
        for bad in [
            serde_json::json!({"Files": {"Command": "x"}}),
            serde_json::json!({"a": {}}),
            serde_json::json!({"a": {"Command": "x", "Url": "http://h"}}),
            serde_json::json!({"a": {"Url": "file:///etc"}}),
            serde_json::json!({"a": {"Command": "x", "Shell": true}}),
            serde_json::json!(["a"]),
        ] {
            assert!(servers_from_json(&bad).is_err(), "{bad}");
        }
        let env = |n: &str| (n == "T").then(|| "s3".to_string());
        assert_eq!(expand_env("Bearer ${T}", env).unwrap(), "Bearer s3");
        assert!(expand_env("${U}", env).is_err());
        assert!(expand_env("${T", env).is_err());
    }
}
