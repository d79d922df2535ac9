//! Webhook delivery: the event bus writes matching events to each webhook's
//! durable outbox; a `WebhookTarget` actor per webhook delivers its outbox in
//! order with Standard Webhooks signatures, retries on a schedule, and logs
//! every attempt. A `WebhookDispatcher` starts and supervises the targets.

mod bus;
mod client;
mod dispatcher;
mod signature;
mod target;

pub use bus::{Event, EventBus};
pub use client::{is_forbidden_ip, WebhookClient};
pub use dispatcher::{Dispatcher, DispatcherArgs, DispatcherMsg};
pub use signature::{generate_secret, sign};

use std::time::Duration;

/// How webhooks are delivered.
#[derive(Clone, Debug)]
pub struct WebhookSettings {
    /// Delay before each attempt: the first is usually 0.
    pub retry_schedule: Vec<Duration>,
    /// An attempt without an answer within this time counts as failed.
    pub timeout: Duration,
    /// Deliver to loopback, private and link-local addresses (tests, demo).
    pub allow_private: bool,
    /// Attempts in flight per webhook; 1 keeps events in order.
    pub concurrency: usize,
}

impl Default for WebhookSettings {
    fn default() -> Self {
        let schedule = [0, 5, 300, 1800, 7200, 18000, 36000, 36000];
        WebhookSettings {
            retry_schedule: schedule.iter().map(|s| Duration::from_secs(*s)).collect(),
            timeout: Duration::from_secs(15),
            allow_private: false,
            concurrency: 1,
        }
    }
}

impl WebhookSettings {
    /// Parses `0,5,300` (seconds) as a retry schedule.
    pub fn parse_schedule(text: &str) -> Result<Vec<Duration>, String> {
        text.split(',')
            .map(|s| s.trim().parse::<f64>().map_err(|_| format!("retry schedule: {s:?} is not a number of seconds")))
            .map(|r| {
                r.and_then(|s| {
                    if s >= 0.0 && s.is_finite() {
                        Ok(Duration::from_secs_f64(s))
                    } else {
                        Err("retry schedule: negative delay".into())
                    }
                })
            })
            .collect::<Result<Vec<_>, _>>()
            .and_then(|v| if v.is_empty() { Err("retry schedule: empty".into()) } else { Ok(v) })
    }
}
