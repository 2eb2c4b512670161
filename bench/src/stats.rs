//! Summaries of samples: median, percentiles and spread, printed the same
//! way everywhere.

use std::time::Duration;

/// Sorted samples.
#[derive(Debug, Clone)]
pub struct Samples(Vec<Duration>);

impl Samples {
    pub fn new(mut v: Vec<Duration>) -> Samples {
        v.sort();
        Samples(v)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// The nearest-rank percentile `p` (0–100).
    pub fn pct(&self, p: f64) -> Duration {
        if self.0.is_empty() {
            return Duration::ZERO;
        }
        let rank = ((p / 100.0) * self.0.len() as f64).ceil() as usize;
        self.0[rank.clamp(1, self.0.len()) - 1]
    }

    pub fn median(&self) -> Duration {
        self.pct(50.0)
    }

    pub fn min(&self) -> Duration {
        self.0.first().copied().unwrap_or_default()
    }

    pub fn max(&self) -> Duration {
        self.0.last().copied().unwrap_or_default()
    }
}

/// Milliseconds with three decimals.
pub fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
}

/// `figure` (one of `s`'s statistics) followed by the samples' range.
pub fn with_range(s: &Samples, figure: Duration) -> String {
    format!("{} (min {}, max {})", ms(figure), ms(s.min()), ms(s.max()))
}

/// Bytes as KiB with one decimal.
pub fn kib(bytes: u64) -> String {
    format!("{:.1} KiB", bytes as f64 / 1024.0)
}

/// Bytes as MiB with one decimal.
pub fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let s = Samples::new((1..=100).rev().map(Duration::from_millis).collect());
        assert_eq!(s.median(), Duration::from_millis(50));
        assert_eq!(s.pct(99.0), Duration::from_millis(99));
        assert_eq!(s.pct(100.0), Duration::from_millis(100));
        assert_eq!(s.min(), Duration::from_millis(1));
        let one = Samples::new(vec![Duration::from_millis(7)]);
        assert_eq!(one.pct(99.0), Duration::from_millis(7));
        assert_eq!(Samples::new(vec![]).median(), Duration::ZERO);
    }
}
