//! Reading and writing DynamoDB attributes, for each store of this crate: a value of the
//! wrong type reads as the store's own corrupt-data error, never a panic.

use std::collections::HashMap;
use std::str::FromStr;

use aws_sdk_dynamodb::types::AttributeValue;
use baton_core::ports::store::StoreError;

use crate::faults::Faults;

/// One item: attribute names to values.
pub(crate) type Item = HashMap<String, AttributeValue>;

/// `S` attribute value.
pub(crate) fn s(value: impl Into<String>) -> AttributeValue {
    AttributeValue::S(value.into())
}

/// `N` attribute value.
pub(crate) fn n(value: u64) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

/// A string attribute, if present and a string.
pub(crate) fn string<'a>(item: &'a Item, name: &str) -> Option<&'a str> {
    match item.get(name) {
        Some(AttributeValue::S(s)) => Some(s),
        _ => None,
    }
}

/// A number attribute read as `T`, if present.
///
/// # Errors
/// `Corrupt` (as `faults` says it) when present but not such a number.
pub(crate) fn number<T>(item: &Item, name: &str, faults: &Faults) -> Result<Option<T>, StoreError>
where
    T: FromStr,
    T::Err: std::fmt::Display,
{
    match item.get(name) {
        None => Ok(None),
        Some(AttributeValue::N(v)) => v
            .parse::<T>()
            .map(Some)
            .map_err(|e| faults.undecodable(name, &e)),
        Some(_) => Err(faults.undecodable(name, &"not a number")),
    }
}
