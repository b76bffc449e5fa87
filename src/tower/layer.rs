//! `CircuitBreakerLayer`: wraps services in [`CircuitBreakerService`].

use core::fmt;
use std::sync::Arc;

use ::tower::Layer;

use super::CircuitBreakerService;
use crate::breaker::CircuitBreaker;

/// A [`Layer`] that puts services behind one [`CircuitBreaker`], classifying their results with
/// `C`.
///
/// Every service the layer makes shares the breaker and the classifier, so clones of a client
/// service (one per connection, one per task) all feed and obey the same breaker. Use one layer,
/// and one breaker, per dependency.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use toolbreaker::tower::CircuitBreakerLayer;
/// use toolbreaker::{CircuitBreaker, FailureKind, Outcome};
/// use tower::ServiceBuilder;
///
/// let breaker = Arc::new(CircuitBreaker::builder().failure_threshold(3).build()?);
/// let classify = |result: &Result<u16, std::io::Error>| match result {
///     Ok(500..=599) | Err(_) => Outcome::Failure(FailureKind::Unavailable),
///     Ok(400..=499) => Outcome::Ignored,
///     Ok(_) => Outcome::Success,
/// };
/// let service = ServiceBuilder::new()
///     .layer(CircuitBreakerLayer::new(Arc::clone(&breaker), classify))
///     .service_fn(|status: u16| async move { Ok::<_, std::io::Error>(status) });
/// assert!(Arc::ptr_eq(service.breaker(), &breaker));
/// # Ok::<(), toolbreaker::ConfigError>(())
/// ```
pub struct CircuitBreakerLayer<C> {
    breaker: Arc<CircuitBreaker>,
    classifier: Arc<C>,
}

impl<C> CircuitBreakerLayer<C> {
    /// A layer guarding services with `breaker`, whose results `classifier` turns into outcomes
    /// (any [`Classify`](crate::Classify) implementation, closures included).
    pub fn new(breaker: Arc<CircuitBreaker>, classifier: C) -> Self {
        CircuitBreakerLayer {
            breaker,
            classifier: Arc::new(classifier),
        }
    }

    /// The breaker every service from this layer shares.
    pub fn breaker(&self) -> &Arc<CircuitBreaker> {
        &self.breaker
    }

    /// The classifier every service from this layer shares.
    pub fn classifier(&self) -> &C {
        &self.classifier
    }
}

#[cfg(feature = "http")]
impl CircuitBreakerLayer<crate::classify::http::HttpClassifier> {
    /// A layer for services answering [`http::Response`]s (features `tower`
    /// and `http`): responses are classified by
    /// [`HttpClassifier`](crate::classify::http::HttpClassifier)'s table (5xx, 408 and 429 count, other 4xx
    /// are ignored) and every error of the inner service counts as a failure of kind
    /// [`Other`](crate::FailureKind::Other). For per-status overrides, pass an `HttpClassifier`
    /// to [`new`](Self::new).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use toolbreaker::tower::CircuitBreakerLayer;
    /// use toolbreaker::{CircuitBreaker, FailureKind, Outcome, classify::http::HttpClassifier};
    ///
    /// let breaker = Arc::new(CircuitBreaker::builder().build()?);
    /// let layer = CircuitBreakerLayer::http(breaker);
    /// let unavailable = http::Response::builder().status(503).body(()).unwrap();
    /// let outcome = layer.classifier().response(&unavailable);
    /// assert_eq!(outcome, Outcome::Failure(FailureKind::Unavailable));
    /// assert_eq!(layer.classifier(), &HttpClassifier::new());
    /// # Ok::<(), toolbreaker::ConfigError>(())
    /// ```
    pub fn http(breaker: Arc<CircuitBreaker>) -> Self {
        Self::new(breaker, crate::classify::http::HttpClassifier::new())
    }
}

impl<S, C> Layer<S> for CircuitBreakerLayer<C> {
    type Service = CircuitBreakerService<S, C>;

    fn layer(&self, inner: S) -> Self::Service {
        CircuitBreakerService::from_shared(
            inner,
            Arc::clone(&self.breaker),
            Arc::clone(&self.classifier),
        )
    }
}

// By hand: the classifier is shared, so a layer clones without `C: Clone`.
impl<C> Clone for CircuitBreakerLayer<C> {
    fn clone(&self) -> Self {
        CircuitBreakerLayer {
            breaker: Arc::clone(&self.breaker),
            classifier: Arc::clone(&self.classifier),
        }
    }
}

impl<C> fmt::Debug for CircuitBreakerLayer<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CircuitBreakerLayer")
            .field("breaker", &self.breaker)
            .finish_non_exhaustive()
    }
}
