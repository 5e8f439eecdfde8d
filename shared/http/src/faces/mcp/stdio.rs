//! The stdio transport of `baton mcp`: newline-delimited JSON-RPC, with every line
//! answered. rmcp's own stdio transport drops a line it cannot read, silently; here each
//! line is checked first (`message::refusal`, as for an HTTP body): a line that is not
//! JSON gets a parse error (`id: null`), one that is not a client's message an invalid
//! request or invalid params (under its id when it has one), and one longer than the limit
//! an invalid request, its rest skipped. Valid lines go on to the server, and its lines and
//! these errors leave on stdout one whole line at a time.

use rmcp::ServiceExt as _;
use serde_json::json;
use tokio::io::{
    AsyncBufRead, AsyncBufReadExt as _, AsyncRead, AsyncWrite, AsyncWriteExt as _, BufReader,
};
use tokio::sync::mpsc;

use super::message;
use super::{McpServer, StdioError};

/// Room between the line checker, the server and the writer.
const PIPE_BYTES: usize = 64 * 1024;

/// Serves `server` over `input` and `output` (stdin and stdout) until `input` ends.
pub(crate) async fn serve_lines<R, W>(
    server: McpServer,
    input: R,
    output: W,
    max_line_bytes: usize,
) -> Result<(), StdioError>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (checked, server_in) = tokio::io::duplex(PIPE_BYTES);
    let (server_out, answers) = tokio::io::duplex(PIPE_BYTES);
    let (refusals, refused) = mpsc::channel::<String>(16);
    let writer = tokio::spawn(write_lines(answers, refused, output));
    tokio::spawn(check_lines(input, checked, refusals, max_line_bytes));
    let served = async {
        let running = server
            .serve((server_in, server_out))
            .await
            .map_err(|e| StdioError::Initialize(e.to_string()))?;
        running
            .waiting()
            .await
            .map_err(|e| StdioError::Stopped(e.to_string()))?;
        Ok(())
    }
    .await;
    // The server's output has ended with it: what is left goes out before the exit.
    let _ = writer.await;
    served
}

/// One line of input.
enum Line {
    /// Its text (without the newline), lossily decoded.
    Text(String),
    /// It was longer than the limit; its rest was skipped.
    TooLong,
}

/// The next line of `input`, at most `max` bytes kept; `None` at the end of input.
async fn next_line<R: AsyncBufRead + Unpin>(
    input: &mut R,
    max: usize,
) -> std::io::Result<Option<Line>> {
    let mut kept: Vec<u8> = Vec::new();
    let mut too_long = false;
    loop {
        let available = input.fill_buf().await?;
        if available.is_empty() {
            // The end of input ends a last line without its newline.
            return Ok((too_long || !kept.is_empty()).then(|| finished(kept, too_long)));
        }
        let (chunk, ended) = match available.iter().position(|b| *b == b'\n') {
            Some(at) => (&available[..at], Some(at + 1)),
            None => (available, None),
        };
        if !too_long && kept.len() + chunk.len() <= max {
            kept.extend_from_slice(chunk);
        } else {
            // Past the limit: nothing more is kept, and the line is read to its end.
            too_long = true;
            kept = Vec::new();
        }
        let used = ended.unwrap_or(available.len());
        input.consume(used);
        if ended.is_some() {
            return Ok(Some(finished(kept, too_long)));
        }
    }
}

fn finished(kept: Vec<u8>, too_long: bool) -> Line {
    if too_long {
        Line::TooLong
    } else {
        Line::Text(String::from_utf8_lossy(&kept).into_owned())
    }
}

/// Reads `input` a line at a time: valid messages go on to the server, the others are
/// refused.
async fn check_lines<R: AsyncRead + Unpin>(
    input: R,
    mut server: tokio::io::DuplexStream,
    refusals: mpsc::Sender<String>,
    max_line_bytes: usize,
) {
    let mut input = BufReader::new(input);
    loop {
        let refusal = match next_line(&mut input, max_line_bytes).await {
            Ok(None) => return, // Input ended: dropping `server` ends the server's too.
            Ok(Some(Line::Text(line))) if line.trim().is_empty() => continue,
            Ok(Some(Line::Text(line))) => match message::refusal(line.as_bytes()) {
                Some(refusal) => refusal,
                None => {
                    let sent = async {
                        server.write_all(line.as_bytes()).await?;
                        server.write_all(b"\n").await
                    };
                    if sent.await.is_err() {
                        return; // The server stopped.
                    }
                    continue;
                }
            },
            Ok(Some(Line::TooLong)) => json!({
                "jsonrpc": "2.0",
                "id": null,
                "error": {
                    "code": rmcp::model::ErrorCode::INVALID_REQUEST.0,
                    "message": format!("the message is longer than {max_line_bytes} bytes"),
                },
            }),
            Err(e) => {
                tracing::warn!(error = %e, "stdin could not be read");
                return;
            }
        };
        tracing::info!(%refusal, "a line that is not an MCP message was refused");
        if refusals.send(refusal.to_string()).await.is_err() {
            return;
        }
    }
}

/// Writes the server's lines and the refusals to `output`, each line whole.
async fn write_lines<W: AsyncWrite + Unpin>(
    answers: tokio::io::DuplexStream,
    mut refused: mpsc::Receiver<String>,
    mut output: W,
) {
    let mut answers = BufReader::new(answers).lines();
    let mut server_open = true;
    let mut refusals_open = true;
    while server_open || refusals_open {
        let line = tokio::select! {
            line = answers.next_line(), if server_open => match line {
                Ok(Some(line)) => line,
                _ => { server_open = false; continue; }
            },
            refusal = refused.recv(), if refusals_open => match refusal {
                Some(refusal) => refusal,
                None => { refusals_open = false; continue; }
            },
        };
        let written = async {
            output.write_all(line.as_bytes()).await?;
            output.write_all(b"\n").await?;
            output.flush().await
        };
        if written.await.is_err() {
            return; // The client stopped reading.
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn lines(input: &[u8], max: usize) -> Vec<Option<String>> {
        let mut input = input;
        let mut out = Vec::new();
        while let Some(line) = next_line(&mut input, max).await.unwrap() {
            out.push(match line {
                Line::Text(t) => Some(t),
                Line::TooLong => None,
            });
        }
        out
    }

    #[tokio::test]
    async fn a_line_past_the_limit_is_skipped_whole_and_the_next_one_read() {
        assert_eq!(
            lines(b"ab\n0123456789\ncd\nlast", 5).await,
            [
                Some("ab".into()),
                None,
                Some("cd".into()),
                Some("last".into())
            ]
        );
        assert_eq!(lines(b"12345\n", 5).await, [Some("12345".into())]);
        assert_eq!(lines(b"", 5).await, Vec::<Option<String>>::new());
    }
}
