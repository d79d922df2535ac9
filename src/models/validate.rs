//! Small checks shared by the models; each names the field it rejects.

use crate::error::{ApiError, ApiResult};

/// `value` has between `min` and `max` characters.
pub fn length(field: &str, value: &str, min: usize, max: usize) -> ApiResult<()> {
    let n = value.chars().count();
    if n < min || n > max {
        return Err(ApiError::field(field, format!("must have {min} to {max} characters, has {n}")));
    }
    Ok(())
}

/// An optional value is absent or within `max` characters.
pub fn max_length(field: &str, value: &Option<String>, max: usize) -> ApiResult<()> {
    match value {
        Some(v) => length(field, v, 0, max),
        None => Ok(()),
    }
}

/// An id that becomes part of a storage key: printable, no control characters.
pub fn id(field: &str, value: &str, min: usize, max: usize) -> ApiResult<()> {
    length(field, value, min, max)?;
    if value.chars().any(char::is_control) {
        return Err(ApiError::field(field, "must not contain control characters"));
    }
    Ok(())
}

/// A ULID as the API uses them: 26 characters of Crockford base32.
pub fn ulid(field: &str, value: &str) -> ApiResult<()> {
    if value.len() == 26 && value.chars().all(|c| c.is_ascii_digit() || (c.is_ascii_uppercase() && !"ILOU".contains(c)))
    {
        Ok(())
    } else {
        Err(ApiError::field(field, "must be a ULID (26 characters of 0-9 and A-Z without I, L, O, U)"))
    }
}
