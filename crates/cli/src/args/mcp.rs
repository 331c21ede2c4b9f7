//! `mcp`: the Model Context Protocol server's roots and whether live tools are on.

use std::path::PathBuf;

use clap::Args;

#[derive(Debug, Args)]
pub struct McpArgs {
    /// A directory whose files the tools may read (repeatable; default: the working directory).
    /// Paths are resolved (symlinks, `..`) before they are checked
    #[arg(long, value_name = "DIR")]
    pub root: Vec<PathBuf>,
    /// Offer the live tools (top_snapshot, diagnose_live, record): they capture this host's KVM
    /// events and need root and tracefs
    #[arg(long)]
    pub allow_live: bool,
}
