//! Listening sockets whose errors say where: a port already in use, or one the process may not
//! bind, is reported with the address (`cannot listen on 127.0.0.1:8080: Address already in
//! use`), never with the system's words alone.
//!
//! Shared by the examples (`gateway`, `mcp_gateway`, `tower_client`) and their tests.

use std::io;
use std::net::SocketAddr;

/// A TCP listener on `addr`.
///
/// # Errors
///
/// The system's error of binding, its kind kept and its text prefixed by the address
/// ([`named`]).
pub async fn tcp(addr: impl Into<SocketAddr>) -> io::Result<tokio::net::TcpListener> {
    let addr = addr.into();
    tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| named(addr, e))
}

/// `error`, the error of binding `addr`, with the address in its text and its kind kept.
pub fn named(addr: SocketAddr, error: io::Error) -> io::Error {
    io::Error::new(error.kind(), format!("cannot listen on {addr}: {error}"))
}
