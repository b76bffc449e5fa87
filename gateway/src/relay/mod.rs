//! The relay: all of MCP between client sessions and upstreams.
//!
//! Two roads. A plain `tools/call` (a 2026-07-28 client's, or a 2025-11-25 session's the
//! shortcut may serve) of a tool on a 2026-07-28 upstream over HTTP takes the direct road
//! (`direct`, the app's [`Gateway::shortcut`]): its bytes forwarded with one POST, under the
//! same breaker, timeout, classification and metrics. Everything else goes through rmcp's
//! server and client: a [`Session`] per client session (or per 2026-07-28 request), the
//! upstream's shared connection.

mod core;
mod direct;
mod gateway;
mod input;
mod names;
mod session;

pub use self::gateway::{Collision, Gateway, Reloaded};
pub use self::session::Session;
