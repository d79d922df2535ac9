//! Apps and their push credentials.
