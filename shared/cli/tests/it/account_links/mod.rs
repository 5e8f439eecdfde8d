//! Account links (D-37) in `baton serve`, against the example registry's demo partner
//! airline (an OAuth server and the MCP server it protects, started per test): a tool that
//! acts with the user's own sign-in makes the turn wait with a sign-in page; the callback
//! keeps the link for that principal only; the turn resumes; later turns (after a SIGKILL
//! and a restart) use the link without asking; a refresh token renews it; a revoked link
//! asks again. Every bad callback is a plain page, and stores nothing.

use std::process::Command;

use baton_tests::partner::Partner;
use serde_json::{Value, json};

use crate::support::*;

mod faces;

/// The rewards specialist reads the partner miles; the orchestrator composes.
pub(crate) const SCRIPT: &str = r#"
agents:
  orchestrator:
    - when: { purpose: route }
      tool_calls: [{ name: ask_rewards, args: { query: "my partner miles", intent_count: 1 } }]
    - when: { purpose: compose }
      text: ["Here is what Partner Air says."]
  rewards:
    - when: { after_tool_results: false }
      tool_calls: [{ name: get_partner_miles, args: {} }]
    - when: { after_tool_results: true }
      text: ["Your Partner Air miles are in."]
"#;

/// A partner, a registry using it, and a `baton serve` at an address known beforehand
/// (the partner sends the browser back there).
struct Scene {
    partner: Partner,
    addr: String,
    args: Vec<String>,
}

