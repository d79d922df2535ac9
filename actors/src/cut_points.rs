//! Where the last broadcast of each app cut its token index into partitions,
//! remembered so that the next one need not walk the whole index again to
//! cut it: that walk reads every page of the index, as much as the sends'
//! own read of it (`cargo bench -p herald-storage --bench storage -- index_walk`).
//!
//! Any ascending list of client ids cuts an index into ranges that cover it
//! exactly once, whatever was added or removed since, so remembered cut
//! points are never wrong; only the partitions' balance drifts as the index
//! changes. So they serve while the app holds within a tenth of the tokens
//! it held when they were found, for at most `KEPT`, at the same partition
//! size; otherwise the index is walked again.

use dashmap::DashMap;
use std::time::{Duration, Instant};

/// How long cut points serve, however little the app's index changed.
const KEPT: Duration = Duration::from_secs(3600);

/// Apps remembered at most; past it, expired ones are dropped, and new ones
/// are not remembered while none has expired.
const APPS: usize = 4096;

/// The cut points of this engine's recent broadcasts, by tenant and app.
#[derive(Default)]
pub struct CutPoints(DashMap<(String, String), Cut>);

struct Cut {
    size: u64,
    tokens: u64,
    found: Instant,
    ends: Vec<String>,
}

impl CutPoints {
    /// The cut points found for `app` of `tenant` at partition `size`, if
    /// they still serve an index of `tokens` tokens at `now`.
    pub fn get(&self, tenant: &str, app: &str, size: u64, tokens: u64, now: Instant) -> Option<Vec<String>> {
        let cut = self.0.get(&(tenant.to_string(), app.to_string()))?;
        let drift = cut.tokens.abs_diff(tokens);
        let fresh = now.saturating_duration_since(cut.found) < KEPT;
        (cut.size == size && fresh && drift <= cut.tokens / 10).then(|| cut.ends.clone())
    }

    /// Remembers the cut points just found by a walk of an index of `tokens` tokens.
    pub fn put(&self, tenant: &str, app: &str, size: u64, tokens: u64, ends: &[String]) {
        let key = (tenant.to_string(), app.to_string());
        if self.0.len() >= APPS && !self.0.contains_key(&key) {
            self.0.retain(|_, cut| cut.found.elapsed() < KEPT);
            if self.0.len() >= APPS {
                return;
            }
        }
        self.0.insert(key, Cut { size, tokens, found: Instant::now(), ends: ends.to_vec() });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ends() -> Vec<String> {
        vec!["c1".into(), "c2".into()]
    }

    #[test]
    fn cut_points_serve_the_same_app_and_size_while_its_index_changes_little() {
        let cuts = CutPoints::default();
        cuts.put("t", "app", 10, 100, &ends());
        let now = Instant::now();
        assert_eq!(cuts.get("t", "app", 10, 100, now), Some(ends()));
        assert_eq!(cuts.get("t", "app", 10, 110, now), Some(ends()), "a tenth more");
        assert_eq!(cuts.get("t", "app", 10, 90, now), Some(ends()), "a tenth fewer");
        assert_eq!(cuts.get("t", "app", 10, 111, now), None, "over a tenth more");
        assert_eq!(cuts.get("t", "app", 10, 89, now), None, "over a tenth fewer");
        assert_eq!(cuts.get("t", "app", 20, 100, now), None, "another partition size");
        assert_eq!(cuts.get("t", "other", 10, 100, now), None, "another app");
        assert_eq!(cuts.get("u", "app", 10, 100, now), None, "another tenant");
        assert_eq!(cuts.get("t", "app", 10, 100, now + KEPT), None, "too old");
    }

    #[test]
    fn at_most_so_many_apps_are_remembered() {
        let cuts = CutPoints::default();
        for i in 0..APPS + 10 {
            cuts.put("t", &format!("app{i}"), 10, 100, &ends());
        }
        assert_eq!(cuts.0.len(), APPS);
        let now = Instant::now();
        assert_eq!(cuts.get("t", "app0", 10, 100, now), Some(ends()));
        assert_eq!(cuts.get("t", &format!("app{APPS}"), 10, 100, now), None, "not remembered past the bound");
        cuts.put("t", "app0", 10, 200, &ends());
        assert_eq!(cuts.get("t", "app0", 10, 200, now), Some(ends()), "a remembered app is updated");
    }
}
