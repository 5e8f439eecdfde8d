//! Pictures in the web console (D-42): one chosen with the file picker goes with the
//! message and shows in the conversation; pasted and dropped ones join it; what cannot be
//! sent is refused in the page, in plain words, before anything is sent; what the server
//! refuses is shown, and the pictures come back to the composer.

use super::*;

/// The demo receipt photo shipped beside the registry (with its made-up GPS tags).
fn receipt_path() -> String {
    baton_tests::fixtures::repo_root()
        .join("shared/registry/pictures/receipt.jpg")
        .to_str()
        .unwrap()
        .to_owned()
}

/// How many pictures wait in the composer, and whether each thumbnail has loaded.
async fn pending(client: &Client) -> Value {
    eval(
        client,
        "[...document.querySelectorAll('#attachments .attachment')].map((a) => ({ \
            type: a.dataset.mediaType, \
            alt: a.querySelector('img').alt, \
            loaded: a.querySelector('img').complete && a.querySelector('img').naturalWidth > 0, \
            remove: a.querySelector('.attachment-remove').getAttribute('aria-label') }))",
        Vec::new(),
    )
    .await
}

/// The pictures in turn `index`'s user bubble: alt text, whether each loaded, and where it
/// comes from (`blob` or the address path).
async fn sent_pictures(client: &Client, index: usize) -> Value {
    eval(
        client,
        "[...document.querySelectorAll('.turn')[arguments[0]].querySelectorAll('.user img')].map((i) => ({ \
            alt: i.alt, \
            loaded: i.complete && i.naturalWidth > 0, \
            width: i.naturalWidth, \
            from: i.src.startsWith('blob:') ? 'blob' : new URL(i.src).pathname }))",
        vec![json!(index)],
    )
    .await
}

/// The composer's refusal line, or null when it shows none.
async fn attach_error(client: &Client) -> Value {
    eval(
        client,
        "(() => { const e = document.getElementById('attach-error'); return e.hidden ? null : e.textContent; })()",
        Vec::new(),
    )
    .await
}

/// Runs `body` in the page as the body of an `async` function and returns what it resolves
/// to (WebDriver waits for a promise a script returns).
async fn run(client: &Client, body: &str) -> Value {
    eval(client, &format!("(async () => {{ {body} }})()"), Vec::new()).await
}

