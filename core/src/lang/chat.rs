//! `keyless://chat`: a program's `generate` answered by the chat tab the user already has open,
//! with no API key. The host turns each model call into a generation request; the extension
//! pastes [`message`] into the chat and follows the reply with [`follow_generation`], which
//! applies the AgentScript reply's completion rules ([`crate::site::watch`]) with "one complete
//! JSON object" in the place of `@@eof`, and checks the shape live, as the interpreter will.

use super::ast::Shape;
use super::interp::ModelCall;
use super::shape::{complete_object, describe_shape, read_answer};
use crate::diag::Code;
use crate::site::{streaming_view, watch, PageObservation, WatchInput, WatchVerdict};
use serde::Serialize;
use serde_json::Value;

/// The one URI of the chat provider.
pub const CHAT_MODEL: &str = "keyless://chat";

/// Whether a model URI is the chat tab's.
#[must_use]
pub fn is_chat(model: &str) -> bool {
    model == CHAT_MODEL
}

/// What is pasted into the chat for one attempt of a generate (`program`: its file, or its run). The first attempt carries the
/// program's whole prompt; a retry carries only why the last answer was refused (the chat holds
/// the conversation). Both end with the same request: one fenced JSON block, nothing else, so a
/// chat that was running an AgentScript task does not answer with commands.
#[must_use]
pub fn message(call: &ModelCall, program: &str) -> String {
    let shape = describe_shape(&call.shape);
    let ask = format!(
        "Answer with exactly one fenced ```json block holding one JSON object of this shape: {shape}\nWrite nothing outside the block, and no AgentScript commands: a program reads your answer, not a person."
    );
    match (&call.correction, call.attempt) {
        (Some(why), n) if n > 1 => format!(
            "[keyless · .as program {program} · attempt {n}]\nYour previous answer was not accepted: {why}.\n\n{ask}"
        ),
        _ => {
            // The program's own closing line asks for the same shape in fewer words.
            let own = format!("Answer with one JSON object only, of this shape: {shape}");
            let prompt = call.prompt.trim_end();
            let prompt = prompt.strip_suffix(own.as_str()).unwrap_or(prompt).trim_end();
            format!("[keyless · .as program {program}]\n{prompt}\n\n{ask}")
        }
    }
}

/// A generation's shape from its JSON text (as the extension passes it on).
#[must_use]
pub fn wire_shape(json: &str) -> Option<Shape> {
    serde_json::from_str::<Value>(json)
        .ok()
        .as_ref()
        .and_then(super::shape::shape_from_json)
}

/// The live report on a generation's reply: when it is complete, and whether it fits.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GenerationReport {
    /// Complete (hand the text to the host), waiting, or ended with a problem (`code`).
    /// `complete_without_eof` means the reply holds no JSON at all: it is handed on too, and the
    /// program's `attempts` decide.
    pub verdict: WatchVerdict,
    #[cfg_attr(feature = "ts", ts(type = "Code | null"))]
    pub code: Option<Code>,
    /// A complete JSON object is in the reply.
    pub json: bool,
    /// A JSON object or a fenced block was begun (a reply that stops there is truncated).
    pub started: bool,
    /// The object fits the shape (as the interpreter will coerce it).
    pub fits: bool,
    /// Why it does not fit, once there is an object to judge.
    pub problem: Option<String>,
    /// What the page shows, in words: the tab tells the host each time it changes, so a
    /// program's timeout says what the chat did rather than that it did not answer.
    pub seen: String,
}

/// Whether the reply began an answer: a fence or an object.
fn started(text: &str) -> bool {
    text.contains("```") || text.contains('{')
}

/// What a generation's reply shows, in words (a few kinds, so it changes seldom).
fn seen(view: &str, writing: bool, begun: bool, json: bool, problem: Option<&str>) -> String {
    let what = if view.trim().is_empty() {
        "no reply yet".to_string()
    } else if !begun {
        "a reply with no JSON in it".to_string()
    } else if !json {
        "a reply that began a JSON answer but has not finished it".to_string()
    } else if let Some(why) = problem {
        format!("a whole JSON object that does not fit the shape ({why})")
    } else {
        "a whole JSON answer that fits the shape".to_string()
    };
    if writing {
        format!("{what}, the site still writing")
    } else {
        what
    }
}

