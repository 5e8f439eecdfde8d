//! Showing a turn's events in a terminal or a pipe.
//!
//! Text mode prints the answer as it arrives, a spinner with the latest progress line on
//! stderr while specialists work (terminals only), and a footer: who was consulted, then,
//! dimmer, the cost and the episode id. Colour and the spinner appear only on terminals,
//! so piped output carries no ANSI codes. JSON mode prints each event as one line and
//! nothing else.

use std::io::{self, Write};
use std::time::Duration;

use baton_core::events::{DirectLineState, Event, InterruptionView, SOURCE_NOTE, WireEvent};
use baton_core::interruption::InterruptionKind;
use baton_core::privacy::PrivacyReceipt;
use baton_core::turn::TurnOutcome;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

const DIM: &str = "\x1b[2m";
const DIMMER: &str = "\x1b[2;90m";
const RED: &str = "\x1b[31m";
const BOLD: &str = "\x1b[1m";
const RESET: &str = "\x1b[0m";

/// How output is decorated.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Style {
    /// One JSON line per event, nothing else.
    pub(crate) json: bool,
    /// ANSI colour on the answer stream.
    pub(crate) color: bool,
    /// A spinner on stderr.
    pub(crate) spinner: bool,
    /// stdout is a terminal (so the spinner and the answer share a screen).
    pub(crate) stdout_tty: bool,
}

impl Style {
    /// Decorations the real stdout and stderr allow.
    pub(crate) fn detect(json: bool) -> Style {
        use std::io::IsTerminal;
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        let stdout_tty = io::stdout().is_terminal();
        Style {
            json,
            color: !json && !no_color && stdout_tty,
            spinner: !json && io::stderr().is_terminal(),
            stdout_tty,
        }
    }
}

/// What a rendered turn ended with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Ending {
    /// The `completed` outcome, if the stream got that far.
    pub(crate) outcome: Option<TurnOutcome>,
    /// What the turn waits on (D-36), if it does: its id and kind.
    pub(crate) interruption: Option<(String, InterruptionKind)>,
}

/// Renders one turn at a time onto `out`.
pub(crate) struct Renderer<W: Write> {
    out: W,
    style: Style,
    spinner: Option<ProgressBar>,
    /// The answer's last line has no newline yet.
    mid_line: bool,
    /// A line break was added so a spinner would not overwrite the answer; the next text's
    /// own leading break is then dropped.
    broke_line: bool,
    footer: String,
    cost_usd: Option<f64>,
    outcome: Option<TurnOutcome>,
    privacy: Option<PrivacyReceipt>,
    /// The source of the answer text being printed (a note gets its own heading).
    source: String,
    /// The specialist whose Direct Line answer is streaming onto the screen.
    streaming: Option<String>,
    /// What it streamed so far: its delivered answer repeats it.
    streamed: String,
    /// The question the turn waits on, if it does.
    interruption: Option<(String, InterruptionKind)>,
}

impl<W: Write> Renderer<W> {
    pub(crate) fn new(out: W, style: Style) -> Self {
        Renderer {
            out,
            style,
            spinner: None,
            mid_line: false,
            broke_line: false,
            footer: String::new(),
            cost_usd: None,
            outcome: None,
            privacy: None,
            source: String::new(),
            streaming: None,
            streamed: String::new(),
            interruption: None,
        }
    }

