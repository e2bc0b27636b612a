//! What the extension commands (MCP and SSH, `super::extension`) run with: a host's tools (its
//! ssh options and MCP servers) and, for one batch, the catalog a piece run found.

use super::remote::SshOptions;
use super::Failure;
use crate::mcp::Pool;
use keyless_core::piece::tools::Catalog;
use keyless_core::Code;
use std::sync::Arc;

/// What the extension commands run with.
#[derive(Debug, Default)]
pub struct Extensions {
    /// The SSH registry and the local user (and the MCP tools found at session start).
    pub catalog: Catalog,
    pub ssh: SshOptions,
    /// The MCP servers, kept per session (the executor's session is the scope).
    pub mcp: Option<Arc<Pool>>,
}

/// What a host (serve, run) offers the extension commands: how it runs ssh, and its MCP servers
/// (keyless.json `Mcp.Servers`; `None` when it declares none).
#[derive(Debug, Clone, Default)]
pub struct Tools {
    pub ssh: SshOptions,
    pub mcp: Option<Arc<Pool>>,
}

impl Tools {
    /// The tools of a host whose configuration is `cfg`, for the workspace at `root` (the MCP
    /// servers' working folder).
    ///
    /// # Errors
    /// When the MCP runtime cannot be built.
    pub fn new(
        cfg: &keyless_core::keyless_json::KeylessConfig,
        root: &std::path::Path,
        answers: bool,
    ) -> std::io::Result<Self> {
        let mcp = if cfg.mcp_servers.is_empty() {
            None
        } else {
            Some(Arc::new(
                Pool::new(cfg.mcp_servers.clone(), root.to_path_buf())?.answering(answers),
            ))
        };
        Ok(Self {
            ssh: SshOptions::from_env(),
            mcp,
        })
    }

    /// What the session `scope` following `piece` can use: the MCP tools of the servers the
    /// piece requires (started now if they are not running), the SSH registry and the local
    /// user.
    ///
    /// # Errors
    /// KA_MCP_NOT_CONFIGURED (a required server keyless.json does not declare),
    /// KA_MCP_UNAVAILABLE (one that does not start), KA_CONFIG_INVALID (an unreadable SSH
    /// registry, when the piece uses SSH tools).
    pub fn catalog(
        &self,
        scope: &str,
        piece: &keyless_core::piece::Piece,
    ) -> Result<Catalog, Failure> {
        let uses_ssh = piece
            .movements
            .iter()
            .flat_map(|m| &m.allowed_tools)
            .chain(&piece.shared_tools)
            .any(|t| keyless_core::piece::tools::is_ssh_tool(t));
        let ssh = match crate::ssh_registry::load() {
            Ok(list) => list,
            Err(e) if uses_ssh => {
                return Err(Failure::new(
                    Code::ConfigInvalid,
                    format!("the SSH registry cannot be read: {e}"),
                ))
            }
            Err(_) => Vec::new(),
        };
        let mut mcp = Vec::new();
        for server in &piece.required_mcp {
            let pool = self
                .mcp
                .as_ref()
                .filter(|p| p.declared().contains(server))
                .ok_or_else(|| {
                    let e = crate::mcp::McpError::NotConfigured(server.clone());
                    Failure::new(
                        e.code(),
                        format!("piece \"{}\" requires it: {e}", piece.name),
                    )
                })?;
            let tools = pool.tools(scope, server).map_err(|e| {
                Failure::new(
                    e.code(),
                    format!("piece \"{}\" requires it: {e}", piece.name),
                )
            })?;
            mcp.extend(tools);
        }
        Ok(Catalog {
            mcp,
            ssh,
            user: crate::ssh_registry::current_user(),
        })
    }

    /// The extension commands' context for one batch.
    #[must_use]
    pub fn extensions(&self, catalog: Catalog) -> Extensions {
        Extensions {
            catalog,
            ssh: self.ssh.clone(),
            mcp: self.mcp.clone(),
        }
    }
}
