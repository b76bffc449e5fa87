//! One test binary for the agent's side of the crate: the guard pipeline (`ToolGuard::call`) and
//! the `ToolResult` the model sees. Each file is a module, gated on the crate features it uses
//! beyond `serde` (the binary's `required-features`).

#[cfg(all(feature = "tokio", feature = "http"))]
mod pipeline;
#[cfg(feature = "tokio")]
mod retry_budget;
mod tool_result;