/// Follows a generation's reply. Completion is the AgentScript reply's rule with a complete JSON
/// object for `@@eof`: the site stopped and (its stop signal was seen or the text was quiet); a
/// reply that began an object or a fence and stays unfinished past the truncation budget is
/// `KA_REPLY_TRUNCATED`; a reply with no JSON at all completes once quiet (the program's
/// attempts then say what was wrong); the timeout and the site's "chat is full" phrases end it
/// as they end a batch's reply.
#[must_use]
pub fn follow_generation(text: &str, shape: &Shape, page: &PageObservation) -> GenerationReport {
    // While the site writes, an open fence is rendered closed: judge only what is certain.
    let view = streaming_view(text, page.still_writing());
    // The reader the program uses: what it would accept completes the reply.
    let value = complete_object(view);
    let begun = started(view);
    let verdict = watch(&WatchInput::of(text, begun, value.is_some(), page));
    // Judged as the program will read it, once a whole object is there.
    let checked = value.as_ref().map(|_| read_answer(view, shape).value);
    let problem = checked.and_then(Result::err);
    GenerationReport {
        verdict,
        code: verdict.code(),
        json: value.is_some(),
        started: begun,
        fits: value.is_some() && problem.is_none(),
        seen: seen(
            view,
            page.still_writing(),
            begun,
            value.is_some(),
            problem.as_deref(),
        ),
        problem,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lang::ast::Field;
    use crate::lang::Pos;

    fn shape() -> Shape {
        Shape::Object(vec![Field {
            name: "n".into(),
            shape: Shape::Number,
            pos: Pos { line: 1, column: 1 },
        }])
    }

    fn call(attempt: u32, correction: Option<&str>) -> ModelCall {
        ModelCall {
            model: CHAT_MODEL.into(),
            prompt: "Instruction:\nCount.\n".into(),
            limit: None,
            attempt,
            correction: correction.map(str::to_string),
            shape: shape(),
        }
    }

    fn stopped(quiet_ms: u64) -> PageObservation {
        PageObservation {
            site_streaming: false,
            stop_signal_seen: true,
            quiet_ms,
            waited_ms: quiet_ms,
            ..PageObservation::default()
        }
    }

    #[test]
    fn first_attempt_carries_the_prompt_and_a_retry_only_the_correction() {
        let first = message(&call(1, None), "as-1");
        assert!(first.contains("Count."), "{first}");
        assert!(first.contains("{ \"n\": number }"), "{first}");
        let full = ModelCall {
            prompt: "Instruction:\nCount.\n\nAnswer with one JSON object only, of this shape: { \"n\": number }\n".into(),
            ..call(1, None)
        };
        let once = message(&full, "as-1");
        assert_eq!(once.matches("of this shape").count(), 1, "{once}");
        let retry = message(
            &call(2, Some("\"n\" must be a number, not a string")),
            "as-1",
        );
        assert!(!retry.contains("Count."), "{retry}");
        assert!(retry.contains("attempt 2"), "{retry}");
        assert!(retry.contains("must be a number"), "{retry}");
    }

    #[test]
    fn completes_on_a_closed_object_once_the_site_stops() {
        let text = "```json\n{\"n\": 3}\n```";
        let r = follow_generation(text, &shape(), &stopped(10));
        assert_eq!(r.verdict, WatchVerdict::Complete);
        assert!(r.json && r.fits && r.problem.is_none());
        // Still streaming: never complete, whatever the text.
        let live = PageObservation {
            site_streaming: true,
            ..stopped(10_000)
        };
        assert_eq!(
            follow_generation(text, &shape(), &live).verdict,
            WatchVerdict::Waiting
        );
    }

    #[test]
    fn an_answer_the_program_repairs_completes_as_it_would_through_mock() {
        // A trailing comma: the host's reader repairs it, so the chat's completion
        // must too, and the live check says it fits.
        for text in [
            "```json\n{\"n\": 3,}\n```",
            "```json\n{\"n\": 3, // three\n}\n```",
            "Sure: {n: 3}",
        ] {
            let r = follow_generation(text, &shape(), &stopped(10));
            assert_eq!(r.verdict, WatchVerdict::Complete, "{text}");
            assert!(r.json && r.fits, "{text}: {r:?}");
            assert_eq!(
                read_answer(text, &shape()).value,
                Ok(serde_json::json!({"n": 3})),
                "{text}"
            );
        }
    }

    #[test]
    fn a_wrong_shape_completes_with_its_problem() {
        let r = follow_generation("{\"n\": \"many\"}", &shape(), &stopped(10));
        assert_eq!(r.verdict, WatchVerdict::Complete);
        assert!(r.json && !r.fits);
        assert!(r.problem.unwrap_or_default().contains("\"n\""));
    }

    #[test]
    fn an_unfinished_object_is_truncated_after_the_budget() {
        let text = "```json\n{\"n\": 3,";
        let mut page = stopped(1_000);
        page.truncation_budget_seconds = 2;
        assert_eq!(
            follow_generation(text, &shape(), &page).verdict,
            WatchVerdict::Waiting
        );
        page.quiet_ms = 2_000;
        let r = follow_generation(text, &shape(), &page);
        assert_eq!(r.verdict, WatchVerdict::Truncated);
        assert_eq!(r.code, Some(Code::ReplyTruncated));
    }

    #[test]
    fn a_shape_survives_the_wire() {
        let at = Pos { line: 0, column: 0 };
        let field = |name: &str, shape| Field {
            name: name.into(),
            shape,
            pos: at,
        };
        let deep = Shape::Object(vec![
            field("n", Shape::Number),
            field("ok", Shape::Boolean),
            field("any", Shape::Json),
            field("names", Shape::List(Some(Box::new(Shape::String)))),
            field("raw", Shape::List(None)),
            field("inner", Shape::Object(vec![field("x", Shape::String)])),
        ]);
        let wire = serde_json::to_value(&deep).unwrap_or_default();
        assert_eq!(crate::lang::shape::shape_from_json(&wire), Some(deep));
        assert_eq!(
            crate::lang::shape::shape_from_json(&serde_json::json!({"shape": "tuple"})),
            None
        );
    }

    #[test]
    fn prose_without_json_completes_when_quiet() {
        let r = follow_generation("I cannot do that.", &shape(), &stopped(5_000));
        assert_eq!(r.verdict, WatchVerdict::CompleteWithoutEof);
        assert!(!r.json && !r.started);
        assert_eq!(r.seen, "a reply with no JSON in it");
    }

    #[test]
    fn what_the_page_shows_is_said_in_words() {
        let live = PageObservation {
            site_streaming: true,
            ..stopped(10)
        };
        let said =
            |text: &str, page: &PageObservation| follow_generation(text, &shape(), page).seen;
        assert_eq!(said("", &stopped(10)), "no reply yet");
        assert_eq!(
            said("```json\n{\"n\": ", &live),
            "a reply that began a JSON answer but has not finished it, the site still writing"
        );
        assert_eq!(
            said("{\"n\": 2}", &stopped(10)),
            "a whole JSON answer that fits the shape"
        );
        assert!(said("{\"n\": \"x\"}", &stopped(10))
            .starts_with("a whole JSON object that does not fit"));
    }
}
