//! `virtlens mcp`: a Model Context Protocol server on standard input and output (rmcp, the
//! official Rust SDK). Each answering command is a tool whose result is its `--json` output
//! ([`tools`], its options from the command line's definition: [`command_line`]); the findings
//! catalogue and the format guide are resources, with two prompts ([`resources`]); files are
//! read only under `--root` ([`paths`]); the handler is [`server`].

mod command_line;
mod paths;
mod resources;
mod server;
mod tools;

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context as _;
use rmcp::ServiceExt;

use crate::args::McpArgs;

/// Serves until the client closes standard input.
pub fn run(a: &McpArgs) -> anyhow::Result<ExitCode> {
    let ctx = Arc::new(tools::Context {
        roots: paths::Roots::new(&a.root)?,
        allow_live: a.allow_live,
        stop: AtomicBool::new(false),
    });
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the server's runtime")?;
    let served = runtime.block_on(async {
        let service = server::Server::new(Arc::clone(&ctx))
            .serve(rmcp::transport::stdio())
            .await
            .context("starting the MCP session on standard input and output")?;
        service.waiting().await.context("serving the MCP session")?;
        anyhow::Ok(())
    });
    // A live capture still running ends at its next look at the flag.
    ctx.stop.store(true, Ordering::Relaxed);
    runtime.shutdown_timeout(Duration::from_secs(2));
    served?;
    Ok(ExitCode::SUCCESS)
}
