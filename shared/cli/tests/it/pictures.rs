//! Pictures on every face of a real `baton serve` (shipped registry, offline model), each
//! sent by the protocol's own client: the OpenAI SDK's `image_url` parts, `a2a-sdk` file
//! parts, `@ag-ui/client` image parts, the MCP SDK's `image` argument, and the native JSON
//! body. A receipt photo with "this didn't scan" reaches support, a product photo with
//! "any deals?" reaches shopping; nothing the photos hide (their GPS position, owner,
//! device) is left in any answer or anywhere in the data directory; and hostile pictures
//! are refused in plain words with nothing stored and the server still healthy.

use std::path::{Path, PathBuf};
use std::process::Command;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use baton_testkit::pictures::{SECRETS, hostile, product_photo, receipt_photo};
use rmcp::ServiceExt as _;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};

use crate::support::*;

/// The photos, as files a client reads: the shipped receipt, and a large product photo
/// (hundreds of kilobytes: the request is far over the 64 KiB a turn without pictures may
/// be).
fn photos(sandbox: &Sandbox) -> (PathBuf, PathBuf) {
    let receipt = baton_testkit::workspace_root().join("shared/registry/pictures/receipt.jpg");
    let product = sandbox.path().join("product.jpg");
    let large = baton_testkit::pictures::large_photo();
    assert!(large.len() > 256 * 1024, "a large photo: {}", large.len());
    std::fs::write(&product, large).unwrap();
    (receipt, product)
}

fn serve(sandbox: &Sandbox) -> Serving {
    Serving::start(
        sandbox,
        &["--registry", registry(), "--model", "offline"],
        &[],
    )
}

/// Every file under `dir`.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                found.push(path);
            }
        }
    }
    found
}

/// Fails if any of the photos' secrets is in `bytes`.
fn assert_no_secret(bytes: &[u8], what: &str) {
    for secret in SECRETS {
        assert!(
            !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
            "{secret:?} survived in {what}"
        );
    }
}

/// Fails if any file of the data directory (the store, its bodies, the pictures) holds a
/// secret the photos carried.
fn assert_data_dir_clean(sandbox: &Sandbox) {
    let all = files(&sandbox.data_dir());
    assert!(!all.is_empty(), "nothing was stored");
    for file in all {
        assert_no_secret(&std::fs::read(&file).unwrap(), &file.display().to_string());
    }
}

/// The pictures stored under the data directory.
fn stored_pictures(sandbox: &Sandbox) -> usize {
    files(&sandbox.data_dir())
        .iter()
        .filter(|p| p.components().any(|c| c.as_os_str() == "pictures"))
        .count()
}

/// Runs a client `program` (with `args` before its own) against a fresh `baton serve`,
/// giving it the server's address, the principal and the two photos' files; what it
/// printed, checked for any of the photos' secrets, and the sandbox, to look into after.
fn run_client(program: &Path, args: &[&Path], what: &str) -> (Value, Sandbox) {
    let sandbox = Sandbox::new();
    let serving = serve(&sandbox);
    let (receipt, product) = photos(&sandbox);
    let output = Command::new(program)
        .args(args)
        .arg(format!("http://{}", serving.addr))
        .arg("alice@example.com")
        .args([&receipt, &product])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{what} failed: {stderr}");
    assert_no_secret(&output.stdout, what);
    let out = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&output.stdout)));
    (out, sandbox)
}

/// Fails unless `out` says a remote URL was refused, naming why.
fn assert_remote_refused(out: &Value) {
    assert!(
        out["remote"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("remote picture URLs are not fetched")),
        "{out:#}"
    );
}

