//! App versions, policies, and integrity voting.
