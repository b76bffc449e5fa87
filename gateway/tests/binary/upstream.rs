//! The upstreams behind the gateway: the tests' rmcp upstream (`common::Up`) over Streamable
//! HTTP with its tool calls counted, and this binary itself as a stdio upstream child.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, ListToolsResult, PaginatedRequestParams, ServerConfig};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler};

use crate::common::{self, Up};

/// Set in a child the gateway starts: this binary serves `common::Up` on stdio instead.
pub const STDIO_UPSTREAM: &str = "TOOLBREAKER_TEST_STDIO_UPSTREAM";
/// Set in such a child: the file it writes its pid to before it serves.
pub const PID_FILE: &str = "TOOLBREAKER_TEST_PID_FILE";
/// Set in such a child: it does not exit when its stdin closes (as a server that ignores the
/// end of its input), only when it is killed (or after [`LINGER_FOR`]).
pub const LINGER: &str = "TOOLBREAKER_TEST_LINGER";
/// How long a lingering child waits before it exits all the same (a test that failed leaves
/// no process behind for long).
const LINGER_FOR: Duration = Duration::from_secs(300);
/// What such a child writes on its stderr before it serves (the gateway logs it).
pub const STDERR_LINE: &str = "stdio upstream: serving on stdin and stdout";
/// Set in such a child: it never answers (not even `initialize`) and ignores its stdin, as a
/// server that hangs; it says [`SILENT_LINE`] and its pid on stderr, then waits until it is
/// killed (or [`LINGER_FOR`] has passed).
pub const SILENT: &str = "TOOLBREAKER_TEST_SILENT";
/// What a [`SILENT`] child writes on stderr, followed by `<PID>`.
pub const SILENT_LINE: &str = "silent upstream: never answering; pid";

/// The pid a [`SILENT`] child wrote in `line` (a line of the gateway's log).
pub fn silent_pid(line: &str) -> Result<u32, String> {
    let (_, after) = line
        .split_once(SILENT_LINE)
        .ok_or_else(|| format!("not the silent child's line: {line}"))?;
    after
        .trim_start()
        .strip_prefix('<')
        .and_then(|rest| rest.split_once('>'))
        .and_then(|(pid, _)| pid.parse().ok())
        .ok_or_else(|| format!("no pid in the silent child's line: {line}"))
}

/// The stdio upstream's `main`: until stdin closes (and, with [`LINGER`], after).
pub async fn serve_stdio() {
    if std::env::var_os(SILENT).is_some() {
        eprintln!("{SILENT_LINE} <{}>", std::process::id());
        tokio::time::sleep(LINGER_FOR).await;
        return;
    }
    if let Some(path) = std::env::var_os(PID_FILE) {
        std::fs::write(path, std::process::id().to_string()).expect("the pid file is written");
    }
    eprintln!("{STDERR_LINE}");
    let argv: Vec<String> = std::env::args().skip(1).collect();
    if !argv.is_empty() {
        // As a server that logs how it was started (the gateway relays it to its log).
        eprintln!("stdio upstream: argv {argv:?}");
    }
    common::serve_stdio().await;
    if std::env::var_os(LINGER).is_some() {
        tokio::time::sleep(LINGER_FOR).await;
    }
}

/// `common::Up` (without `crash`), counting the tool calls that reach it.
#[derive(Clone)]
pub struct Counted {
    up: Up,
    calls: Arc<AtomicUsize>,
}

impl Counted {
    /// Serves it over Streamable HTTP on a free loopback port: its `/mcp` URL and its count
    /// of `tools/call` requests received.
    pub async fn serve() -> (String, Arc<AtomicUsize>) {
        let calls = Arc::new(AtomicUsize::new(0));
        let counted = Counted {
            up: Up { crashable: false },
            calls: calls.clone(),
        };
        (common::serve(move || counted.clone()).await, calls)
    }
}

impl ServerHandler for Counted {
    fn get_info(&self) -> ServerConfig {
        self.up.get_info()
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.up.list_tools(request, context).await
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, ErrorData> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.up.call_tool(request, context).await
    }
}

/// An `[upstreams.NAME]` section running this binary as a stdio upstream, with `env` set for
/// it besides [`STDIO_UPSTREAM`].
pub fn stdio_section(name: &str, env: &[(&str, &str)]) -> Result<String, String> {
    let me = std::env::current_exe().map_err(|e| e.to_string())?;
    let me = me.to_str().ok_or("this binary's path is not UTF-8")?;
    let mut vars = format!("{STDIO_UPSTREAM} = \"1\"");
    for (var, value) in env {
        vars.push_str(&format!(", {var} = {value:?}"));
    }
    Ok(format!(
        "[upstreams.{name}]\ncommand = {me:?}\nenv = {{ {vars} }}\n"
    ))
}