#[test]
fn the_openai_sdk_sends_pictures_as_image_url_parts() {
    let script = baton_testkit::crate_dir().join("tests/clients/openai_picture.py");
    let (out, sandbox) = run_client(
        &baton_testkit::a2a_python(),
        &[&script],
        "the OpenAI SDK's client",
    );
    assert_eq!(out["receipt"]["consulted"], json!(["support"]), "{out:#}");
    assert_eq!(out["product"]["consulted"], json!(["shop"]), "{out:#}");
    // The receipt says what was removed from the picture.
    let removed = &out["receipt"]["privacy"]["pictures"];
    assert_eq!(removed["location"], 1, "{out:#}");
    // A remote URL is refused as the SDK's own 400, naming why.
    assert_eq!(out["remote"]["type"], "BadRequestError", "{out:#}");
    assert_remote_refused(&out);
    assert_data_dir_clean(&sandbox);
}

#[test]
fn the_a2a_sdk_sends_pictures_as_file_parts() {
    let script = baton_testkit::crate_dir().join("tests/clients/a2a_picture.py");
    let (out, sandbox) = run_client(
        &baton_testkit::a2a_python(),
        &[&script],
        "the A2A SDK's client",
    );
    assert_eq!(out["receipt"]["state"], "TASK_STATE_COMPLETED", "{out:#}");
    assert_eq!(out["receipt"]["consulted"], json!(["support"]), "{out:#}");
    assert_eq!(out["product"]["consulted"], json!(["shop"]), "{out:#}");
    // The task keeps the words; the bytes as sent (which still held the GPS) are not echoed.
    let kept = out["receipt"]["history_parts"].as_array().unwrap();
    assert!(kept.iter().all(|p| p.get("raw").is_none()), "{out:#}");
    assert_remote_refused(&out);
    assert_data_dir_clean(&sandbox);
}

#[test]
fn the_ag_ui_client_sends_pictures_as_image_parts() {
    let (_work, script) = js_client("agui_picture.mjs", "@ag-ui/client");
    let (out, sandbox) = run_client(Path::new("node"), &[&script], "the AG-UI client");
    assert_eq!(out["receipt"]["calls"], json!(["ask_support"]), "{out:#}");
    assert_eq!(out["product"]["calls"], json!(["ask_shop"]), "{out:#}");
    assert!(out["receipt"]["answer"].is_string(), "{out:#}");
    assert_data_dir_clean(&sandbox);
}

#[tokio::test]
async fn the_mcp_sdk_sends_a_picture_as_the_image_argument() {
    baton_connectors::install_tls_provider();
    let sandbox = Sandbox::new();
    let serving = serve(&sandbox);
    let config =
        StreamableHttpClientTransportConfig::with_uri(format!("http://{}/mcp", serving.addr));
    let transport = StreamableHttpClientTransport::with_client(reqwest::Client::new(), config);
    let client = ().serve(transport).await.unwrap();
    let tools = client.list_all_tools().await.unwrap();
    let ask = tools.iter().find(|t| t.name == "ask").unwrap();
    assert!(ask.input_schema["properties"]["image"].is_object());
    for (words, photo, who) in [
        ("this didn't scan", receipt_photo(), "support"),
        ("any deals?", baton_testkit::pictures::large_photo(), "shop"),
    ] {
        let arguments = json!({
            "message": words,
            "image": {"data": STANDARD.encode(&photo), "mimeType": "image/jpeg"}
        });
        let result = client
            .call_tool(
                CallToolRequestParams::new("ask")
                    .with_arguments(arguments.as_object().unwrap().clone()),
            )
            .await
            .unwrap();
        assert_eq!(result.is_error, Some(false), "{result:?}");
        let structured = result.structured_content.unwrap();
        assert_eq!(structured["consulted"][0]["agent_id"], who, "{structured}");
        assert_no_secret(structured.to_string().as_bytes(), "the tool's result");
    }
    // A picture whose declared type its bytes contradict is refused as invalid params.
    let lying = json!({
        "message": "and this?",
        "image": {"data": STANDARD.encode(receipt_photo()), "mimeType": "image/png"}
    });
    let refused = client
        .call_tool(
            CallToolRequestParams::new("ask").with_arguments(lying.as_object().unwrap().clone()),
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(
        refused.contains("declared as image/png but its bytes are image/jpeg"),
        "{refused}"
    );
    client.cancel().await.unwrap();
    assert_data_dir_clean(&sandbox);
}

/// A native turn body with `pictures` (base64, as documented).
fn turn_body(message: &str, pictures: &[(&str, &[u8])]) -> String {
    let pictures: Vec<Value> = pictures
        .iter()
        .map(
            |(media_type, bytes)| json!({"media_type": media_type, "data": STANDARD.encode(bytes)}),
        )
        .collect();
    json!({"message": message, "pictures": pictures}).to_string()
}

/// Posts a turn as `principal` as a client that goes on writing after the server has
/// answered (a refusal of a body too large comes before the body is read).
fn send_refusable(serving: &Serving, principal: &str, body: &str) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(&serving.addr).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    let head = format!(
        "POST /v1/turns HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
         x-baton-principal: {principal}\r\nConnection: close\r\nContent-Length: {}\r\n\r\n",
        serving.addr,
        body.len()
    );
    let mut writer = stream.try_clone().unwrap();
    let body = format!("{head}{body}").into_bytes();
    let writing = std::thread::spawn(move || {
        // The server may close once it has refused: the rest of the body is not wanted.
        let _ = writer.write_all(&body);
    });
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    let _ = writing.join();
    String::from_utf8_lossy(&response).into_owned()
}

