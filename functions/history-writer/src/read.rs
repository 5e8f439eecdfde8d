//! Reading attributes back from DynamoDB items: an absent or malformed value reads as
//! empty or zero, so a partly written item never fails a read.

use std::collections::HashMap;
use std::str::FromStr;

use aws_sdk_dynamodb::types::AttributeValue;

/// A string attribute of `item`, empty when absent.
pub(crate) fn string(item: &HashMap<String, AttributeValue>, name: &str) -> String {
    item.get(name)
        .and_then(|v| v.as_s().ok())
        .cloned()
        .unwrap_or_default()
}

/// A number attribute, zero when absent or not a number of type `T`.
pub(crate) fn number<T: FromStr + Default>(value: Option<&AttributeValue>) -> T {
    value
        .and_then(|v| v.as_n().ok())
        .and_then(|n| n.parse().ok())
        .unwrap_or_default()
}
