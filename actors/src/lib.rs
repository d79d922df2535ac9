//! Herald actors (filled in by the push engine).
