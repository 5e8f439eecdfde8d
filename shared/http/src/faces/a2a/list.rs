//! `ListTasks` (A2A 1.0, 3.1.4): the caller's tasks in one context, most recently updated
//! first, a page at a time.
//!
//! A context is one of the caller's conversations (`Principal::episode_for`), so the
//! context names where to look, and another principal's context is an empty list. Without a
//! context the call is refused: the journal lists turns by conversation, and a principal's
//! conversations are not listed (the README's "Not done yet"). A task that waited for the
//! user and was answered is one task, in the state of the turn that answered it. Only
//! committed tasks are listed; a turn running right now is found with `GetTask`.

use a2a::{A2AError, ListTasksRequest, ListTasksResponse};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use baton_core::Principal;
use baton_runtime::RejectionKind;
use serde_json::Value;

use super::rpc::{self, Call};
use super::task::TaskRef;
use super::{continues, history_limit, keep_last, task_in};
use crate::state::AppState;

/// Tasks in a page when the call names no size (the spec's default).
const DEFAULT_PAGE_SIZE: i32 = 50;
/// The largest page a call may ask for.
const MAX_PAGE_SIZE: i32 = 100;

/// `ListTasks`.
pub(crate) async fn list_tasks(
    state: &AppState,
    principal: &Principal,
    call: &Call,
) -> Result<Value, A2AError> {
    let request: ListTasksRequest =
        serde_json::from_value(camel_keys(&call.params)).map_err(|e| {
            A2AError::invalid_params(format!("The call's parameters are not valid: {e}."))
        })?;
    let page_size = request.page_size.unwrap_or(DEFAULT_PAGE_SIZE);
    if !(1..=MAX_PAGE_SIZE).contains(&page_size) {
        return Err(A2AError::invalid_params("pageSize must be from 1 to 100."));
    }
    let limit = history_limit(request.history_length)?;
    let offset = match request.page_token.as_deref().filter(|t| !t.is_empty()) {
        None => 0,
        Some(token) => offset_of(token)
            .ok_or_else(|| A2AError::invalid_params("pageToken is not one this agent gave."))?,
    };
    let Some(context_id) = request.context_id.as_deref().filter(|c| !c.is_empty()) else {
        return Err(A2AError::invalid_params(
            "ListTasks needs a contextId here: tasks are listed one conversation at a time.",
        ));
    };
    let episode_id = principal.episode_for(context_id);
    let history = match state.runtime.history(principal, &episode_id).await {
        Ok(history) => Some(history),
        // A context with no task yet, or another principal's: nothing to list.
        Err(r) if r.kind == RejectionKind::NotFound => None,
        Err(r) => return Err(rpc::rejection(&r)),
    };
    let mut tasks: Vec<(u64, a2a::Task)> = history
        .iter()
        .flat_map(|history| {
            history
                .turns
                .iter()
                // A turn that answered a wait is the waiting task's, not one of its own.
                .filter(|t| t.answered.as_ref().is_none_or(|a| !continues(&a.answer)))
                .filter_map(|t| {
                    let task = TaskRef {
                        context_id: context_id.to_owned(),
                        episode_id: episode_id.clone(),
                        turn_id: t.turn_id.clone(),
                    };
                    let found = task_in(history, &task)?;
                    let updated = found.status.timestamp.map_or(t.created_ms, |at| {
                        u64::try_from(at.timestamp_millis()).unwrap_or(0)
                    });
                    Some((updated, found))
                })
        })
        .filter(|(_, task)| {
            request
                .status
                .as_ref()
                .is_none_or(|wanted| task.status.state == *wanted)
        })
        .filter(|(_, task)| {
            request
                .status_timestamp_after
                .is_none_or(|after| task.status.timestamp.is_some_and(|at| at >= after))
        })
        .collect();
    // Most recently updated first; of two updated in the same millisecond, the later one.
    tasks.reverse();
    tasks.sort_by_key(|t| std::cmp::Reverse(t.0));
    let total = tasks.len();
    let page: Vec<a2a::Task> = tasks
        .into_iter()
        .skip(offset)
        .take(usize::try_from(page_size).unwrap_or(0))
        .map(|(_, mut task)| {
            if !request.include_artifacts.unwrap_or(false) {
                task.artifacts = None;
            }
            keep_last(&mut task, limit);
            task
        })
        .collect();
    let next = offset + page.len();
    let response = ListTasksResponse {
        next_page_token: if next < total {
            token_of(next)
        } else {
            String::new()
        },
        page_size,
        total_size: i32::try_from(total).unwrap_or(i32::MAX),
        tasks: page,
    };
    serde_json::to_value(response).map_err(|e| A2AError::internal(e.to_string()))
}

/// The parameters with each `snake_case` key also under its `lowerCamelCase` name, as
/// protobuf's JSON mapping lets a parser accept both (the compatibility kit sends
/// `context_id`).
fn camel_keys(params: &Value) -> Value {
    let Value::Object(map) = params else {
        return params.clone();
    };
    let mut out = map.clone();
    for (key, value) in map {
        if !key.contains('_') {
            continue;
        }
        let mut camel = String::with_capacity(key.len());
        let mut upper = false;
        for c in key.chars() {
            if c == '_' {
                upper = true;
            } else if upper {
                camel.extend(c.to_uppercase());
                upper = false;
            } else {
                camel.push(c);
            }
        }
        out.entry(camel).or_insert_with(|| value.clone());
    }
    Value::Object(out)
}

/// A page token: where the next page starts, opaque to the client.
fn token_of(offset: usize) -> String {
    URL_SAFE_NO_PAD.encode(format!("o{offset}"))
}

fn offset_of(token: &str) -> Option<usize> {
    let text = String::from_utf8(URL_SAFE_NO_PAD.decode(token).ok()?).ok()?;
    text.strip_prefix('o')?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proto_field_names_are_read_as_their_json_names() {
        let params = serde_json::json!({"context_id": "c", "page_size": 2, "pageToken": "t"});
        let read: ListTasksRequest = serde_json::from_value(camel_keys(&params)).unwrap();
        assert_eq!(read.context_id.as_deref(), Some("c"));
        assert_eq!(read.page_size, Some(2));
        assert_eq!(read.page_token.as_deref(), Some("t"));
    }

    #[test]
    fn a_page_token_names_where_the_next_page_starts_and_nothing_else() {
        assert_eq!(offset_of(&token_of(0)), Some(0));
        assert_eq!(offset_of(&token_of(150)), Some(150));
        for bad in [
            "",
            "x",
            &URL_SAFE_NO_PAD.encode("p1"),
            &URL_SAFE_NO_PAD.encode("o-1"),
        ] {
            assert_eq!(offset_of(bad), None, "{bad}");
        }
    }
}
