//! The relay: all of MCP between client sessions and upstreams.

mod core;
mod gateway;
mod input;
mod names;
mod session;

pub use self::gateway::{Collision, Gateway, Reloaded};
pub use self::session::Session;
