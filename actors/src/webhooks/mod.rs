//! Webhook delivery: the event bus writes matching events to each webhook's
//! durable outbox; a `WebhookTarget` actor per webhook delivers its outbox in
//! order with Standard Webhooks signatures, retries on a schedule, and logs
//! every attempt. A `WebhookDispatcher` starts and supervises the targets.

mod bus;
mod client;
mod dispatcher;
mod signature;
mod target;

pub use crate::guard::is_forbidden_ip;
pub use bus::{queue, Event, EventBus};
pub use client::WebhookClient;
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
    /// The longest wait a receiver's `Retry-After` can impose.
    pub max_retry_after: Duration,
}

impl Default for WebhookSettings {
    fn default() -> Self {
        let schedule = [0, 5, 300, 1800, 7200, 18000, 36000, 36000];
        WebhookSettings {
            retry_schedule: schedule.iter().map(|s| Duration::from_secs(*s)).collect(),
            timeout: Duration::from_secs(15),
            allow_private: false,
            concurrency: 1,
            max_retry_after: Duration::from_secs(3600),
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
                    if s >= 0.0 {
                        Duration::try_from_secs_f64(s).map_err(|_| "retry schedule: delay too long".into())
                    } else {
                        Err("retry schedule: a delay must be a number of seconds, 0 or more".into())
                    }
                })
            })
            .collect::<Result<Vec<_>, _>>()
            .and_then(|v| if v.is_empty() { Err("retry schedule: empty".into()) } else { Ok(v) })
    }
}
