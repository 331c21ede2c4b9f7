//! The protocol side: rmcp's server handler, listing the tools, resources and prompts and
//! answering calls. A call runs on tokio's blocking pool, so a long measurement does not stop
//! the server answering, and whatever goes wrong in it (an error, even a panic) comes back as
//! the tool's error result, never as the end of the server.

use std::sync::Arc;

use rmcp::ErrorData as McpError;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, GetPromptRequestParams,
    GetPromptResponse, Implementation, ListPromptsResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ServerHandler, model::JsonObject};
use serde_json::Value;

use super::resources;
use super::tools::{self, Context, LIVE_NOTE, TOOLS};
use crate::output;

/// The handler: the calls' shared context.
pub struct Server {
    ctx: Arc<Context>,
}

impl Server {
    pub fn new(ctx: Arc<Context>) -> Server {
        Server { ctx }
    }

    fn tool(&self, t: &tools::Tool) -> Tool {
        let mut description = t.description.to_string();
        if t.live {
            description.push_str("\n\n");
            description.push_str(LIVE_NOTE);
            description.push_str(if self.ctx.allow_live {
                " (it was)."
            } else {
                " (it was not: calling it is an error)."
            });
        }
        let input = tools_schema(t);
        let mut tool = Tool::new(t.name, description, Arc::new(input)).with_title(t.title);
        if let Ok(Value::Object(schema)) = serde_json::from_str::<Value>(t.output_schema) {
            tool = tool.with_raw_output_schema(Arc::new(schema));
        }
        tool
    }
}

/// The input schema of `t`, or an empty object schema if the command cannot be found.
fn tools_schema(t: &tools::Tool) -> JsonObject {
    super::command_line::input_schema(&t.spec).unwrap_or_else(|_| {
        let mut o = JsonObject::new();
        o.insert("type".into(), Value::String("object".into()));
        o
    })
}

fn tool_error(text: String) -> CallToolResponse {
    CallToolResult::error(vec![ContentBlock::text(text)]).into()
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        let live = if self.ctx.allow_live {
            "The live tools (top_snapshot, diagnose_live, record) are on."
        } else {
            "The live tools (top_snapshot, diagnose_live, record) are off: the server was \
             started without --allow-live."
        };
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .enable_prompts()
                .build(),
        )
        .with_server_info(Implementation::new("virtlens", env!("CARGO_PKG_VERSION")))
        .with_instructions(format!(
            "virtlens explains the overhead a hypervisor (KVM, Hyper-V) adds to a guest. Give \
             `diagnose` an exit profile (a file under {} or the text of `perf kvm stat report`, \
             kvm_stat, perf script, …) to learn why a VM is slow; give `lint` a VM \
             configuration. Each result is the CLI's --json output. {FORMATS} says how to \
             collect each input; {FINDINGS} describes every finding id. {live}",
            self.ctx.roots.describe(),
            FORMATS = resources::FORMATS,
            FINDINGS = resources::FINDINGS,
        ))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(
            TOOLS.iter().map(|t| self.tool(t)).collect(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let Some(tool) = tools::find(&request.name) else {
            let names: Vec<&str> = TOOLS.iter().map(|t| t.name).collect();
            return Ok(tool_error(format!(
                "no tool `{}`; the tools are {}",
                request.name,
                names.join(", ")
            )));
        };
        let args = request.arguments.unwrap_or_default();
        let ctx = Arc::clone(&self.ctx);
        let ran = tokio::task::spawn_blocking(move || tools::call(&ctx, tool, &args)).await;
        Ok(match ran {
            Ok(Ok(json)) => match serde_json::from_str::<Value>(&json) {
                Ok(value) => {
                    let mut result = CallToolResult::structured(value);
                    result.content = vec![ContentBlock::text(json)];
                    result.into()
                }
                Err(e) => tool_error(format!("{}: the result is not JSON: {e}", tool.name)),
            },
            Ok(Err(e)) => tool_error(output::message(&e)),
            Err(e) => tool_error(format!("{}: failed inside virtlens: {e}", tool.name)),
        })
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        Ok(ListResourcesResult::with_all_items(resources::list()))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        match resources::read(&request.uri) {
            Some(c) => Ok(ReadResourceResult::new(vec![c]).into()),
            None => Err(McpError::resource_not_found(
                format!("no resource {}", request.uri),
                None,
            )),
        }
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        Ok(ListPromptsResult::with_all_items(resources::prompts()))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        let args = request.arguments.unwrap_or_default();
        let arg = |k: &str| -> Option<String> {
            match args.get(k)? {
                Value::String(s) => Some(s.clone()),
                Value::Null => None,
                v => Some(v.to_string()),
            }
        };
        match resources::prompt(&request.name, &arg) {
            Some(p) => Ok(p.into()),
            None => Err(McpError::invalid_params(
                format!("no prompt `{}`", request.name),
                None,
            )),
        }
    }
}