impl Scene {
    fn new(sandbox: &Sandbox, store: &[&str]) -> Scene {
        let partner = Partner::start();
        let addr = format!("127.0.0.1:{}", free_port());
        let registry = partner.registry_copy(sandbox.path(), &addr);
        let model = sandbox.script(SCRIPT);
        let mut args: Vec<String> = [
            "--registry",
            registry.to_str().unwrap(),
            "--model",
            &model,
            "--addr",
            &addr,
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        args.extend(store.iter().map(|s| (*s).to_owned()));
        Scene {
            partner,
            addr,
            args,
        }
    }

    /// The same, with `get_partner_miles` an `http` tool of the partner's plain JSON API
    /// (`/api/miles`, its own protected resource) instead of its MCP server.
    fn over_http(sandbox: &Sandbox) -> Scene {
        let scene = Scene::new(sandbox, &[]);
        let tools = sandbox.path().join("registry/tools.yaml");
        let text = std::fs::read_to_string(&tools).unwrap();
        let port = scene.partner.port();
        let start = text
            .find(&format!(
                "      kind: mcp\n      server:\n        url: http://127.0.0.1:{port}/mcp"
            ))
            .expect("get_partner_miles's connector");
        let end = start + text[start..].find("    schema:").unwrap();
        let http = format!(
            "      kind: http\n      url: http://127.0.0.1:{port}/api/miles\n      deadline_ms: 10000\n      oauth:\n        grant: authorization_code\n        redirect_uri: http://{}/v1/links/callback\n      response:\n        json:\n          domain_type: partner_miles\n          enricher_id: partner-air\n          version: 1.0.0\n",
            scene.addr
        );
        std::fs::write(&tools, format!("{}{http}{}", &text[..start], &text[end..])).unwrap();
        scene
    }

    fn serve(&self, baton: Command) -> Serving {
        let args: Vec<&str> = self.args.iter().map(String::as_str).collect();
        Serving::spawn(baton, &args, &[])
    }
}

/// A turn asking for the miles as `principal`: its events and episode.
fn ask(serving: &Serving, principal: &str) -> (Vec<Value>, String) {
    let response = serving.turn(principal, r#"{"message":"what are my partner miles"}"#);
    let episode = header(&response, "x-baton-episode-id")
        .unwrap_or_else(|| panic!("{response}"))
        .to_owned();
    (sse_events(&response), episode)
}

/// The partner's sign-in page in an answer's words.
fn page_in(answer: &str, partner: &Partner) -> String {
    let page = format!("http://127.0.0.1:{}/authorize?", partner.port());
    let start = answer
        .find(&page)
        .unwrap_or_else(|| panic!("no sign-in page in: {answer}"));
    answer[start..]
        .chars()
        .take_while(|c| !c.is_whitespace() && *c != ',')
        .collect()
}

fn interruption(events: &[Value]) -> Option<&Value> {
    events.iter().find(|e| e["type"] == "interruption")
}

fn outcome(events: &[Value]) -> &str {
    events
        .iter()
        .rfind(|e| e["type"] == "completed")
        .and_then(|e| e["outcome"].as_str())
        .unwrap_or("none")
}

fn miles_read(events: &[Value]) -> bool {
    events.iter().any(|e| {
        e["type"] == "tool_result" && e["tool"] == "get_partner_miles" && e["status"] == "ok"
    })
}

/// The browser coming back to Baton's callback at `back`: the status line and the page.
fn callback(serving: &Serving, scene: &Scene, back: &str) -> (u16, String) {
    callback_at(serving, &scene.addr, back)
}

fn callback_at(serving: &Serving, addr: &str, back: &str) -> (u16, String) {
    let target = back
        .strip_prefix(&format!("http://{addr}"))
        .unwrap_or_else(|| panic!("sent back elsewhere: {back}"));
    let response = serving.request(&format!("GET {target} HTTP/1.1"), "");
    let status = response
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap();
    (status, response)
}

/// The one-time code a finished sign-in's page shows (D-37).
pub(crate) fn code_of(page: &str) -> String {
    let start = page
        .find("<strong id=\"code\">")
        .unwrap_or_else(|| panic!("no code on the page: {page}"))
        + "<strong id=\"code\">".len();
    page[start..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect()
}

/// Signs in at `asked`'s page as the user and comes back to Baton: the code shown.
fn sign_in_for_code(serving: &Serving, scene: &Scene, asked: &Value) -> String {
    let back = scene
        .partner
        .sign_in(asked["url"].as_str().unwrap(), "allow");
    let (status, page) = callback(serving, scene, &back);
    assert_eq!(status, 200, "{page}");
    code_of(&page)
}

fn links(serving: &Serving, principal: &str) -> Vec<Value> {
    let response = serving.request(
        &format!("GET /v1/links HTTP/1.1\r\nx-baton-principal: {principal}"),
        "",
    );
    let body = response.split_once("\r\n\r\n").unwrap().1;
    let parsed: Value = serde_json::from_str(body).unwrap_or_else(|_| panic!("{response}"));
    parsed["links"].as_array().cloned().unwrap_or_default()
}

fn resume(
    serving: &Serving,
    principal: &str,
    episode: &str,
    asked: &Value,
    decision: &str,
) -> Vec<Value> {
    // `approve` and `decline` are decisions; anything else is the answer (a link's code).
    let body = if matches!(decision, "approve" | "decline") {
        json!({
            "episode_id": episode,
            "interruption_id": asked["id"],
            "decision": decision,
        })
    } else {
        json!({
            "episode_id": episode,
            "interruption_id": asked["id"],
            "answer": decision,
        })
    };
    let turn = asked["turn_id"].as_str().unwrap();
    let response = serving.request(
        &format!(
            "POST /v1/turns/{turn}/resume HTTP/1.1\r\nContent-Type: application/json\r\nx-baton-principal: {principal}"
        ),
        &body.to_string(),
    );
    sse_events(&response)
}

/// Alice connects her Partner Air account once, at the sign-in page the waiting turn
/// gave: the turn resumes and reads her miles; after a SIGKILL and a restart her next turn
/// reads them without asking; Bob is asked for his own; `baton links` lists and revokes
/// hers, and her next turn asks again.
pub(crate) fn connects_once(sandbox: &Sandbox, baton: impl Fn() -> Command, store: &[&str]) {
    let scene = Scene::new(sandbox, store);
    let first = scene.serve(baton());
    let (events, episode) = ask(&first, "alice");
    let asked = interruption(&events).unwrap_or_else(|| panic!("{events:?}"));
    assert_eq!(asked["kind"], "account_link");
    assert_eq!(asked["tool"], "get_partner_miles");
    assert_eq!(outcome(&events), "awaiting_user");
    assert!(!miles_read(&events));
    let url = asked["url"].as_str().unwrap();
    assert!(
        url.starts_with(&format!(
            "http://127.0.0.1:{}/authorize?",
            scene.partner.port()
        )),
        "{url}"
    );
    assert!(
        url.contains("code_challenge_method=S256") && url.contains("state=v1."),
        "{url}"
    );

    let back = scene.partner.sign_in(url, "allow");
    let (status, page) = callback(&first, &scene, &back);
    assert_eq!(status, 200, "{page}");
    // The page connects nothing by itself: it shows the code for the conversation that
    // asked, naming whose it is.
    assert!(page.contains("One step left"), "{page}");
    assert!(page.contains("<strong>alice</strong>"), "{page}");
    let code = code_of(&page);
    assert_eq!(code.len(), 6, "{page}");
    assert!(header(&page, "cache-control").is_some_and(|v| v.contains("no-store")));
    // The same sign-in again finishes nothing more.
    let (status, page) = callback(&first, &scene, &back);
    assert_eq!(status, 409, "{page}");
    assert!(page.contains("already finished"), "{page}");
    assert_eq!(scene.partner.stats()["tokens"], 1);
    // Not connected until the conversation gives the code.
    assert!(links(&first, "alice").is_empty());
    let server = format!("http://127.0.0.1:{}/mcp", scene.partner.port());

    // SIGKILL while the turn waits: the restarted process resumes it with the code, and
    // the link made before the kill is there.
    first.kill();
    let restarted = scene.serve(baton());
    let resumed = resume(&restarted, "alice", &episode, asked, &code);
    assert!(miles_read(&resumed), "{resumed:?}");
    assert_eq!(outcome(&resumed), "answered");
    assert_eq!(scene.partner.stats()["calls"], 1);
    let linked = links(&restarted, "alice");
    assert_eq!(linked.len(), 1, "{linked:?}");
    assert_eq!(linked[0]["server"], server.as_str());
    assert!(links(&restarted, "bob").is_empty());

    // Another restart loses nothing: the link is in the store, sealed under the key in
    // the data directory (or the configured one).
    restarted.kill();
    let second = scene.serve(baton());
    let (later, _) = ask(&second, "alice");
    assert!(interruption(&later).is_none(), "{later:?}");
    assert!(miles_read(&later), "{later:?}");
    assert_eq!(scene.partner.stats()["calls"], 2);
    assert_eq!(scene.partner.stats()["tokens"], 1, "no new sign-in");

    // Another principal is never served with Alice's link.
    let (bobs, _) = ask(&second, "bob");
    assert_eq!(interruption(&bobs).unwrap()["kind"], "account_link");
    assert_eq!(scene.partner.stats()["calls"], 2);

    // `baton links` on the same store: list, then revoke.
    let cli = |args: &[&str]| {
        let mut command = baton();
        let scene_args: Vec<&str> = scene.args.iter().map(String::as_str).collect();
        // The same registry, model and store; no address (nothing is served).
        let without_addr: Vec<&str> = scene_args
            .chunks(2)
            .filter(|pair| pair[0] != "--addr")
            .flatten()
            .copied()
            .collect();
        let output = command
            .args(without_addr)
            .args(["--principal", "alice", "links", "--json"])
            .args(args)
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        serde_json::from_slice::<Value>(&output.stdout).unwrap()
    };
    assert_eq!(cli(&[])["links"][0]["server"], server.as_str());
    assert_eq!(cli(&["revoke", &server])["revoked"], true);
    assert_eq!(cli(&[])["links"], json!([]));
    let (asked_again, _) = ask(&second, "alice");
    assert_eq!(interruption(&asked_again).unwrap()["kind"], "account_link");
    assert_eq!(scene.partner.stats()["calls"], 2);
}

#[test]
fn an_account_connected_once_serves_later_turns_across_a_restart() {
    let sandbox = Sandbox::new();
    connects_once(&sandbox, || sandbox.baton(), &[]);
}

/// A server that asks for more scope after every sign-in (`insufficient_scope`, every
/// time) sends the user round at most three times for one call: the first sign-in and two
/// step-ups, counted across the resumes they take; then the turn goes on without it and
/// says it could not be done.
#[test]
fn a_server_that_always_wants_more_scope_is_not_followed_past_three_sign_ins() {
    let sandbox = Sandbox::new();
    let scene = Scene::new(&sandbox, &[]);
    scene.partner.control(&json!({"more_scope": true}));
    let serving = scene.serve(sandbox.baton());
    let (mut events, episode) = ask(&serving, "alice");
    let mut sign_ins = 0;
    while let Some(asked) = interruption(&events).cloned() {
        assert_eq!(asked["kind"], "account_link", "{events:?}");
        sign_ins += 1;
        assert!(sign_ins <= 3, "asked for a sign-in a {sign_ins}th time");
        let code = sign_in_for_code(&serving, &scene, &asked);
        events = resume(&serving, "alice", &episode, &asked, &code);
    }
    assert_eq!(sign_ins, 3);
    assert_eq!(scene.partner.stats()["tokens"], 3);
    assert_eq!(outcome(&events), "answered", "{events:?}");
    assert!(!miles_read(&events));
    let result = events
        .iter()
        .rfind(|e| e["type"] == "tool_result" && e["tool"] == "get_partner_miles")
        .unwrap_or_else(|| panic!("{events:?}"));
    assert_eq!(result["status"], "unavailable");
}

/// A sign-in page works for whoever opens it: Mallory sends hers to Alice, who signs in
/// with her own Partner Air account. The page shows Alice the code and whose Baton user it
/// would connect to; without that code Mallory's conversation connects nothing (a "yes" is
/// refused and keeps the wait, a guessed code drops the sign-in), and no call is ever made
/// with Alice's account for Mallory.
#[test]
fn a_sign_in_finished_by_someone_else_connects_nothing_without_its_code() {
    let sandbox = Sandbox::new();
    let scene = Scene::new(&sandbox, &[]);
    let serving = scene.serve(sandbox.baton());
    let (events, episode) = ask(&serving, "mallory");
    let asked = interruption(&events).unwrap_or_else(|| panic!("{events:?}"));
    // Alice opens Mallory's page and signs in: the page names Mallory and warns her.
    let back = scene
        .partner
        .sign_in(asked["url"].as_str().unwrap(), "allow");
    let (status, page) = callback(&serving, &scene, &back);
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("<strong>mallory</strong>"), "{page}");
    assert!(page.contains("give the code to no one"), "{page}");
    let code = code_of(&page);
    assert!(links(&serving, "mallory").is_empty(), "not connected yet");
    // "Done" without the code is refused, and the wait stays.
    let body = json!({
        "episode_id": episode,
        "interruption_id": asked["id"],
        "decision": "approve",
    });
    let turn = asked["turn_id"].as_str().unwrap();
    let refused = serving.request(
        &format!(
            "POST /v1/turns/{turn}/resume HTTP/1.1\r\nContent-Type: application/json\r\nx-baton-principal: mallory"
        ),
        &body.to_string(),
    );
    assert!(refused.starts_with("HTTP/1.1 400"), "{refused}");
    assert!(refused.contains("code"), "{refused}");
    // A guess drops the pending sign-in: the real code no longer connects it either.
    let guess = if code == "000000" { "000001" } else { "000000" };
    let guessed = resume(&serving, "mallory", &episode, asked, guess);
    assert_eq!(outcome(&guessed), "answered", "{guessed:?}");
    assert!(!miles_read(&guessed), "{guessed:?}");
    assert!(links(&serving, "mallory").is_empty());
    let (later, _) = ask(&serving, "mallory");
    assert_eq!(interruption(&later).unwrap()["kind"], "account_link");
    assert_eq!(
        scene.partner.stats()["calls"],
        0,
        "nothing ran with Alice's account"
    );
}

/// Each callback that goes wrong is a plain page and keeps nothing: no state, a forged or
/// changed one, a denied sign-in, a token for another resource, a code spent before, an
/// authorization server that is down.
#[test]
fn a_bad_callback_is_a_plain_page_and_stores_nothing() {
    let sandbox = Sandbox::new();
    let scene = Scene::new(&sandbox, &[]);
    let serving = scene.serve(sandbox.baton());
    let sign_in_page = || {
        let (events, _) = ask(&serving, "alice");
        interruption(&events).unwrap()["url"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let page_of = |target: &str| {
        let response = serving.request(&format!("GET {target} HTTP/1.1"), "");
        let status: u16 = response.split_whitespace().nth(1).unwrap().parse().unwrap();
        (status, response)
    };

    let (status, page) = page_of("/v1/links/callback");
    assert_eq!(status, 400, "{page}");
    assert!(page.contains("not one of ours"), "{page}");
    let (status, page) = page_of("/v1/links/callback?state=v1.AAAA&code=x");
    assert_eq!(status, 400, "{page}");
    assert!(page.contains("not one of ours"), "{page}");

    // A state changed on its way back does not open.
    let back = scene.partner.sign_in(&sign_in_page(), "allow");
    let changed = back.replacen("state=v1.", "state=v1.A", 1);
    let (status, page) = callback(&serving, &scene, &changed);
    assert_eq!(status, 400, "{page}");
    assert!(links(&serving, "alice").is_empty());

    // The user said no at the sign-in page.
    let back = scene.partner.sign_in(&sign_in_page(), "deny");
    assert!(back.contains("error=access_denied"), "{back}");
    let (status, page) = callback(&serving, &scene, &back);
    assert_eq!(status, 400, "{page}");
    assert!(page.contains("access was not granted"), "{page}");
    assert!(links(&serving, "alice").is_empty());

    // A token issued for another resource.
    scene.partner.control(&json!({ "wrong_audience": true }));
    let back = scene.partner.sign_in(&sign_in_page(), "allow");
    let (status, page) = callback(&serving, &scene, &back);
    assert_eq!(status, 400, "{page}");
    assert!(page.contains("another resource"), "{page}");
    assert!(links(&serving, "alice").is_empty());
    scene.partner.control(&json!({ "wrong_audience": false }));

    // A code spent before: linked, revoked, and the same callback again.
    let back = scene.partner.sign_in(&sign_in_page(), "allow");
    assert_eq!(callback(&serving, &scene, &back).0, 200);
    let server = format!("http://127.0.0.1:{}/mcp", scene.partner.port());
    let revoke = serving.request(
        &format!("DELETE /v1/links?server={server} HTTP/1.1\r\nx-baton-principal: alice"),
        "",
    );
    assert!(revoke.contains("\"revoked\":true"), "{revoke}");
    let refused_before = scene.partner.stats()["refused"].as_u64().unwrap();
    let (status, page) = callback(&serving, &scene, &back);
    assert_eq!(status, 400, "{page}");
    assert!(page.contains("did not complete"), "{page}");
    assert_eq!(
        scene.partner.stats()["refused"].as_u64().unwrap(),
        refused_before + 1
    );
    assert!(links(&serving, "alice").is_empty());

    // The authorization server is down when the browser comes back.
    let back = scene.partner.sign_in(&sign_in_page(), "allow");
    let Scene { partner, addr, .. } = scene;
    partner.stop();
    let (status, page) = callback_at(&serving, &addr, &back);
    assert_eq!(status, 503, "{page}");
    assert!(page.contains("could not be reached"), "{page}");
    assert!(links(&serving, "alice").is_empty());
}

/// An expired access token is renewed with the refresh token, without asking; a refresh
/// token the server refuses makes the next turn ask to connect again.
#[test]
fn a_link_is_refreshed_and_a_refused_refresh_asks_again() {
    let sandbox = Sandbox::new();
    let scene = Scene::new(&sandbox, &[]);
    // Tokens that are stale at once: every later use renews.
    scene.partner.control(&json!({ "access_ttl": 1 }));
    let serving = scene.serve(sandbox.baton());
    let (events, episode) = ask(&serving, "alice");
    let asked = interruption(&events).unwrap();
    let code = sign_in_for_code(&serving, &scene, asked);
    let resumed = resume(&serving, "alice", &episode, asked, &code);
    assert!(miles_read(&resumed), "{resumed:?}");
    assert!(scene.partner.stats()["refreshes"].as_u64().unwrap() >= 1);

    let before = scene.partner.stats()["refreshes"].as_u64().unwrap();
    let (later, _) = ask(&serving, "alice");
    assert!(interruption(&later).is_none(), "{later:?}");
    assert!(miles_read(&later));
    assert!(scene.partner.stats()["refreshes"].as_u64().unwrap() > before);
    assert_eq!(scene.partner.stats()["codes"], 1, "no new sign-in");

    scene.partner.control(&json!({ "refuse_refresh": true }));
    let (refused, episode) = ask(&serving, "alice");
    let asked = interruption(&refused).unwrap_or_else(|| panic!("{refused:?}"));
    assert_eq!(asked["kind"], "account_link");
    // Declining the link: the specialist is told, and the turn answers.
    let declined = resume(&serving, "alice", &episode, asked, "decline");
    assert_eq!(outcome(&declined), "answered");
    assert!(!miles_read(&declined));
}