    /// Shows one event.
    ///
    /// # Errors
    /// Writing to `out` failed (a closed pipe, for instance).
    pub(crate) fn event(&mut self, wire: &WireEvent) -> io::Result<()> {
        if let Event::Completed { outcome, privacy } = &wire.event {
            self.outcome = Some(*outcome);
            self.privacy = Some(privacy.clone());
        }
        if let Event::Interruption(asked) = &wire.event {
            self.interruption = Some((asked.id.clone(), asked.kind));
        }
        if self.style.json {
            serde_json::to_writer(&mut self.out, wire)?;
            self.out.write_all(b"\n")?;
            return self.out.flush();
        }
        match &wire.event {
            Event::Thinking {} => self.progress("Thinking…")?,
            Event::Status { message, .. } => self.progress(message)?,
            Event::Text { source, text } => {
                let mut text = text.as_str();
                if source == SOURCE_NOTE && self.source != SOURCE_NOTE {
                    text = text.trim_start_matches('\n');
                    self.stop_spinner();
                    self.end_line()?;
                    let (d, r) = self.paint(DIM);
                    write!(self.out, "{d}\u{25b8} Note from the assistant:{r} ")?;
                    self.mid_line = true;
                }
                self.source.clone_from(source);
                self.text(text)?;
            }
            Event::DirectLine { label, state, .. } => {
                self.stop_spinner();
                self.end_line()?;
                let (d, r) = self.paint(DIM);
                match state {
                    DirectLineState::Single => {
                        writeln!(self.out, "{d}\u{2192} {label}, directly{r}")?
                    }
                    DirectLineState::Sticky => {
                        writeln!(self.out, "{d}\u{25cf} Talking directly with {label}{r}")?
                    }
                    DirectLineState::Exited => writeln!(
                        self.out,
                        "{d}\u{25cb} Left the direct conversation with {label}{r}"
                    )?,
                }
            }
            Event::DelegatedText { agent, label, text } => {
                // One specialist streams onto the screen; any other's answer is printed
                // whole when it is delivered.
                if self.streaming.is_none() {
                    self.stop_spinner();
                    self.end_line()?;
                    let (b, r) = self.paint(BOLD);
                    writeln!(self.out, "{b}{label} (direct):{r}")?;
                    self.streaming = Some(agent.clone());
                }
                if self.streaming.as_deref() == Some(agent.as_str()) {
                    self.streamed.push_str(text);
                    self.text(text)?;
                }
            }
            Event::DelegatedAnswer {
                agent,
                label,
                status,
                text,
            } => {
                self.stop_spinner();
                let streamed = self.streaming.as_deref() == Some(agent.as_str());
                self.end_line()?;
                if !streamed {
                    let (b, r) = self.paint(BOLD);
                    writeln!(self.out, "{b}{label} (direct):{r}")?;
                }
                // The delivered text is authoritative; it differs from what streamed only
                // when the specialist failed, and then it says so after what it streamed
                // (shown once), or instead of it.
                if !streamed {
                    self.text(text)?;
                    self.end_line()?;
                } else if !status.answered() {
                    let said = std::mem::take(&mut self.streamed);
                    let rest = text.strip_prefix(said.trim()).unwrap_or(text).trim_start();
                    if !rest.is_empty() {
                        self.text(rest)?;
                        self.end_line()?;
                    }
                }
                self.streamed.clear();
                self.source.clear();
            }
            Event::Interruption(asked) => {
                let InterruptionView {
                    kind,
                    label,
                    action,
                    args,
                    url,
                    ..
                } = &**asked;
                self.stop_spinner();
                self.end_line()?;
                let (b, r) = self.paint(BOLD);
                match kind {
                    InterruptionKind::Approval => {
                        writeln!(
                            self.out,
                            "{b}\u{23f8} {label} asks your approval:{r} {action}"
                        )?;
                        let (d, r) = self.paint(DIM);
                        writeln!(self.out, "{d}  arguments: {args}{r}")?;
                    }
                    InterruptionKind::Question => {
                        writeln!(self.out, "{b}\u{23f8} {label} asks:{r} {action}")?;
                    }
                    InterruptionKind::AccountLink => {
                        writeln!(self.out, "{b}\u{23f8} {label} needs you to {action}.{r}")?;
                        writeln!(
                            self.out,
                            "  Sign in at: {}",
                            url.as_deref().unwrap_or("(no sign-in page was given)")
                        )?;
                        writeln!(self.out, "  then give the code the page shows.")?;
                    }
                }
            }
            Event::Error { message } => {
                self.stop_spinner();
                self.end_line()?;
                let (red, r) = self.paint(RED);
                writeln!(self.out, "{red}{message}{r}")?;
                self.out.flush()?;
            }
            Event::Plan { nodes } => {
                self.stop_spinner();
                self.end_line()?;
                let (d, r) = self.paint(DIM);
                let mut waves: Vec<(u32, Vec<&str>)> = Vec::new();
                for n in nodes {
                    match waves.iter_mut().find(|(w, _)| *w == n.wave) {
                        Some((_, ids)) => ids.push(&n.id),
                        None => waves.push((n.wave, vec![&n.id])),
                    }
                }
                waves.sort_by_key(|(w, _)| *w);
                let line: Vec<String> = waves
                    .iter()
                    .map(|(w, ids)| format!("wave {w}: {}", ids.join(", ")))
                    .collect();
                writeln!(self.out, "{d}\u{25a4} Plan · {}{r}", line.join(" · "))?;
            }
            Event::NodeStart { node, wave } => {
                self.progress(&format!("Wave {wave}: {node} is working…"))?
            }
            Event::NodeEnd {
                node,
                wave,
                status,
                duration_ms,
                tool_calls,
                reason,
            } => {
                self.stop_spinner();
                self.end_line()?;
                let (d, r) = self.paint(DIM);
                let mark = if status.usable() {
                    '\u{2713}'
                } else {
                    '\u{2717}'
                };
                match reason {
                    Some(reason) => {
                        writeln!(self.out, "{d}  {mark} {node} (wave {wave}): {reason}{r}")?
                    }
                    None => writeln!(
                        self.out,
                        "{d}  {mark} {node} (wave {wave}) {} in {:.1} s, {tool_calls} tool call{}{r}",
                        status.as_str(),
                        *duration_ms as f64 / 1000.0,
                        if *tool_calls == 1 { "" } else { "s" }
                    )?,
                }
            }
            Event::AgentsConsulted { footer, .. } => self.footer.clone_from(footer),
            Event::Usage { cost_usd, .. } => self.cost_usd = Some(*cost_usd),
            Event::ResponseId { .. }
            | Event::Completed { .. }
            | Event::Reasoning { .. }
            | Event::ToolCallStart { .. }
            | Event::ToolResult { .. }
            | Event::ToolCallEnd { .. } => {}
        }
        Ok(())
    }

