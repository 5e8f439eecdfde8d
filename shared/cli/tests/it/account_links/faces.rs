//! An account link on every face: A2A's `AUTH_REQUIRED`, MCP's URL elicitation, AG-UI's
//! resume, an HTTP API acting for the user, `baton chat` and an OpenAI client.

use super::*;

/// The official A2A SDK for Python: the task waits in `TASK_STATE_AUTH_REQUIRED` with the
/// sign-in page in its answer; once the user has signed in, the code the page showed, on
/// the same task, goes on, and the task completes with the miles read.
#[test]
fn an_a2a_task_waits_in_auth_required_and_the_next_message_goes_on() {
    let sandbox = Sandbox::new();
    let scene = Scene::new(&sandbox, &[]);
    let serving = scene.serve(sandbox.baton());
    let script = baton_testkit::crate_dir().join("tests/clients/a2a_auth.py");
    let mut command = Command::new(baton_testkit::a2a_python());
    command
        .arg(&script)
        .args([&format!("http://{}", serving.addr), "alice"]);
    let mut client = LineClient::spawn(command);
    let first = client.next();
    assert_eq!(first["state"], "TASK_STATE_AUTH_REQUIRED", "{first:#}");
    assert_eq!(first["read_back"], "TASK_STATE_AUTH_REQUIRED", "{first:#}");
    let url = page_in(first["answer"].as_str().unwrap(), &scene.partner);
    let back = scene.partner.sign_in(&url, "allow");
    let (status, page) = callback(&serving, &scene, &back);
    assert_eq!(status, 200, "{page}");
    client.say(&format!("done, the code is {}", code_of(&page)));
    let second = client.next();
    assert_eq!(second["state"], "TASK_STATE_COMPLETED", "{second:#}");
    assert_eq!(second["task_id"], first["task_id"], "{second:#}");
    assert!(
        second["answer"]
            .as_str()
            .unwrap()
            .contains("Here is what Partner Air says."),
        "{second:#}"
    );
    client.finish();
    assert_eq!(scene.partner.stats()["calls"], 1);
}

/// An MCP client that can send its user to a page: it signs in at the page it is given
/// (playing the user's browser, then Baton's callback) and accepts; asked for the code
/// that page showed, it gives it.
#[derive(Clone)]
struct SignsIn {
    partner: std::sync::Arc<Partner>,
    baton: String,
    asked: std::sync::Arc<std::sync::Mutex<Vec<Value>>>,
    code: std::sync::Arc<std::sync::Mutex<String>>,
}

impl rmcp::ClientHandler for SignsIn {
    async fn create_elicitation(
        &self,
        request: rmcp::model::ElicitRequestParams,
        _context: rmcp::service::RequestContext<rmcp::RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        let asked = serde_json::to_value(&request).unwrap();
        self.asked.lock().unwrap().push(asked.clone());
        if asked["mode"] == "form" {
            let code = self.code.lock().unwrap().clone();
            return Ok(serde_json::from_value(
                json!({"action": "accept", "content": {"code": code}}),
            )
            .unwrap());
        }
        let url = asked["url"].as_str().unwrap_or_default().to_owned();
        let (partner, baton) = (self.partner.clone(), self.baton.clone());
        let (status, page) = tokio::task::spawn_blocking(move || {
            let back = partner.sign_in(&url, "allow");
            let target = back
                .strip_prefix(&format!("http://{baton}"))
                .unwrap()
                .to_owned();
            let (status, _, page) = baton_tests::partner::exchange(&baton, "GET", &target, None);
            (status, page)
        })
        .await
        .unwrap();
        assert_eq!(status, 200);
        *self.code.lock().unwrap() = code_of(&page);
        Ok(serde_json::from_value(json!({"action": "accept"})).unwrap())
    }

    fn get_info(&self) -> rmcp::model::ClientConfig {
        let mut info = rmcp::model::ClientConfig::default();
        info.capabilities.elicitation =
            Some(serde_json::from_value(json!({"url": {}, "form": {}})).unwrap());
        info
    }
}

