//! Upstream MCP servers: one shared connection each, supervised, behind its breaker.

mod handler;
mod link;
mod routes;
mod sessions;
mod upstream;

pub use self::handler::{PROTOCOL, UpstreamHandler, error_data};
pub use self::link::{Link, connect};
pub use self::routes::{Origin, Registered, Routes, SessionId};
pub use self::sessions::Sessions;
pub use self::upstream::{Refusal, Upstream};