    /// Ends the turn: the footer line (text mode), and what the turn ended with.
    ///
    /// # Errors
    /// Writing to `out` failed.
    pub(crate) fn finish(&mut self, episode_id: &str) -> io::Result<Ending> {
        self.stop_spinner();
        if !self.style.json {
            self.end_line()?;
            let mut details = Vec::new();
            if let Some(p) = self.privacy.as_ref().filter(|p| p.total > 0) {
                details.push(masked(p));
            }
            if let Some(removed) = self.privacy.as_ref().and_then(removed_from_pictures) {
                details.push(removed);
            }
            if let Some(cost) = self.cost_usd {
                details.push(money(cost));
            }
            details.push(format!("episode {episode_id}"));
            let details = details.join(" · ");
            let (dim, r) = self.paint(DIM);
            let (dimmer, _) = self.paint(DIMMER);
            if self.footer.is_empty() {
                writeln!(self.out, "{dimmer}{details}{r}")?;
            } else {
                writeln!(self.out, "{dim}{}{r}{dimmer} · {details}{r}", self.footer)?;
            }
            self.out.flush()?;
        }
        let ending = Ending {
            outcome: self.outcome.take(),
            interruption: self.interruption.take(),
        };
        self.mid_line = false;
        self.broke_line = false;
        self.footer.clear();
        self.cost_usd = None;
        self.privacy = None;
        self.source.clear();
        self.streaming = None;
        Ok(ending)
    }

    /// Stops any spinner (before a prompt or an error message).
    pub(crate) fn stop_spinner(&mut self) {
        if let Some(s) = self.spinner.take() {
            s.finish_and_clear();
        }
    }

