//! Placeholder: the MCP stdio tests (written next).
fn main() {}