/// The official Rust MCP SDK: a client that declared URL and form elicitation is sent to
/// the sign-in page, then asked for the code it showed, and its retried call resumes the
/// turn, which reads the miles.
#[tokio::test]
async fn an_mcp_client_is_sent_to_the_sign_in_page_by_url_elicitation() {
    baton_connectors::install_tls_provider();
    let sandbox = Sandbox::new();
    let scene = Scene::new(&sandbox, &[]);
    let serving = scene.serve(sandbox.baton());
    let Scene { partner, addr, .. } = scene;
    let partner = std::sync::Arc::new(partner);
    let handler = SignsIn {
        partner: partner.clone(),
        baton: addr,
        asked: Default::default(),
        code: Default::default(),
    };
    let config =
        rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(
            format!("http://{}/mcp", serving.addr),
        );
    let transport =
        rmcp::transport::StreamableHttpClientTransport::with_client(reqwest::Client::new(), config);
    let lifecycle = rmcp::service::ClientLifecycleMode::Discover {
        preferred_versions: vec![rmcp::model::ProtocolVersion::V_2026_07_28],
    };
    let client = rmcp::service::ClientServiceExt::serve_with_lifecycle(
        handler.clone(),
        transport,
        lifecycle,
    )
    .await
    .unwrap();
    let Value::Object(arguments) = json!({"message": "what are my partner miles"}) else {
        unreachable!()
    };
    let result = client
        .call_tool(rmcp::model::CallToolRequestParams::new("ask").with_arguments(arguments))
        .await
        .unwrap();
    let asked = handler.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert_eq!(asked[0]["mode"], "url", "{asked:?}");
    assert_eq!(asked[1]["mode"], "form", "{asked:?}");
    assert_eq!(result.is_error, Some(false), "{result:?}");
    let text: String = result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect();
    assert!(
        text.contains("Here is what Partner Air says."),
        "{result:?}"
    );
    assert_eq!(partner.stats()["calls"], 1);
    drop(client);
}

