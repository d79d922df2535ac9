//! The bodies the listeners answer with: the handler's own, or a hostile one
//! (a [`BodyFault`]): the handler's body followed by spaces, N more bytes or
//! for ever, at full speed or one byte at a time.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::Response;
use hyper::body::{Body, Frame, SizeHint};

use crate::faults::BodyFault;
use crate::util;

/// Filler: spaces, which a JSON reader takes as trailing white space.
static FILLER: [u8; 16 * 1024] = [b' '; 16 * 1024];

/// An answer's body.
pub(crate) enum AnswerBody {
    Full(util::Body),
    Hostile(Hostile),
}

pub(crate) struct Hostile {
    /// The handler's body, sent first.
    head: Bytes,
    /// Filler bytes still to send after it; `None`: for ever.
    left: Option<u64>,
    /// One byte per tick, or everything as fast as the client reads.
    tick: Option<(Duration, Pin<Box<tokio::time::Sleep>>)>,
}

impl AnswerBody {
    /// The handler's response, with the body its fault asks for (marked by
    /// [`crate::faults::FiredFault::apply`]).
    pub(crate) fn answer(resp: Response<util::Body>) -> Response<AnswerBody> {
        let (mut parts, body) = resp.into_parts();
        let Some(fault) = parts.extensions.remove::<BodyFault>() else {
            return Response::from_parts(parts, AnswerBody::Full(body));
        };
        // The handler's bodies are built in one go: this never waits.
        let head = match Pin::new(&mut { body }).poll_frame(&mut Context::from_waker(std::task::Waker::noop())) {
            Poll::Ready(Some(Ok(frame))) => frame.into_data().unwrap_or_default(),
            _ => Bytes::new(),
        };
        parts.headers.remove(http::header::CONTENT_LENGTH);
        let (left, tick) = match fault {
            BodyFault::Oversized(n) => (Some(n), None),
            BodyFault::Endless => (None, None),
            BodyFault::DripMs(ms) => {
                let every = Duration::from_millis(ms.max(1));
                (None, Some((every, Box::pin(tokio::time::sleep(every)))))
            }
        };
        Response::from_parts(parts, AnswerBody::Hostile(Hostile { head, left, tick }))
    }
}

impl Body for AnswerBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let h = match self.get_mut() {
            AnswerBody::Full(b) => return Pin::new(b).poll_frame(cx),
            AnswerBody::Hostile(h) => h,
        };
        if let Some((every, sleep)) = &mut h.tick {
            ready!(sleep.as_mut().poll(cx));
            let every = *every;
            // `every` is a tick of a hostile answer (milliseconds): now plus it fits.
            #[allow(clippy::arithmetic_side_effects)]
            let next = tokio::time::Instant::now() + every;
            sleep.as_mut().reset(next);
            if !h.head.is_empty() {
                return Poll::Ready(Some(Ok(Frame::data(h.head.split_to(1)))));
            }
            return Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(&FILLER[..1])))));
        }
        if !h.head.is_empty() {
            return Poll::Ready(Some(Ok(Frame::data(std::mem::take(&mut h.head)))));
        }
        let n = match h.left {
            Some(0) => return Poll::Ready(None),
            Some(left) => left.min(FILLER.len() as u64) as usize,
            None => FILLER.len(),
        };
        if let Some(left) = &mut h.left {
            *left = left.saturating_sub(n as u64);
        }
        Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(&FILLER[..n])))))
    }

    fn is_end_stream(&self) -> bool {
        match self {
            AnswerBody::Full(b) => b.is_end_stream(),
            AnswerBody::Hostile(h) => h.head.is_empty() && h.left == Some(0),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            AnswerBody::Full(b) => b.size_hint(),
            AnswerBody::Hostile(Hostile { head, left: Some(n), tick: None }) => {
                SizeHint::with_exact((head.len() as u64).saturating_add(*n))
            }
            AnswerBody::Hostile(_) => SizeHint::default(),
        }
    }
}
