//! How long a listing may be cached, and by whom (SEP-2549's `ttlMs` and `cacheScope`, part of
//! MCP 2026-07-28): what an upstream said of each listing it gave, what is left of it when the
//! gateway serves its last good one, and what the gateway's merged listing says.
//!
//! - The gateway's listing is the union of its upstreams': it lives as long as its shortest
//!   lived part, and is `private` if any part is.
//! - A listing served from the last good one (the upstream is open, or failed to list) says
//!   what is left of its life: `ttlMs` less its age, never below 0.
//! - A `private` listing is one client's: served to the client whose request fetched it, and
//!   never from the last good one, which another client could be shown.
//! - An upstream that says nothing (2025-11-25) gives a listing of no stated life (`ttlMs` 0
//!   in the gateway's answer: re-list when in doubt) that anyone may be shown (`public`).

use std::time::{Duration, Instant};

use rmcp::model::CacheScope;

/// A listing's life and scope.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Freshness {
    /// Milliseconds it may be cached for from when it was given; `None`: not said.
    pub ttl_ms: Option<u64>,
    /// Only the client it was given to may be shown it.
    pub private: bool,
}

impl Freshness {
    /// What a page says: its `ttlMs` and `cacheScope`.
    pub fn of(ttl_ms: Option<u64>, scope: Option<&CacheScope>) -> Self {
        Freshness {
            ttl_ms,
            private: matches!(scope, Some(CacheScope::Private)),
        }
    }

    /// Two parts of one listing (two pages, two upstreams): the shorter life, `private` if
    /// either is.
    #[must_use]
    pub fn and(self, other: Freshness) -> Self {
        let ttl_ms = match (self.ttl_ms, other.ttl_ms) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        Freshness {
            ttl_ms,
            private: self.private || other.private,
        }
    }

    /// What is left of it `age` after it was given (0 once its life is over).
    #[must_use]
    pub fn aged(self, age: Duration) -> Self {
        let age_ms = u64::try_from(age.as_millis()).unwrap_or(u64::MAX);
        Freshness {
            ttl_ms: self.ttl_ms.map(|ttl| ttl.saturating_sub(age_ms)),
            ..self
        }
    }

    /// The `ttlMs` and `cacheScope` of an answer that is this listing (0 when not said).
    pub fn hints(self) -> (u64, CacheScope) {
        let scope = if self.private {
            CacheScope::Private
        } else {
            CacheScope::Public
        };
        (self.ttl_ms.unwrap_or(0), scope)
    }
}

/// A listing the upstream gave, kept as the last good one.
#[derive(Clone, Debug)]
pub struct Kept<T> {
    /// Every item, in the upstream's order.
    pub items: Vec<T>,
    /// What the upstream said of it.
    pub freshness: Freshness,
    /// When it was given.
    pub at: Instant,
}

/// A listing as it is served: fetched now, or the last good one.
#[derive(Clone, Debug)]
pub struct Listed<T> {
    /// Every item.
    pub items: Vec<T>,
    /// Its life left, and scope.
    pub freshness: Freshness,
    /// Served from the last good one, not fetched for this request.
    pub kept: bool,
}

impl<T> Listed<T> {
    /// The listing if the client asking may be shown it: one fetched for its request, or a
    /// kept one that is not `private`.
    pub fn shareable(self) -> Option<Self> {
        (!(self.kept && self.freshness.private)).then_some(self)
    }
}

impl<T: Clone> Kept<T> {
    /// Served again: its items, with what is left of its life.
    pub fn served(&self) -> Listed<T> {
        Listed {
            items: self.items.clone(),
            freshness: self.freshness.aged(self.at.elapsed()),
            kept: true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_live_as_long_as_the_shortest_and_are_private_if_any_is() {
        let public = |ttl| Freshness {
            ttl_ms: ttl,
            private: false,
        };
        assert_eq!(public(Some(500)).and(public(Some(200))).ttl_ms, Some(200));
        assert_eq!(public(None).and(public(Some(200))).ttl_ms, Some(200));
        assert_eq!(public(Some(200)).and(public(None)).ttl_ms, Some(200));
        assert_eq!(public(None).and(public(None)).ttl_ms, None);
        let private = Freshness {
            ttl_ms: None,
            private: true,
        };
        assert!(public(None).and(private).private);
        assert!(private.and(public(None)).private);
        assert!(!public(None).and(public(None)).private);
    }

    #[test]
    fn a_kept_listing_says_what_is_left_of_its_life_never_below_zero() {
        let given = Freshness {
            ttl_ms: Some(1_000),
            private: false,
        };
        assert_eq!(given.aged(Duration::from_millis(300)).ttl_ms, Some(700));
        assert_eq!(given.aged(Duration::from_secs(5)).ttl_ms, Some(0));
        assert_eq!(given.aged(Duration::MAX).ttl_ms, Some(0));
        let unsaid = Freshness::default();
        assert_eq!(unsaid.aged(Duration::from_secs(5)).ttl_ms, None);
        assert_eq!(unsaid.hints(), (0, CacheScope::Public));
    }

    #[test]
    fn a_private_listing_is_shown_only_to_the_client_it_was_fetched_for() {
        let private = Freshness::of(Some(10), Some(&CacheScope::Private));
        assert!(private.private);
        assert_eq!(private.hints(), (10, CacheScope::Private));
        let fetched = Listed {
            items: vec![1],
            freshness: private,
            kept: false,
        };
        assert!(fetched.clone().shareable().is_some());
        let kept = Listed {
            kept: true,
            ..fetched
        };
        assert!(kept.shareable().is_none());
        let public = Listed {
            items: vec![1],
            freshness: Freshness::of(Some(10), Some(&CacheScope::Public)),
            kept: true,
        };
        assert!(public.shareable().is_some());
    }
}