/// The official AG-UI client: the run ends in an `account_link` interrupt whose metadata
/// holds the sign-in page; once the user has signed in, the next run's resume with the
/// code the page showed (`{"code": "…"}`) goes on and reads the miles.
#[test]
fn an_ag_ui_client_resumes_after_the_sign_in() {
    let sandbox = Sandbox::new();
    let scene = Scene::new(&sandbox, &[]);
    let serving = scene.serve(sandbox.baton());
    let (_work, script) = js_client("agui_interrupt.mjs", "@ag-ui/client");
    let mut command = Command::new("node");
    command
        .arg(&script)
        .arg(format!("http://{}", serving.addr))
        .arg("alice")
        .arg("what are my partner miles")
        .arg(r#"{"approved": true}"#)
        .arg("wait");
    let mut client = LineClient::spawn(command);
    let first = client.next();
    let pending = &first["pending"][0];
    assert_eq!(pending["reason"], "account_link", "{first:#}");
    assert_eq!(
        pending["responseSchema"]["required"],
        json!(["code"]),
        "{first:#}"
    );
    let url = pending["metadata"]["url"].as_str().unwrap();
    let back = scene.partner.sign_in(url, "allow");
    let (status, page) = callback(&serving, &scene, &back);
    assert_eq!(status, 200, "{page}");
    client.say(&json!({"code": code_of(&page)}).to_string());
    let out = client.next();
    assert_eq!(out["outcomes"][1]["outcome"], "success", "{out:#}");
    assert_eq!(out["pendingAfter"], json!([]), "{out:#}");
    assert!(
        out["second"]
            .to_string()
            .contains("Here is what Partner Air says."),
        "{out:#}"
    );
    client.finish();
    assert_eq!(scene.partner.stats()["calls"], 1);
}

/// An `http` API that acts with the user's own sign-in: the same account link, kept under
/// the API's own resource, then used without asking.
#[test]
fn an_http_api_that_acts_for_the_user_is_linked_the_same_way() {
    let sandbox = Sandbox::new();
    let scene = Scene::over_http(&sandbox);
    let serving = scene.serve(sandbox.baton());
    let (events, episode) = ask(&serving, "alice");
    let asked = interruption(&events).unwrap_or_else(|| panic!("{events:?}"));
    assert_eq!(asked["kind"], "account_link");
    let url = asked["url"].as_str().unwrap();
    assert!(url.contains("resource=http%3A%2F%2F127.0.0.1"), "{url}");
    let code = sign_in_for_code(&serving, &scene, asked);
    let resumed = resume(&serving, "alice", &episode, asked, &code);
    assert!(miles_read(&resumed), "{resumed:?}");
    let linked = links(&serving, "alice");
    assert_eq!(
        linked[0]["server"],
        format!("http://127.0.0.1:{}/api/miles", scene.partner.port()).as_str()
    );
    let (later, _) = ask(&serving, "alice");
    assert!(interruption(&later).is_none(), "{later:?}");
    assert!(miles_read(&later), "{later:?}");
    assert_eq!(scene.partner.stats()["calls"], 2);
    assert_eq!(scene.partner.stats()["tokens"], 1);
}

/// `baton chat` prints the sign-in page and waits; `baton serve` on the same data (which
/// receives the sign-in's callback) keeps the link; the code the page showed, typed at the
/// prompt (after something that is not one), goes on, and the miles are read.
#[test]
fn chat_prints_the_sign_in_page_and_goes_on_once_connected() {
    let sandbox = Sandbox::new();
    let scene = Scene::new(&sandbox, &[]);
    let serving = scene.serve(sandbox.baton());
    let chat_args: Vec<&str> = scene
        .args
        .chunks(2)
        .filter(|pair| pair[0] != "--addr")
        .flatten()
        .map(String::as_str)
        .collect();
    let mut command = sandbox.baton();
    command.args(&chat_args).args([
        "--principal",
        "alice",
        "chat",
        "--json",
        "what are my partner miles",
    ]);
    let mut chat = LineClient::spawn(command);
    let asked = loop {
        let event = chat.next();
        if event["type"] == "interruption" {
            break event;
        }
    };
    assert_eq!(asked["kind"], "account_link");
    let code = sign_in_for_code(&serving, &scene, &asked);
    chat.say("done");
    chat.say(&code);
    let (rest, stderr) = chat.finish();
    assert!(
        stderr.contains("The code the sign-in page shows"),
        "{stderr}"
    );
    assert!(stderr.contains("That is not the code"), "{stderr}");
    assert!(miles_read(&rest), "{rest:?}");
    assert_eq!(outcome(&rest), "answered");
    assert_eq!(scene.partner.stats()["calls"], 1);
}

/// The official OpenAI SDK for Python: the answer holds the sign-in page; once the user has
/// signed in, the code the page showed, said in the same episode, goes on and the miles are
/// read.
#[test]
fn an_openai_client_reads_the_page_in_the_answer_and_gives_the_code() {
    let sandbox = Sandbox::new();
    let scene = Scene::new(&sandbox, &[]);
    let serving = scene.serve(sandbox.baton());
    let script = baton_testkit::crate_dir().join("tests/clients/openai_link.py");
    let mut command = Command::new(baton_testkit::a2a_python());
    command
        .arg(&script)
        .args([&format!("http://{}", serving.addr), "alice"]);
    let mut client = LineClient::spawn(command);
    let first = client.next();
    let url = page_in(first["content"].as_str().unwrap(), &scene.partner);
    let back = scene.partner.sign_in(&url, "allow");
    let (status, page) = callback(&serving, &scene, &back);
    assert_eq!(status, 200, "{page}");
    client.say(&code_of(&page));
    let second = client.next();
    assert!(
        second["content"]
            .as_str()
            .unwrap()
            .contains("Here is what Partner Air says."),
        "{second:#}"
    );
    client.finish();
    assert_eq!(scene.partner.stats()["calls"], 1);
}