/// Script that makes a picture file in the page: a `w`×`h` canvas of one colour, as
/// `type`, named `name` (an `async` body: it resolves to the File).
const CANVAS_FILE: &str = "const canvas = document.createElement('canvas'); \
    canvas.width = w; canvas.height = h; \
    const g = canvas.getContext('2d'); g.fillStyle = colour; g.fillRect(0, 0, w, h); \
    const blob = await new Promise((ok) => canvas.toBlob(ok, type)); \
    return new File([blob], name, { type });";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_picture_chosen_with_the_file_picker_goes_with_the_message_and_shows_in_the_conversation()
{
    with_console(|client, served| async move {
        open_console(&client, &served).await;
        let input = client.find(Locator::Css("#picture-input")).await.unwrap();
        input.send_keys(&receipt_path()).await.unwrap();
        until(
            &client,
            "the receipt's thumbnail in the composer",
            "(() => { const i = document.querySelector('#attachments .attachment img'); \
              return i && i.complete && i.naturalWidth > 0; })()",
        )
        .await;
        assert_eq!(
            pending(&client).await,
            json!([{
                "type": "image/jpeg",
                "alt": "Picture to send: receipt.jpg, 41 KB",
                "loaded": true,
                "remove": "Remove receipt.jpg",
            }])
        );
        assert_eq!(attach_error(&client).await, Value::Null);

        type_and_send(&client, "this didn't scan").await;
        let state = turn_finished(&client, 1).await;
        let view = turn_view(&client, 0).await;
        assert_eq!(state, "completed", "{view:#}");
        assert_eq!(view["errors"], json!([]), "{view:#}");
        assert!(
            !str_field(&view, "answer").trim().is_empty(),
            "no answer text: {view:#}"
        );
        // Support was consulted, as the runtime's record says.
        let pills: Vec<&str> = view["pills"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["agent"].as_str().unwrap_or_default())
            .collect();
        assert!(pills.contains(&"support"), "{view:#}");
        // The receipt says what the photo carried that was taken out.
        let receipt = str_field(&view, "receipt");
        assert!(
            receipt.contains("removed from your pictures: ") && receipt.contains("location (GPS)"),
            "{receipt}"
        );

        // The user's bubble shows the photo beside the words.
        until(
            &client,
            "the photo in the user's bubble",
            "(() => { const i = document.querySelector('.turn .user img'); \
              return i && i.complete && i.naturalWidth > 0; })()",
        )
        .await;
        assert_eq!(
            sent_pictures(&client, 0).await,
            json!([{ "alt": "Your picture receipt.jpg", "loaded": true, "width": 360, "from": "blob" }])
        );
        let said = eval(
            &client,
            "document.querySelector('.turn .user-text').textContent",
            Vec::new(),
        )
        .await;
        assert_eq!(said, "this didn't scan");
        // The composer is empty again.
        assert_eq!(pending(&client).await, json!([]));
        let list_hidden = eval(
            &client,
            "document.getElementById('attachments').hidden",
            Vec::new(),
        )
        .await;
        assert_eq!(list_hidden, json!(true));

        // The server kept the picture for this turn.
        let episode = eval(
            &client,
            "document.getElementById('episode').dataset.episode",
            Vec::new(),
        )
        .await;
        let episode = episode.as_str().unwrap().to_owned();
        let (status, history) = served.get_json(&format!("/v1/episodes/{episode}"));
        assert!(status.contains(" 200 "), "{status}: {history}");
        assert_eq!(history["turns"][0]["user_text"], "this didn't scan");
        let sha = history["turns"][0]["pictures"][0]["sha256"]
            .as_str()
            .unwrap_or_else(|| panic!("the episode names its picture: {history}"))
            .to_owned();

        // A reload draws the conversation again with its picture, read back from the store.
        client.refresh().await.unwrap();
        until(
            &client,
            "the conversation drawn again",
            "document.body.dataset.restored === '1'",
        )
        .await;
        until(
            &client,
            "the stored photo in the user's bubble",
            "(() => { const i = document.querySelector('.turn .user img'); \
              return i && i.complete && i.naturalWidth > 0; })()",
        )
        .await;
        assert_eq!(
            sent_pictures(&client, 0).await,
            json!([{
                "alt": "Your picture (JPEG, 360 × 900)",
                "loaded": true,
                "width": 360,
                "from": format!("/v1/episodes/{episode}/pictures/{sha}")
            }])
        );

        if let Some(path) = screenshot_path() {
            let path = path.with_file_name("console-picture.png");
            std::fs::write(&path, client.screenshot().await.unwrap()).unwrap();
            eprintln!("screenshot: {}", path.display());
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pictures_are_pasted_dropped_removed_and_refused_in_plain_words_before_sending() {
    with_console(|client, served| async move {
        open_console(&client, &served).await;

        // A file that is not a picture, and a picture over 10 MB: refused in the page.
        let refused = run(
            &client,
                "const dt = new DataTransfer(); \
                 dt.items.add(new File(['a shopping list'], 'notes.txt', { type: 'text/plain' })); \
                 dt.items.add(new File([new Uint8Array(12 * 1024 * 1024)], 'huge.jpg', { type: 'image/jpeg' })); \
                 dt.items.add(new File(['<svg/>'], 'logo.png', { type: 'image/png' })); \
                 const input = document.getElementById('picture-input'); \
                 input.files = dt.files; \
                 input.dispatchEvent(new Event('change')); \
                 await window.batonConsole.addFiles([]); \
                 return document.getElementById('attach-error').textContent;",
            )
            .await;
        let refused = refused.as_str().unwrap_or_default();
        for words in [
            "notes.txt is not a picture: send a JPEG, PNG, WebP or GIF.",
            "huge.jpg is 12 MB; a picture may be at most 10 MB.",
            "logo.png is not a picture Baton takes: send a JPEG, PNG, WebP or GIF.",
        ] {
            assert!(refused.contains(words), "{words:?} in {refused:?}");
        }
        assert_eq!(pending(&client).await, json!([]));
        let role = eval(
            &client,
            "document.getElementById('attach-error').getAttribute('role')",
            Vec::new(),
        )
        .await;
        assert_eq!(role, "alert");

        // One pasted into the message box, one dropped on the page.
        let added = run(
            &client,
                &format!(
                    "const make = async (w, h, colour, type, name) => {{ {CANVAS_FILE} }}; \
                     const pasted = new DataTransfer(); \
                     pasted.items.add(await make(40, 30, '#c81e28', 'image/png', 'image.png')); \
                     document.getElementById('message').dispatchEvent(new ClipboardEvent('paste', \
                       {{ clipboardData: pasted, bubbles: true, cancelable: true }})); \
                     await window.batonConsole.addFiles([]); \
                     const dropped = new DataTransfer(); \
                     dropped.items.add(await make(50, 20, '#2850aa', 'image/jpeg', 'shelf.jpg')); \
                     document.querySelector('.log').dispatchEvent(new DragEvent('drop', \
                       {{ dataTransfer: dropped, bubbles: true, cancelable: true }})); \
                     await window.batonConsole.addFiles([]); \
                     return document.querySelectorAll('#attachments .attachment').length;"
                ),
            )
            .await;
        assert_eq!(added, json!(2));
        until(
            &client,
            "both thumbnails loaded",
            "[...document.querySelectorAll('#attachments img')].every((i) => i.complete && i.naturalWidth > 0)",
        )
        .await;
        let shown = pending(&client).await;
        assert_eq!(shown[0]["type"], "image/png", "{shown:#}");
        assert_eq!(shown[0]["remove"], "Remove image.png", "{shown:#}");
        assert_eq!(shown[1]["type"], "image/jpeg", "{shown:#}");
        // A successful attach clears the earlier refusal.
        assert_eq!(attach_error(&client).await, Value::Null);

        // Five more than fit: four in all, and the rest named.
        let over = run(
            &client,
                &format!(
                    "const make = async (w, h, colour, type, name) => {{ {CANVAS_FILE} }}; \
                     const files = []; \
                     for (const n of [1, 2, 3]) files.push(await make(10, 10, '#336633', 'image/png', `extra${{n}}.png`)); \
                     await window.batonConsole.addFiles(files); \
                     return document.getElementById('attach-error').textContent;"
                ),
            )
            .await;
        assert_eq!(
            over,
            "extra3.png was not added: a message takes at most 4 pictures."
        );
        assert_eq!(pending(&client).await.as_array().unwrap().len(), 4);
        if let Some(path) = screenshot_path() {
            let path = path.with_file_name("console-pictures-pending.png");
            std::fs::write(&path, client.screenshot().await.unwrap()).unwrap();
            eprintln!("screenshot: {}", path.display());
        }

        // Remove, by keyboard: focus moves to the next Remove button.
        for _ in 0..3 {
            let remove = client
                .find(Locator::Css("#attachments .attachment:last-child .attachment-remove"))
                .await
                .unwrap();
            remove.send_keys(&Key::Enter.to_string()).await.unwrap();
        }
        let focused = eval(
            &client,
            "document.activeElement.getAttribute('aria-label')",
            Vec::new(),
        )
        .await;
        assert_eq!(focused, "Remove image.png");
        let left = pending(&client).await;
        assert_eq!(left.as_array().unwrap().len(), 1, "{left:#}");

        // A picture with no words: the turn runs on the picture alone.
        client
            .find(Locator::Css("#send"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        let state = turn_finished(&client, 1).await;
        let view = turn_view(&client, 0).await;
        assert_eq!(state, "completed", "{view:#}");
        assert_eq!(view["errors"], json!([]), "{view:#}");
        until(
            &client,
            "the pasted picture in the user's bubble",
            "(() => { const i = document.querySelector('.turn .user img'); \
              return i && i.complete && i.naturalWidth > 0; })()",
        )
        .await;
        assert_eq!(
            sent_pictures(&client, 0).await,
            json!([{ "alt": "Your picture image.png", "loaded": true, "width": 40, "from": "blob" }])
        );

        // What the page cannot tell but the server can (a JPEG cut short after its
        // signature): the server's refusal shows in the turn, nothing runs, and the picture
        // and the words come back to the composer to be fixed.
        run(
            &client,
                "const bytes = new Uint8Array(64); bytes.set([0xff, 0xd8, 0xff, 0xe0]); \
                 await window.batonConsole.addFiles([new File([bytes], 'cut.jpg', { type: 'image/jpeg' })]); \
                 document.getElementById('message').value = 'and this one?';",
            )
            .await;
        client
            .find(Locator::Css("#send"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        let state = turn_finished(&client, 2).await;
        let view = turn_view(&client, 1).await;
        assert_eq!(state, "refused", "{view:#}");
        let errors = view["errors"].as_array().unwrap();
        assert_eq!(errors.len(), 1, "{view:#}");
        let error = errors[0].as_str().unwrap();
        assert!(
            error.contains("Picture 1") && !error.contains("HTTP 4"),
            "the server's own words: {error}"
        );
        let back = pending(&client).await;
        assert_eq!(back.as_array().unwrap().len(), 1, "{back:#}");
        assert_eq!(back[0]["alt"], "Picture to send: cut.jpg, 64 bytes");
        let message = client.find(Locator::Css("#message")).await.unwrap();
        assert_eq!(
            message.prop("value").await.unwrap().as_deref(),
            Some("and this one?")
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_megabytes_are_base64_encoded_in_the_page_as_the_browser_itself_does() {
    with_console(|client, served| async move {
        open_console(&client, &served).await;
        let same = run(
            &client,
                "const bytes = new Uint8Array(10 * 1024 * 1024); \
                 for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 31 + (i >> 9)) & 0xff; \
                 const ours = window.batonConsole.toBase64(bytes); \
                 const theirs = await new Promise((ok) => { \
                   const r = new FileReader(); \
                   r.onload = () => ok(r.result.slice(r.result.indexOf(',') + 1)); \
                   r.readAsDataURL(new Blob([bytes])); }); \
                 const short = [1, 2, 3, 4].map((n) => window.batonConsole.toBase64(bytes.subarray(0, n))); \
                 return { same: ours === theirs, length: ours.length, short };",
            )
            .await;
        assert_eq!(
            same,
            json!({
                "same": true,
                "length": (10 * 1024 * 1024usize).div_ceil(3) * 4,
                "short": ["AA==", "AB8=", "AB8+", "AB8+XQ=="],
            })
        );
    })
    .await;
}
