//! When a channel may send next: the rate limit (at most `per_minute`
//! notifications in any 60 s) and the backoff after failures (the first
//! retry after `retry`, doubling up to `retry_max`). Pure: the caller
//! passes the time in.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

const WINDOW: Duration = Duration::from_secs(60);

#[derive(Debug, Clone)]
pub struct Pacer {
    per_minute: usize,
    retry: Duration,
    retry_max: Duration,
    /// When the sends inside the last [`WINDOW`] went out.
    sent: VecDeque<Instant>,
    /// Failures since the last success.
    pub failures: u32,
    retry_at: Option<Instant>,
}

impl Pacer {
    /// `per_minute` 0 is no limit.
    pub fn new(per_minute: u64, retry: Duration, retry_max: Duration) -> Pacer {
        Pacer {
            per_minute: usize::try_from(per_minute).unwrap_or(usize::MAX),
            retry: retry.max(Duration::from_millis(1)),
            retry_max: retry_max.max(retry),
            sent: VecDeque::new(),
            failures: 0,
            retry_at: None,
        }
    }

    /// `None` when a send may go now, else the moment it may.
    pub fn wait_until(&mut self, now: Instant) -> Option<Instant> {
        while self
            .sent
            .front()
            .is_some_and(|&t| now.saturating_duration_since(t) >= WINDOW)
        {
            self.sent.pop_front();
        }
        let limited = (self.per_minute > 0 && self.sent.len() >= self.per_minute)
            .then(|| self.sent[self.sent.len() - self.per_minute] + WINDOW);
        [self.retry_at.filter(|&t| t > now), limited]
            .into_iter()
            .flatten()
            .max()
    }

    /// A send went out.
    pub fn sent(&mut self, now: Instant) {
        self.sent.push_back(now);
        self.failures = 0;
        self.retry_at = None;
    }

    /// A send failed: how long until the next try.
    pub fn failed(&mut self, now: Instant) -> Duration {
        let shift = self.failures.min(20);
        self.failures = self.failures.saturating_add(1);
        let delay = self
            .retry
            .checked_mul(1u32 << shift)
            .unwrap_or(self.retry_max)
            .min(self.retry_max);
        self.retry_at = Some(now + delay);
        delay
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn the_rate_limit_holds_a_minute_window() {
        let t0 = Instant::now();
        let mut p = Pacer::new(2, S, 60 * S);
        assert_eq!(p.wait_until(t0), None);
        p.sent(t0);
        p.sent(t0 + 10 * S);
        assert_eq!(p.wait_until(t0 + 20 * S), Some(t0 + 60 * S));
        assert_eq!(p.wait_until(t0 + 60 * S), None, "the first left the window");
        p.sent(t0 + 60 * S);
        assert_eq!(p.wait_until(t0 + 61 * S), Some(t0 + 70 * S));
        let mut free = Pacer::new(0, S, S);
        for i in 0..1000 {
            free.sent(t0 + i * Duration::from_millis(1));
        }
        assert_eq!(free.wait_until(t0 + S), None);
    }

    #[test]
    fn backoff_doubles_to_its_ceiling_and_a_success_resets_it() {
        let t0 = Instant::now();
        let mut p = Pacer::new(6, 5 * S, 30 * S);
        let delays: Vec<u64> = (0..5).map(|_| p.failed(t0).as_secs()).collect();
        assert_eq!(delays, [5, 10, 20, 30, 30]);
        assert_eq!(p.wait_until(t0 + S), Some(t0 + 30 * S));
        assert_eq!(p.wait_until(t0 + 30 * S), None);
        p.sent(t0 + 30 * S);
        assert_eq!(p.failures, 0);
        assert_eq!(p.failed(t0 + 31 * S), 5 * S);
        for _ in 0..100 {
            p.failed(t0);
        }
        assert_eq!(p.failed(t0), 30 * S, "no overflow after many failures");
    }
}