    fn progress(&mut self, message: &str) -> io::Result<()> {
        if !self.style.spinner {
            return Ok(());
        }
        if self.mid_line && self.style.stdout_tty {
            // stdout is this terminal too: keep the spinner off the answer's line.
            writeln!(self.out)?;
            self.out.flush()?;
            self.mid_line = false;
            self.broke_line = true;
        }
        let spinner = self.spinner.get_or_insert_with(|| {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template("{spinner} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            bar.enable_steady_tick(Duration::from_millis(100));
            bar
        });
        spinner.set_message(message.to_owned());
        Ok(())
    }

    fn text(&mut self, text: &str) -> io::Result<()> {
        self.stop_spinner();
        let mut text = text;
        if self.broke_line {
            text = text.strip_prefix('\n').unwrap_or(text);
            self.broke_line = false;
        }
        if text.is_empty() {
            return Ok(());
        }
        self.out.write_all(text.as_bytes())?;
        self.out.flush()?;
        self.mid_line = !text.ends_with('\n');
        Ok(())
    }

    fn end_line(&mut self) -> io::Result<()> {
        if self.mid_line {
            writeln!(self.out)?;
            self.mid_line = false;
        }
        Ok(())
    }

    /// The escape codes for `code` and its reset, or nothing without colour.
    fn paint(&self, code: &'static str) -> (&'static str, &'static str) {
        if self.style.color {
            (code, RESET)
        } else {
            ("", "")
        }
    }
}

/// `2 masked (1 email, 1 card number)`: the privacy receipt in a few words.
pub(crate) fn masked(p: &PrivacyReceipt) -> String {
    let kinds: Vec<String> = p
        .by_kind
        .iter()
        .map(|(kind, n)| format!("{n} {}", kind.as_str().replace('_', " ")))
        .collect();
    format!("{} masked ({})", p.total, kinds.join(", "))
}

/// `removed from the pictures: location (GPS), owner's name`: what the privacy guard
/// took out of the turn's pictures (D-42), when it took anything.
pub(crate) fn removed_from_pictures(p: &PrivacyReceipt) -> Option<String> {
    if p.pictures.is_empty() {
        return None;
    }
    let kinds: Vec<&str> = p.pictures.keys().map(|k| k.in_words()).collect();
    Some(format!("removed from the pictures: {}", kinds.join(", ")))
}

pub(crate) use baton_core::cost::display_usd as money;

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use baton_core::events::PROTOCOL_VERSION;
    use baton_core::turn::AgentStatus;

    use super::*;

    fn wire(seq: u64, event: Event) -> WireEvent {
        WireEvent {
            v: PROTOCOL_VERSION,
            turn_id: Arc::from("t1"),
            seq,
            event,
        }
    }

    fn turn() -> Vec<WireEvent> {
        vec![
            wire(1, Event::Thinking {}),
            wire(
                2,
                Event::Status {
                    codes: vec!["searching_offers".into()],
                    message: "Looking for offers…".into(),
                },
            ),
            wire(
                3,
                Event::Text {
                    source: "orchestrator".into(),
                    text: "Roast coffee ".into(),
                },
            ),
            wire(
                4,
                Event::Text {
                    source: "orchestrator".into(),
                    text: "earns 500 points.".into(),
                },
            ),
            wire(
                5,
                Event::AgentsConsulted {
                    agents: vec![],
                    footer: "Consulted: Shop".into(),
                    memories: Vec::new(),
                },
            ),
            wire(
                6,
                Event::Usage {
                    models: vec![],
                    cost_usd: 0.000221,
                },
            ),
            wire(
                7,
                Event::Completed {
                    outcome: TurnOutcome::Answered,
                    privacy: Default::default(),
                },
            ),
        ]
    }

    fn render(style: Style) -> (String, Ending) {
        let mut out = Vec::new();
        let mut r = Renderer::new(&mut out, style);
        for e in turn() {
            r.event(&e).unwrap();
        }
        let ending = r.finish("ep_1").unwrap();
        (String::from_utf8(out).unwrap(), ending)
    }

    #[test]
    fn plain_text_has_the_answer_and_a_footer_without_escape_codes() {
        let (text, ending) = render(Style::default());
        assert_eq!(
            text,
            "Roast coffee earns 500 points.\nConsulted: Shop · $0.000221 · episode ep_1\n"
        );
        assert_eq!(ending.outcome, Some(TurnOutcome::Answered));
    }

