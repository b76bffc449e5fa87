//! One test binary for `toolbreaker_gateway::serve`: the HTTP routes and their security, the
//! graceful shutdown, stdio serving, the shutdown signal and TLS, against a small rmcp handler
//! ([`probe::Probe`]) over real sockets, with real rmcp clients and reqwest.

mod http;
mod probe;
mod shutdown;
mod signal;
mod stdio;
mod tls;
