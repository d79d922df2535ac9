//! The catalogue of services.
