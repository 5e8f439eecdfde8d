//! Summarize calls: an extractive summary, not a written one. From the previous summary and
//! the new turns it keeps what the user said about themselves (see [`super::about_user`]),
//! the ids and amounts, the names, what the user asked, and the last request as the open
//! goal, each list without repeats and newest last.

use baton_core::ports::model::ModelRequest;

use super::about_user::AboutUser;
use super::chunks::Reply;

/// How the list of ids and amounts starts.
const IDS: &str = "Ids and amounts: ";
/// How the list of names starts.
const NAMES: &str = "Names: ";
/// How many requests a summary lists.
const REQUESTS_KEPT: usize = 6;
/// A request's length in a summary, in characters.
const REQUEST_CHARS: usize = 120;

/// Writes the extractive summary of the request's material.
pub(super) fn respond(request: &ModelRequest, reply: &mut Reply) {
    let input = request.latest_user_text().unwrap_or_default();
    reply.text(&summarise(input));
}

/// The summary of one summarizer input (see `baton_core::memory`): its previous summary and
/// its `User:`/`Assistant:` or `Asked:`/`Answered:` lines.
pub(super) fn summarise(input: &str) -> String {
    let mut ids: Vec<String> = Vec::new();
    let mut names: Vec<String> = Vec::new();
    let mut requests: Vec<String> = Vec::new();
    let mut previous_requests: Vec<String> = Vec::new();
    let mut about = AboutUser::default();
    for line in input.lines() {
        let line = line.trim();
        // Structure, not material: turn numbers and the input's tags.
        if line.starts_with("Turn ") || (line.starts_with('<') && line.ends_with('>')) {
            continue;
        }
        // A previous summary's lists are carried as they were: read as prose, the first
        // item of each would start a sentence and not count as a name.
        if about.read_line(line) {
            continue;
        }
        if let Some(rest) = line.strip_prefix(IDS) {
            list_items(rest).for_each(|i| push_unique(&mut ids, i));
            continue;
        }
        if let Some(rest) = line.strip_prefix(NAMES) {
            list_items(rest).for_each(|n| push_unique(&mut names, n));
            continue;
        }
        if let Some(rest) = line.strip_prefix("The user asked about: ") {
            // A previous extractive summary: carry its requests forward.
            previous_requests.extend(rest.trim_end_matches('.').split("; ").map(str::to_owned));
        }
        let (request, text) = match line.split_once(": ") {
            Some(("User" | "Asked", t)) => (true, t),
            Some((_, t)) => (false, t),
            None => (false, line),
        };
        collect_tokens(text, &mut ids, &mut names);
        if line.starts_with("User: ") {
            about.note(text);
        }
        if request && !text.is_empty() {
            push_unique(&mut requests, shorten(text));
        }
    }
    let open = requests.last().cloned();
    let mut all_requests = previous_requests;
    for r in requests {
        push_unique(&mut all_requests, r);
    }
    let skip = all_requests.len().saturating_sub(REQUESTS_KEPT);
    // First, so that a summary cut to its length limit keeps it.
    let mut parts: Vec<String> = about.line().into_iter().collect();
    if !ids.is_empty() {
        parts.push(format!("{IDS}{}.", ids.join(", ")));
    }
    if !names.is_empty() {
        parts.push(format!("{NAMES}{}.", names.join(", ")));
    }
    if !all_requests.is_empty() {
        parts.push(format!(
            "The user asked about: {}.",
            all_requests[skip..].join("; ")
        ));
    }
    if let Some(open) = open {
        parts.push(format!("Latest request: {open}."));
    }
    if parts.is_empty() {
        "Nothing to note yet.".to_owned()
    } else {
        parts.join("\n")
    }
}