fn status(response: &str) -> u16 {
    response
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

#[test]
fn the_native_body_takes_pictures_and_hostile_ones_are_refused_plainly() {
    let sandbox = Sandbox::new();
    let serving = serve(&sandbox);
    let response = serving.turn(
        "alice",
        &turn_body("this didn't scan", &[("image/jpeg", &receipt_photo())]),
    );
    assert_eq!(status(&response), 200, "{response}");
    assert_no_secret(response.as_bytes(), "the event stream");
    let events = sse_events(&response);
    let consulted = events
        .iter()
        .find(|e| e["type"] == "agents_consulted")
        .unwrap_or_else(|| panic!("{events:#?}"));
    assert_eq!(
        consulted["agents"][0]["agent_id"], "support",
        "{consulted:#}"
    );
    // A large photo: a body far over the 64 KiB of one without pictures.
    let large = baton_testkit::pictures::large_photo();
    let response = serving.turn("alice", &turn_body("any deals?", &[("image/jpeg", &large)]));
    assert_eq!(
        status(&response),
        200,
        "{}",
        &response[..response.len().min(2_000)]
    );
    assert!(
        response.contains("\"completed\""),
        "the turn did not finish"
    );
    let stored = stored_pictures(&sandbox);
    assert_eq!(stored, 2, "the receipt and the photo are stored once each");

    let gif = hostile::gif_of_frames(10_000);
    let cases: Vec<(&str, String, u16, &str)> = vec![
        (
            "a truncated JPEG",
            turn_body("", &[("image/jpeg", &hostile::truncated_jpeg())]),
            400,
            "damaged or cut short",
        ),
        (
            "a PNG bomb",
            turn_body("", &[("image/png", &hostile::png_bomb())]),
            413,
            "100000×100000 pixels; the limit is 25000000 pixels",
        ),
        (
            "a JPEG declared as a PNG",
            turn_body("", &[("image/png", &receipt_photo())]),
            400,
            "declared as image/png but its bytes are image/jpeg",
        ),
        (
            "five pictures",
            turn_body("", &[("image/jpeg", &receipt_photo()[..]); 5]),
            413,
            "a turn takes at most 4 pictures",
        ),
        (
            "a 50 MB upload",
            turn_body("", &[("image/jpeg", &vec![0xFF; 50_000_000])]),
            413,
            "larger than the limit",
        ),
        (
            "not a picture",
            turn_body("", &[("", b"%PDF-1.7 a document")]),
            400,
            "not a picture Baton takes",
        ),
    ];
    for (what, body, code, says) in cases {
        let response = send_refusable(&serving, "mallory", &body);
        assert_eq!(status(&response), code, "{what}: {response}");
        assert!(response.contains(says), "{what}: {response}");
    }
    // A GIF of 10,000 frames is taken as its first frame, bounded, not refused.
    let response = serving.turn("alice", &turn_body("", &[("image/gif", &gif)]));
    assert_eq!(status(&response), 200, "{response}");
    // Nothing of the refused ones was stored, and the server still answers.
    assert_eq!(stored_pictures(&sandbox), stored + 1);
    let health = serving.request("GET /healthz HTTP/1.1", "");
    assert_eq!(status(&health), 200, "{health}");
    // The resume route takes words only.
    let refused = serving.request(
        "POST /v1/turns/t-1/resume HTTP/1.1\r\nContent-Type: application/json\r\nx-baton-principal: alice",
        &turn_body("", &[("image/jpeg", &receipt_photo())]),
    );
    assert_eq!(status(&refused), 400, "{refused}");
    assert!(refused.contains("unknown field"), "{refused}");
    assert_data_dir_clean(&sandbox);
}

/// A photo turn whose server is killed (SIGKILL) mid-run: after a restart the same id with
/// another photo is another request and is refused; sent again as it was, it runs again on
/// its episode; the photo, committed by the next turn, is stored once and stripped.
#[test]
fn a_photo_turn_killed_mid_run_is_the_same_turn_after_a_restart_and_its_photo_stored_once() {
    use std::io::Write as _;
    use std::time::Duration;

    use crate::adversaries::{connect, read_head};

    let sandbox = Sandbox::new();
    let model = sandbox.script(
        r#"
agents:
  orchestrator:
    - when: { purpose: route }
      tool_calls: [{ name: ask_support, args: { query: "a receipt that did not scan", intent_count: 1, pictures: [1] } }]
    - when: { purpose: compose, user_contains: slowly }
      delay_ms: 600000
      text: ["Never sent."]
    - when: { purpose: compose }
      text: ["Support is looking at your receipt."]
  support:
    - text: ["Support is looking at your receipt."]
"#,
    );
    let args = ["--registry", registry(), "--model", &model];
    let photo = receipt_photo();
    let with_id = |message: &str, photo: &[u8]| {
        let mut body: Value =
            serde_json::from_str(&turn_body(message, &[("image/jpeg", photo)])).unwrap();
        body["turn_id"] = json!("t-photo");
        body.to_string()
    };
    let slow = with_id("this didn't scan, slowly", &photo);
    // Starts the slow turn and returns its response head (the turn goes on).
    let start_slow = |serving: &Serving| {
        let mut stream = connect(&serving.addr, Duration::from_secs(30));
        write!(
            stream,
            "POST /v1/turns HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{slow}",
            slow.len()
        )
        .unwrap();
        read_head(&mut stream)
    };

    let first = Serving::start(&sandbox, &args, &[]);
    let head = start_slow(&first);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let episode = header(&head, "x-baton-episode-id").unwrap().to_owned();
    first.kill();

    let second = Serving::start(&sandbox, &args, &[]);
    let other = second.turn(
        "local-user",
        &with_id("this didn't scan, slowly", &product_photo()),
    );
    assert_eq!(status(&other), 422, "{other}");
    let head = start_slow(&second);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert_eq!(header(&head, "x-baton-episode-id"), Some(episode.as_str()));
    second.kill();

    let third = Serving::start(&sandbox, &args, &[]);
    let next = json!({
        "message": "this didn't scan",
        "episode_id": episode,
        "pictures": [{"media_type": "image/jpeg", "data": STANDARD.encode(&photo)}],
    });
    let done = third.turn("local-user", &next.to_string());
    assert!(done.contains("\"completed\""), "{done}");
    assert_eq!(stored_pictures(&sandbox), 1, "the photo is stored once");
    assert_data_dir_clean(&sandbox);
}
