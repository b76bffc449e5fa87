//! The bearer token: `Authorization: Bearer TOKEN`, compared in constant time.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use subtle::ConstantTimeEq;

use super::log_limit::{LOG_INTERVAL, LogLimit};
use crate::redact::shown;

/// The token a client must present as `Authorization: Bearer TOKEN`.
///
/// Its `Debug` form is `BearerToken(<redacted>)`, so options that hold one can be logged. The
/// comparison takes the same time wherever the presented token first differs; only its length
/// can be told apart.
///
/// # Examples
///
/// ```
/// use toolbreaker_gateway::serve::BearerToken;
///
/// let token = BearerToken::new("s3cret").unwrap();
/// assert!(token.matches(b"s3cret"));
/// assert!(!token.matches(b"s3creT"));
/// assert_eq!(format!("{token:?}"), "BearerToken(<redacted>)");
/// assert!(BearerToken::new("").is_none());
/// assert!(BearerToken::new("two words").is_none());
/// ```
#[derive(Clone)]
pub struct BearerToken(Arc<[u8]>);

impl BearerToken {
    /// The token `token`; `None` if it is empty or holds a byte that cannot appear in an
    /// `Authorization` header's credential (anything but visible ASCII: no spaces, no control
    /// characters, no non-ASCII).
    pub fn new(token: impl AsRef<str>) -> Option<BearerToken> {
        let token = token.as_ref().as_bytes();
        let visible = token.iter().all(u8::is_ascii_graphic);
        (!token.is_empty() && visible).then(|| BearerToken(token.into()))
    }

    /// Whether `presented` is this token, compared in constant time for a given length.
    pub fn matches(&self, presented: &[u8]) -> bool {
        self.0.as_ref().ct_eq(presented).into()
    }
}

impl std::fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BearerToken(<redacted>)")
    }
}

/// The credential of an `Authorization: Bearer CREDENTIAL` header (scheme case-insensitive).
fn bearer_credential(value: &HeaderValue) -> Option<&[u8]> {
    let value = value.as_bytes();
    let space = value.iter().position(|&byte| byte == b' ')?;
    let (scheme, rest) = value.split_at(space);
    if !scheme.eq_ignore_ascii_case(b"bearer") {
        return None;
    }
    let start = rest.iter().position(|&byte| byte != b' ')?;
    Some(rest[start..].trim_ascii_end())
}

/// Passes a request on if it carries the token, without its `Authorization` header; answers
/// `401 Unauthorized` with `WWW-Authenticate: Bearer` otherwise. What the client sent is never
/// logged.
pub(crate) async fn require_bearer(
    State(token): State<BearerToken>,
    mut request: Request,
    next: Next,
) -> Response {
    let presented = request
        .headers()
        .get(header::AUTHORIZATION)
        .map(bearer_credential);
    let challenge = match presented {
        Some(Some(credential)) if token.matches(credential) => None,
        None => Some("Bearer"),
        Some(_) => Some("Bearer error=\"invalid_token\""),
    };
    let presented = presented.is_some();
    let Some(challenge) = challenge else {
        // Nothing behind this layer (rmcp, the handler, whatever logs a request) sees it.
        request.headers_mut().remove(header::AUTHORIZATION);
        return next.run(request).await;
    };
    // Once per interval at most (a client that keeps trying is one line per 10 s).
    static REFUSED: LogLimit = LogLimit::new(LOG_INTERVAL);
    let cause = if presented { "wrong token" } else { "no token" };
    if let Some(suppressed) = REFUSED.admit(cause) {
        tracing::warn!(
            path = %shown(request.uri().path()),
            presented,
            suppressed,
            "refused a request without the bearer token (`suppressed`: how many since the last \
             one logged)"
        );
    }
    let body = "Unauthorized: this endpoint requires `Authorization: Bearer TOKEN`";
    let mut response = (StatusCode::UNAUTHORIZED, body).into_response();
    let challenge = HeaderValue::from_static(challenge);
    response
        .headers_mut()
        .insert(header::WWW_AUTHENTICATE, challenge);
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn credential(value: &'static str) -> Option<&'static [u8]> {
        let value: &'static HeaderValue = Box::leak(Box::new(HeaderValue::from_static(value)));
        bearer_credential(value)
    }

    #[test]
    fn the_credential_is_read_after_a_bearer_scheme_in_any_case() {
        assert_eq!(credential("Bearer abc"), Some(&b"abc"[..]));
        assert_eq!(credential("bearer  abc "), Some(&b"abc"[..]));
        assert_eq!(credential("BEARER abc"), Some(&b"abc"[..]));
        assert_eq!(credential("Basic abc"), None);
        assert_eq!(credential("Bearer"), None);
        assert_eq!(credential("Bearer "), None);
        assert_eq!(credential("Bearerabc"), None);
    }

    #[test]
    fn a_token_matches_only_itself() {
        let token = BearerToken::new("abc").unwrap();
        assert!(token.matches(b"abc"));
        assert!(!token.matches(b"abd"));
        assert!(!token.matches(b"ab"));
        assert!(!token.matches(b"abcd"));
        assert!(!token.matches(b""));
    }
}