/// Ids and amounts (a word with a digit in it) and names (a capitalised word that does not
/// start a sentence), in the order first seen.
fn collect_tokens(text: &str, ids: &mut Vec<String>, names: &mut Vec<String>) {
    let mut sentence_start = true;
    for raw in text.split_whitespace() {
        let word =
            raw.trim_matches(|c: char| !c.is_alphanumeric() && !matches!(c, '$' | '€' | '£' | '#'));
        let word = word.trim_end_matches('#');
        if word.chars().any(|c| c.is_ascii_digit()) {
            push_unique(ids, word.to_owned());
        } else if !sentence_start
            && word.chars().next().is_some_and(char::is_uppercase)
            && word.chars().count() > 1
            // A mask label or an acronym the model shouts is not a name.
            && !word.chars().all(|c| c.is_uppercase() || !c.is_alphabetic())
            // Nor is "I'm" or "I'll".
            && !word.starts_with("I'")
            && !word.starts_with("I\u{2019}")
        {
            push_unique(names, word.to_owned());
        }
        sentence_start = raw.ends_with(['.', '!', '?', ':']);
    }
}

/// The items of a list line written by [`summarise`] ("a, b, c.").
fn list_items(rest: &str) -> impl Iterator<Item = String> + '_ {
    let rest = rest.trim();
    rest.strip_suffix('.')
        .unwrap_or(rest)
        .split(", ")
        .map(|i| i.trim().to_owned())
}

fn push_unique(list: &mut Vec<String>, item: String) {
    if !item.is_empty() && !list.contains(&item) {
        list.push(item);
    }
}

fn shorten(text: &str) -> String {
    let text = text.trim().trim_end_matches(['.', '?', '!']);
    if text.chars().count() <= REQUEST_CHARS {
        return text.to_owned();
    }
    let cut: String = text.chars().take(REQUEST_CHARS).collect();
    let end = cut.rfind(' ').unwrap_or(cut.len());
    format!("{}…", &cut[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_keeps_ids_names_requests_and_the_latest_request() {
        let input = "<turns>\nTurn 1\nUser: find coffee deals at Caribou\nAssistant: Roast \
                     coffee earns 500 points at Caribou.\nTurn 2\nUser: my receipt R-77 didn't \
                     scan\nAssistant: Receipt R-77 is under review.\n</turns>";
        assert_eq!(
            summarise(input),
            "Ids and amounts: 500, R-77.\nNames: Caribou.\nThe user asked about: find coffee \
             deals at Caribou; my receipt R-77 didn't scan.\nLatest request: my receipt R-77 \
             didn't scan."
        );
    }

    #[test]
    fn a_fold_carries_the_previous_summarys_facts_forward() {
        let first = summarise("<turns>\nUser: receipt R-77\nAssistant: Under review.\n</turns>");
        let second = summarise(&format!(
            "<previous_summary>\n{first}\n</previous_summary>\n<turns>\nUser: coffee deals\n\
             Assistant: Roast coffee.\n</turns>"
        ));
        assert!(second.contains("R-77"), "{second}");
        assert!(
            second.contains("The user asked about: receipt R-77; coffee deals."),
            "{second}"
        );
        assert!(
            second.ends_with("Latest request: coffee deals."),
            "{second}"
        );
    }

    #[test]
    fn every_fold_keeps_what_the_user_said_about_themselves_and_every_name() {
        let mut summary = summarise(
            "<turns>\nUser: my dog is called Biscuit\nAssistant: Hello, Biscuit!\n</turns>",
        );
        for i in 0..10 {
            summary = summarise(&format!(
                "<previous_summary>\n{summary}\n</previous_summary>\n<turns>\nUser: coffee \
                 deals {i}\nAssistant: Roast coffee at Caribou.\n</turns>"
            ));
        }
        assert!(
            summary.starts_with("About the user, in their words: my dog is called Biscuit.\n"),
            "{summary}"
        );
        assert!(summary.contains("Names: Biscuit, Caribou.\n"), "{summary}");
    }

    #[test]
    fn a_specialists_input_lists_what_it_was_asked() {
        let input = "<requests>\nTurn 3\nAsked: coffee deals\nAnswered: Roast coffee, 500 pts.\n</requests>";
        let s = summarise(input);
        assert!(s.contains("Ids and amounts: 500."), "{s}");
        assert!(s.contains("Latest request: coffee deals."), "{s}");
    }

    #[test]
    fn mask_labels_are_not_names_and_empty_input_says_so() {
        let s = summarise("User: my card is [CARD] ok\nAssistant: Thanks, Jane.");
        assert!(s.contains("Names: Jane.\n"), "{s}");
        assert_eq!(summarise(""), "Nothing to note yet.");
    }
}