    #[test]
    fn colour_dims_the_footer() {
        let (text, _) = render(Style {
            color: true,
            ..Style::default()
        });
        assert!(text.contains("\x1b[2mConsulted: Shop\x1b[0m"), "{text:?}");
        assert!(text.starts_with("Roast coffee "));
    }

    #[test]
    fn json_mode_prints_one_line_per_event_and_nothing_else() {
        let (text, ending) = render(Style {
            json: true,
            ..Style::default()
        });
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 7);
        assert_eq!(ending.outcome, Some(TurnOutcome::Answered));
        for (line, original) in lines.iter().zip(turn()) {
            let back: WireEvent = serde_json::from_str(line).unwrap();
            assert_eq!(back, original);
        }
    }

    #[test]
    fn an_error_event_is_its_own_line() {
        let mut out = Vec::new();
        let mut r = Renderer::new(&mut out, Style::default());
        r.event(&wire(
            1,
            Event::Text {
                source: "orchestrator".into(),
                text: "Partly".into(),
            },
        ))
        .unwrap();
        r.event(&wire(
            2,
            Event::Error {
                message: "Something went wrong; please try again.".into(),
            },
        ))
        .unwrap();
        r.finish("ep_1").unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            "Partly\nSomething went wrong; please try again.\nepisode ep_1\n"
        );
    }

    #[test]
    fn a_streamed_direct_line_answer_is_printed_once_and_a_failure_says_so() {
        let mut out = Vec::new();
        let mut r = Renderer::new(&mut out, Style::default());
        let piece = |seq, agent: &str, text: &str| {
            wire(
                seq,
                Event::DelegatedText {
                    agent: agent.into(),
                    label: agent.to_uppercase(),
                    text: text.into(),
                },
            )
        };
        let answer = |seq, agent: &str, status, text: &str| {
            wire(
                seq,
                Event::DelegatedAnswer {
                    agent: agent.into(),
                    label: agent.to_uppercase(),
                    status,
                    text: text.into(),
                },
            )
        };
        for e in [
            piece(1, "a", "Three "),
            piece(2, "b", "ignored while a streams"),
            piece(3, "a", "risks."),
            answer(4, "a", AgentStatus::Ok, "Three risks."),
            answer(5, "b", AgentStatus::Error, "B could not answer."),
        ] {
            r.event(&e).unwrap();
        }
        r.finish("ep_1").unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            "A (direct):\nThree risks.\nB (direct):\nB could not answer.\nepisode ep_1\n"
        );
    }

    #[test]
    fn a_streamed_failure_is_told_once() {
        for (streamed, delivered, shown) in [
            // The remote agent's own acknowledgement, delivered as it streamed.
            (
                "A couldn't be reached.",
                "A couldn't be reached.",
                "A (direct):\nA couldn't be reached.\nepisode ep_1\n",
            ),
            // What it said before it failed stays, and the failure is added once.
            (
                "Checking. ",
                "Checking. A could not answer.",
                "A (direct):\nChecking. \nA could not answer.\nepisode ep_1\n",
            ),
        ] {
            let mut out = Vec::new();
            let mut r = Renderer::new(&mut out, Style::default());
            for e in [
                wire(
                    1,
                    Event::DelegatedText {
                        agent: "a".into(),
                        label: "A".into(),
                        text: streamed.into(),
                    },
                ),
                wire(
                    2,
                    Event::DelegatedAnswer {
                        agent: "a".into(),
                        label: "A".into(),
                        status: AgentStatus::Error,
                        text: delivered.into(),
                    },
                ),
            ] {
                r.event(&e).unwrap();
            }
            r.finish("ep_1").unwrap();
            assert_eq!(String::from_utf8(out).unwrap(), shown);
        }
    }

    #[test]
    fn money_shows_fractions_of_a_cent() {
        assert_eq!(money(0.0), "$0.00");
        assert_eq!(money(0.000221), "$0.000221");
        assert_eq!(money(0.1234567), "$0.1235");
    }
}
