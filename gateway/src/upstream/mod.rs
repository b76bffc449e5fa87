//! Upstream MCP servers: one shared connection each, supervised, behind its breaker.

mod client_time;
mod direct;
mod handler;
mod link;
mod listen;
mod listing;
mod meters;
mod node;
mod progress;
mod routes;
mod sessions;

pub use self::client_time::ClientTime;
pub use self::direct::{DirectCall, OnProgress, RawJson, plain_header_value};
pub use self::handler::{PROTOCOL, UpstreamHandler, error_data};
pub use self::link::{
    Cause, INHERITED, Link, Unreached, connect, refused_access, unreached, url_credentials,
};
pub use self::listing::{Freshness, Listed};
pub use self::node::{Refusal, Relayed, UNAUTHORIZED, Upstream, failure_words, reworded};
pub use self::routes::{Ask, Asks, Origin, ProgressTo, Registered, Routes, SessionId};
pub use self::sessions::{Listener, Sessions};
