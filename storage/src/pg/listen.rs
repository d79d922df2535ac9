//! Notifications between engines sharing a database (`LISTEN`/`NOTIFY` on
//! the channel `herald_cache`): each engine keeps one connection listening,
//! reconnecting when it drops. A notification sent while an engine was not
//! listening is lost, so every (re)connection, and every failed attempt
//! while it is down, is reported as `None`: "assume anything changed".

use super::{fault, pool_error, Pg};
use crate::Result;
use futures::StreamExt;
use std::sync::Arc;
use std::time::Duration;
use tokio_postgres::{AsyncMessage, NoTls};

/// The channel engines notify each other on.
const CHANNEL: &str = "herald_cache";

/// How long the listener waits before connecting again.
const RECONNECT: Duration = Duration::from_millis(250);

/// Called with each notification's payload, or `None` when some may have been missed.
pub(crate) type OnNotice = Arc<dyn Fn(Option<&str>) + Send + Sync>;

impl Pg {
    /// Sends `payload` to every engine listening (this one included).
    pub(crate) fn notify(&self, payload: &str) -> Result<()> {
        let (pool, payload) = (self.pool.clone(), payload.to_string());
        self.run(async move {
            let c = pool.get().await.map_err(pool_error)?;
            c.execute("SELECT pg_notify($1, $2)", &[&CHANNEL, &payload]).await.map(drop).map_err(fault)
        })
    }

    /// Starts the listener on the backend's runtime; it runs as long as the runtime.
    pub(crate) fn listen(&self, on: OnNotice) {
        let Some(rt) = self.rt.0.as_ref() else { return };
        let config = self.config.clone();
        rt.spawn(async move {
            loop {
                match config.connect(NoTls).await {
                    Ok((client, mut connection)) => {
                        let mut messages = futures::stream::poll_fn(move |cx| connection.poll_message(cx));
                        let listening = async {
                            client.batch_execute(&format!("LISTEN {CHANNEL}")).await?;
                            Ok::<_, tokio_postgres::Error>(())
                        };
                        // The LISTEN's answer comes through the connection: drive both.
                        let mut listening = std::pin::pin!(listening);
                        let mut ready = false;
                        loop {
                            tokio::select! {
                                done = &mut listening, if !ready => match done {
                                    Ok(()) => {
                                        ready = true;
                                        on(None); // whatever was sent before now is not coming
                                    }
                                    Err(e) => {
                                        tracing::warn!(error = %e, "could not listen for other engines' changes");
                                        break;
                                    }
                                },
                                message = messages.next() => match message {
                                    Some(Ok(AsyncMessage::Notification(n))) => on(Some(n.payload())),
                                    Some(Ok(_)) => {}
                                    Some(Err(e)) => {
                                        tracing::warn!(error = %e, "the listening connection failed; reconnecting");
                                        break;
                                    }
                                    None => break,
                                },
                            }
                        }
                    }
                    Err(e) => tracing::warn!(error = %e, "could not connect to listen for other engines' changes"),
                }
                on(None);
                tokio::time::sleep(RECONNECT).await;
            }
        });
    }
}
