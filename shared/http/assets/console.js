// The Baton console: one page that sends turns to POST /v1/turns and renders the event
// stream as it arrives. Plain JavaScript, no dependencies, no build step.
//
// Rule for everything below: text that comes from the server (answers, labels, status
// lines) is set with textContent, never parsed as HTML.
"use strict";

(() => {
  // The SVG namespace, read from the page's own empty <svg> (the HTML parser puts it in
  // that namespace), so that no address is written in this file.
  const SVG_NS = (document.getElementById("svg-namespace") || {}).namespaceURI || "";
  // Turns that draw a plan: their arrows follow the layout when the window changes.
  const planned = new Set();
  window.addEventListener("resize", () => {
    for (const turn of planned) turn.drawEdges();
  });
  // ---------------------------------------------------------------------------------
  // Server-Sent Events parser (the subset of the WHATWG rules a turn stream uses).
  // Chunks may split a frame, a line, or a CR LF pair anywhere; decoding bytes to text
  // (including a character split across chunks) is the caller's TextDecoder's job.
  // ---------------------------------------------------------------------------------
  class SseParser {
    constructor(onEvent) {
      this.onEvent = onEvent;
      this.buffer = "";
      this.lastId = null; // the last event id seen, which later events keep
      this.reset();
    }

    reset() {
      this.type = "";
      this.data = [];
    }

    push(text) {
      this.buffer += text;
      let start = 0;
      for (;;) {
        const cr = this.buffer.indexOf("\r", start);
        const lf = this.buffer.indexOf("\n", start);
        if (cr === -1 && lf === -1) break;
        let end;
        let next;
        if (cr !== -1 && (lf === -1 || cr < lf)) {
          // A CR at the very end may be the first half of CR LF: wait for more.
          if (cr === this.buffer.length - 1) break;
          end = cr;
          next = this.buffer[cr + 1] === "\n" ? cr + 2 : cr + 1;
        } else {
          end = lf;
          next = lf + 1;
        }
        this.line(this.buffer.slice(start, end));
        start = next;
      }
      this.buffer = this.buffer.slice(start);
    }

    // The stream ended: a last line without its terminator still counts, but an event
    // without its closing blank line is dropped, as the standard says.
    end() {
      if (this.buffer.length > 0) {
        const rest = this.buffer.replace(/\r$/, "");
        this.buffer = "";
        this.line(rest);
      }
      this.reset();
    }

    line(line) {
      if (line === "") {
        this.dispatch();
        return;
      }
      if (line.startsWith(":")) return; // a comment (keep-alive)
      const colon = line.indexOf(":");
      const field = colon === -1 ? line : line.slice(0, colon);
      let value = colon === -1 ? "" : line.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (field === "event") this.type = value;
      else if (field === "data") this.data.push(value);
      else if (field === "id" && !value.includes("\0")) this.lastId = value;
    }

    dispatch() {
      if (this.data.length > 0) {
        this.onEvent({ type: this.type || "message", data: this.data.join("\n"), id: this.lastId });
      }
      this.reset();
    }
  }

  // ---------------------------------------------------------------------------------
  // Small helpers.
  // ---------------------------------------------------------------------------------
  const $ = (id) => document.getElementById(id);

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function plural(n, one, many) {
    return `${n} ${n === 1 ? one : many || one + "s"}`;
  }

  function formatDuration(ms) {
    if (typeof ms !== "number" || !Number.isFinite(ms)) return "";
    return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
  }

  function formatCost(usd) {
    if (typeof usd !== "number" || !Number.isFinite(usd) || usd <= 0) return "$0.00";
    if (usd < 0.0001) return "< $0.0001";
    if (usd < 0.01) return `$${usd.toFixed(4)}`;
    if (usd < 1) return `$${usd.toFixed(3)}`;
    return `$${usd.toFixed(2)}`;
  }

  const KIND_NAMES = {
    email: ["email address", "email addresses"],
    phone: ["phone number", "phone numbers"],
    card_number: ["card number", "card numbers"],
    iban: ["IBAN", "IBANs"],
    national_id: ["national id", "national ids"],
  };

  // What a picture carried besides its pixels, as the server names each kind (D-42).
  const HIDDEN_NAMES = {
    location: "location (GPS)",
    device: "camera or phone model",
    owner: "owner's name",
    taken_at: "time taken",
    camera_data: "camera data",
    xmp: "XMP metadata",
    iptc: "IPTC metadata",
    comment: "comments",
    appended: "data appended to the picture",
    frames: "animation frames after the first",
    other: "other metadata",
  };

  function receiptText(privacy) {
    const total = privacy && typeof privacy.total === "number" ? privacy.total : 0;
    let text = "Privacy: nothing masked";
    if (total > 0) {
      const parts = Object.entries((privacy && privacy.by_kind) || {})
        .filter(([, n]) => n > 0)
        .map(([kind, n]) => {
          const names = KIND_NAMES[kind] || [kind.replace(/_/g, " "), kind.replace(/_/g, " ") + "s"];
          return plural(n, names[0], names[1]);
        });
      text = `Privacy: ${plural(total, "value")} masked: ${parts.join(", ")}`;
    }
    const removed = Object.entries((privacy && privacy.pictures) || {})
      .filter(([, n]) => n > 0)
      .map(([kind]) => HIDDEN_NAMES[kind] || kind.replace(/_/g, " "));
    if (removed.length > 0) text += `; removed from your pictures: ${removed.join(", ")}`;
    return text;
  }

  // ---------------------------------------------------------------------------------
  // Pictures (D-42): read in the page, checked for what the server would refuse anyway,
  // and sent as base64 in the turn's body. The server decides what a picture is from its
  // bytes, so the type sent is the one the bytes say, never the file's name.
  // ---------------------------------------------------------------------------------
  const MAX_PICTURES = 4;
  const MAX_PICTURE_BYTES = 10 * 1024 * 1024;

  function formatSize(bytes) {
    if (bytes < 1024) return `${bytes} bytes`;
    if (bytes < 1024 * 1024) return `${Math.round(bytes / 1024)} KB`;
    return `${(bytes / (1024 * 1024)).toFixed(1).replace(/\.0$/, "")} MB`;
  }

  // The picture type its first bytes say, or null for anything else.
  function sniff(bytes) {
    const starts = (offset, ...values) => values.every((v, i) => bytes[offset + i] === v);
    if (starts(0, 0xff, 0xd8, 0xff)) return "image/jpeg";
    if (starts(0, 0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a)) return "image/png";
    if (starts(0, 0x47, 0x49, 0x46, 0x38) && (bytes[4] === 0x37 || bytes[4] === 0x39) && bytes[5] === 0x61) {
      return "image/gif";
    }
    if (starts(0, 0x52, 0x49, 0x46, 0x46) && starts(8, 0x57, 0x45, 0x42, 0x50)) return "image/webp";
    return null;
  }

  // Standard base64 of `bytes`, a chunk at a time: one String.fromCharCode over ten
  // megabytes would pass that many arguments and overflow the stack. Each chunk is a
  // multiple of three bytes, so the pieces join without padding in between.
  function toBase64(bytes) {
    const CHUNK = 3 * 8192;
    const pieces = [];
    for (let i = 0; i < bytes.length; i += CHUNK) {
      pieces.push(btoa(String.fromCharCode.apply(null, bytes.subarray(i, i + CHUNK))));
    }
    return pieces.join("");
  }

  function pictureName(file) {
    return file.name || "The pasted picture";
  }

  // A file as a picture to send, or the reason it cannot be one, in plain words.
  async function readPicture(file) {
    const name = pictureName(file);
    if (file.type && !file.type.startsWith("image/")) {
      return { refused: `${name} is not a picture: send a JPEG, PNG, WebP or GIF.` };
    }
    if (file.size > MAX_PICTURE_BYTES) {
      return {
        refused: `${name} is ${formatSize(file.size)}; a picture may be at most ${formatSize(MAX_PICTURE_BYTES)}.`,
      };
    }
    if (file.size === 0) return { refused: `${name} is empty.` };
    let bytes;
    try {
      bytes = new Uint8Array(await file.arrayBuffer());
    } catch (_) {
      return { refused: `${name} could not be read.` };
    }
    const mediaType = sniff(bytes);
    if (!mediaType) {
      return { refused: `${name} is not a picture Baton takes: send a JPEG, PNG, WebP or GIF.` };
    }
    return {
      picture: {
        name: file.name || "",
        size: bytes.length,
        media_type: mediaType,
        data: toBase64(bytes),
        blob: file,
      },
    };
  }

  // ---------------------------------------------------------------------------------
  // Page state.
  // ---------------------------------------------------------------------------------
  const state = {
    episodeId: null,
    assistant: { id: "", label: "Assistant" },
    directLine: { enabled: false, prefix: "#", exit: "end", sticky: false, mode: "strict" },
    labels: new Map(),
    busy: false,
    abort: null,
    // Pictures waiting in the composer: {name, size, media_type, data, blob, url}.
    pictures: [],
    // Files being read; sending waits for them.
    reading: Promise.resolve(),
    // Object URLs the conversation shows, freed when it is cleared.
    shown: [],
  };

  function labelOf(agentId) {
    return state.labels.get(agentId) || agentId;
  }

  function exitDirective() {
    return `${state.directLine.prefix}${state.directLine.exit}`;
  }

  function setEpisode(id) {
    state.episodeId = id || null;
    // The conversation is in the address, so a reload (or a bookmark) finds it again.
    const here = state.episodeId ? `#${encodeURIComponent(state.episodeId)}` : window.location.pathname;
    if (window.location.hash !== (state.episodeId ? here : "")) {
      window.history.replaceState(null, "", here);
    }
    const node = $("episode");
    node.dataset.episode = state.episodeId || "";
    node.textContent = state.episodeId ? `Conversation ${state.episodeId.slice(0, 8)}` : "";
    node.title = state.episodeId || "";
    node.hidden = !state.episodeId;
  }

  function setSticky(agentId, label) {
    const banner = $("sticky");
    if (!agentId) {
      banner.hidden = true;
      banner.dataset.agent = "";
      return;
    }
    banner.dataset.agent = agentId;
    $("sticky-text").textContent =
      `Talking directly with ${label || labelOf(agentId)} — type ${exitDirective()} to leave`;
    banner.hidden = false;
  }

  function setBusy(busy) {
    state.busy = busy;
    $("send").disabled = busy;
    $("send").textContent = busy ? "Answering…" : "Send";
    document.body.dataset.busy = busy ? "true" : "false";
  }

  // ---------------------------------------------------------------------------------
  // One turn in the log: the user's message and everything the stream says about it.
  // ---------------------------------------------------------------------------------
  class Turn {
    // `pictures`: what the user sent beside the message, each {src, alt, href}.
    constructor(message, pictures = []) {
      this.root = el("li", "turn");
      this.root.dataset.state = "streaming";
      this.root.setAttribute("aria-busy", "true");
      this.directLine = null;
      this.toolRows = new Map();
      this.segment = null;
      this.noteText = null;

      const user = el("div", "user");
      const said = el("div", "user-body");
      if (pictures.length > 0) {
        const list = el("ul", "user-pictures");
        list.setAttribute("aria-label", pictures.length === 1 ? "Your picture" : "Your pictures");
        for (const p of pictures) {
          const item = el("li", "user-picture");
          const link = el("a", "user-picture-link");
          link.href = p.href || p.src;
          link.target = "_blank";
          link.rel = "noopener";
          const img = el("img", "thumbnail");
          img.src = p.src;
          img.alt = p.alt;
          img.decoding = "async";
          link.append(img);
          item.append(link);
          list.append(item);
        }
        said.append(list);
        user.dataset.pictures = String(pictures.length);
      }
      said.append(el("p", "user-text", message));
      user.append(el("span", "who", "You"), said);

      this.assistant = el("section", "assistant");
      this.assistant.setAttribute("aria-label", `${state.assistant.label}'s answer`);
      this.banner = el("p", "direct-banner");
      this.banner.hidden = true;
      this.statuses = el("ul", "statuses");
      this.tools = el("details", "tools");
      this.tools.hidden = true;
      this.toolsSummary = el("summary", "", "Tool calls");
      this.toolList = el("ul", "tool-list");
      this.tools.append(this.toolsSummary, this.toolList);
      this.answer = el("div", "answer");
      this.delegated = el("div", "delegated-list");
      this.notes = el("div", "notes");
      this.errors = el("div", "errors");

      this.meta = el("footer", "turn-meta");
      this.pills = el("ul", "pills");
      this.pills.setAttribute("aria-label", "Specialists consulted");
      this.receipt = el("span", "receipt");
      this.receipt.hidden = true;
      this.cost = el("span", "cost");
      this.cost.hidden = true;
      this.meta.append(el("span", "meta-label", "Consulted"), this.pills, this.receipt, this.cost);
      this.meta.hidden = true;

      const who = el("span", "who", state.assistant.label);
      this.assistant.append(
        who,
        this.banner,
        this.statuses,
        this.tools,
        this.answer,
        this.delegated,
        this.notes,
        this.errors,
        this.meta,
      );
      this.root.append(user, this.assistant);
    }

    handle(event) {
      switch (event.type) {
        case "thinking":
          this.status("Thinking…", []);
          break;
        case "response_id":
          this.root.dataset.turnId = event.response_id || "";
          if (event.episode_id) setEpisode(event.episode_id);
          break;
        case "text":
          this.text(event.source, event.text);
          break;
        case "status":
          this.status(event.message, event.codes || []);
          break;
        case "tool_call_start":
        case "tool_result":
        case "tool_call_end":
          this.tool(event);
          break;
        case "plan":
          this.plan(event.nodes || []);
          break;
        case "node_start":
          this.nodeState(event.node, "running", "working…");
          break;
        case "node_end":
          this.nodeEnd(event);
          break;
        case "direct_line":
          this.direct(event);
          break;
        case "delegated_text":
          this.delegatedText(event);
          break;
        case "delegated_answer":
          this.delegatedAnswer(event);
          break;
        case "agents_consulted":
          this.consulted(event.agents || [], event.footer, event.memories);
          break;
        case "usage":
          this.usage(event);
          break;
        case "error":
          this.error(event.message);
          break;
        case "interruption":
          this.interruption(event);
          break;
        case "completed":
          this.completed(event);
          break;
        default:
          // Reasoning and future events are not part of the answer.
          break;
      }
    }

    text(source, text) {
      if (typeof text !== "string" || text === "") return;
      if (source === "note") {
        this.note(text);
        return;
      }
      this.settleStatuses();
      const from = source || "orchestrator";
      if (!this.segment || this.segment.dataset.source !== from) {
        this.segment = el("span", "segment");
        this.segment.dataset.source = from;
        this.answer.append(this.segment);
      }
      this.segment.textContent += text;
    }

    note(text) {
      if (!this.noteText) {
        const block = el("aside", "note");
        block.append(el("p", "note-title", `▸ Note from ${state.assistant.label}`));
        this.noteText = el("p", "note-text");
        block.append(this.noteText);
        this.notes.append(block);
      }
      this.noteText.textContent += text;
    }

    status(message, codes) {
      if (!message) return;
      this.settleStatuses();
      const line = el("li", "status current", message);
      line.dataset.codes = codes.join(" ");
      this.statuses.append(line);
    }

    settleStatuses() {
      for (const line of this.statuses.querySelectorAll(".status.current")) {
        line.classList.remove("current");
      }
    }

    tool(event) {
      const id = event.call_id || `${event.agent}:${event.tool}`;
      let row = this.toolRows.get(id);
      if (!row) {
        row = el("li", "tool");
        row.dataset.agent = event.agent || "";
        row.dataset.tool = event.tool || "";
        row.append(el("span", "tool-name", `${labelOf(event.agent)} · ${event.tool}`), el("span", "tool-state", "running"));
        this.toolRows.set(id, row);
        this.toolList.append(row);
        this.tools.hidden = false;
        this.toolsSummary.textContent = `Tool calls (${this.toolRows.size})`;
      }
      const stateNode = row.querySelector(".tool-state");
      if (event.type === "tool_result") {
        row.dataset.status = event.status || "";
        stateNode.textContent = event.status || "";
      } else if (event.type === "tool_call_end") {
        const status = row.dataset.status || "done";
        stateNode.textContent = `${status} · ${formatDuration(event.duration_ms)}`;
      }
    }

    // A planner's plan: one column per wave, one box per sub-agent, an arrow from each
    // dependency to its dependent. Later steps add nodes; a resumed turn announces the
    // same nodes again, which are kept once.
    plan(nodes) {
      if (!this.graph) {
        this.graph = el("figure", "plan");
        this.graph.setAttribute("aria-label", "Plan");
        this.graph.append(el("figcaption", "plan-title", "Plan"));
        this.edges = document.createElementNS(SVG_NS, "svg");
        this.edges.setAttribute("class", "plan-edges");
        this.edges.setAttribute("aria-hidden", "true");
        this.waves = el("ol", "plan-waves");
        this.graph.append(this.edges, this.waves);
        this.assistant.insertBefore(this.graph, this.tools);
        this.nodes = new Map();
        this.deps = [];
        planned.add(this);
      }
      for (const n of nodes) {
        if (!n || typeof n.id !== "string" || this.nodes.has(n.id)) continue;
        const box = el("li", "plan-node");
        box.dataset.node = n.id;
        box.dataset.state = "waiting";
        box.append(
          el("span", "node-id", n.id),
          el("span", "node-mission", n.mission || ""),
          el("span", "node-skills", (n.skills || []).join(", ")),
          el("span", "node-state", "waiting"),
        );
        this.waveColumn(Number(n.wave) || 1).append(box);
        this.nodes.set(n.id, box);
        for (const d of n.depends_on || []) this.deps.push([String(d), n.id]);
      }
      this.drawEdges();
    }

    // The column of one wave, made on first use and kept in wave order.
    waveColumn(wave) {
      let column = this.waves.querySelector(`:scope > [data-wave="${wave}"]`);
      if (!column) {
        column = el("li", "wave");
        column.dataset.wave = String(wave);
        column.append(el("span", "wave-title", `Wave ${wave}`), el("ol", "wave-nodes"));
        const later = Array.from(this.waves.children).find((c) => Number(c.dataset.wave) > wave);
        this.waves.insertBefore(column, later || null);
      }
      return column.querySelector(".wave-nodes");
    }

    nodeState(id, state, words) {
      const box = this.nodes && this.nodes.get(id);
      if (!box) return;
      box.dataset.state = state;
      box.querySelector(".node-state").textContent = words;
      // The box's size may have changed with its words.
      this.drawEdges();
    }

    nodeEnd(event) {
      const status = event.status || "failed";
      const words = event.reason
        ? event.reason
        : `${status} · ${formatDuration(event.duration_ms)} · ${plural(event.tool_calls || 0, "tool call")}`;
      this.nodeState(event.node, status, words);
      const box = this.nodes && this.nodes.get(event.node);
      if (box) {
        box.dataset.durationMs = String(event.duration_ms ?? "");
        box.dataset.toolCalls = String(event.tool_calls ?? "");
      }
    }

    // Arrows between boxes, from where the boxes are laid out now.
    drawEdges() {
      if (!this.graph) return;
      requestAnimationFrame(() => {
        const frame = this.graph.getBoundingClientRect();
        this.edges.setAttribute("width", String(frame.width));
        this.edges.setAttribute("height", String(frame.height));
        this.edges.textContent = "";
        // An arrowhead at the dependent's end of every line.
        const defs = document.createElementNS(SVG_NS, "defs");
        const marker = document.createElementNS(SVG_NS, "marker");
        const markerId = `arrow-${this.root.dataset.turnId || "turn"}`;
        for (const [k, v] of [["id", markerId], ["viewBox", "0 0 10 10"], ["refX", "10"], ["refY", "5"],
          ["markerWidth", "7"], ["markerHeight", "7"], ["orient", "auto-start-reverse"]]) {
          marker.setAttribute(k, v);
        }
        const head = document.createElementNS(SVG_NS, "path");
        head.setAttribute("d", "M 0 0 L 10 5 L 0 10 z");
        head.setAttribute("class", "plan-arrow");
        marker.append(head);
        defs.append(marker);
        this.edges.append(defs);
        for (const [from, to] of this.deps) {
          const a = this.nodes.get(from);
          const b = this.nodes.get(to);
          if (!a || !b) continue;
          const ra = a.getBoundingClientRect();
          const rb = b.getBoundingClientRect();
          const line = document.createElementNS(SVG_NS, "line");
          line.setAttribute("class", "plan-edge");
          line.setAttribute("x1", String(ra.right - frame.left));
          line.setAttribute("y1", String(ra.top + ra.height / 2 - frame.top));
          line.setAttribute("x2", String(rb.left - frame.left));
          line.setAttribute("y2", String(rb.top + rb.height / 2 - frame.top));
          line.setAttribute("marker-end", `url(#${markerId})`);
          line.dataset.from = from;
          line.dataset.to = to;
          this.edges.append(line);
        }
      });
    }

    direct(event) {
      this.directLine = event;
      this.root.dataset.directLine = event.state || "";
      const label = event.label || labelOf(event.agent);
      const mode = event.mode === "additive" ? "a note from the assistant may follow" : "the specialist's answer only";
      let text;
      if (event.state === "exited") text = `Left the direct conversation with ${label}.`;
      else if (event.state === "sticky") text = `Direct conversation with ${label} (${mode}).`;
      else text = `Sent directly to ${label} (${mode}).`;
      this.banner.textContent = text;
      this.banner.dataset.agent = event.agent || "";
      this.banner.hidden = false;
      if (event.state === "sticky") setSticky(event.agent, label);
      else if (event.state === "exited") setSticky(null);
    }

    // The block of one specialist's Direct Line answer in this turn, made on first use.
    delegatedBlock(agent, label) {
      const id = agent || "";
      let block = Array.from(this.delegated.children).find((b) => b.dataset.agent === id);
      if (!block) {
        block = el("article", "delegated");
        block.dataset.agent = id;
        const head = el("header", "delegated-head");
        head.append(el("span", "delegated-label", `${label || labelOf(agent)} (direct)`));
        block.append(head, el("div", "delegated-text"));
        this.delegated.append(block);
      }
      return block;
    }

    // A piece of the answer as it streams; the delegated_answer that follows replaces it.
    delegatedText(event) {
      if (typeof event.text !== "string" || event.text === "") return;
      this.settleStatuses();
      const body = this.delegatedBlock(event.agent, event.label).querySelector(".delegated-text");
      body.textContent += event.text;
    }

    delegatedAnswer(event) {
      this.settleStatuses();
      const block = this.delegatedBlock(event.agent, event.label);
      block.dataset.status = event.status || "";
      if (event.status && event.status !== "ok") {
        block.querySelector(".delegated-head")
          .append(el("span", `badge badge-${event.status}`, event.status));
      }
      // The delivered text is authoritative: word for word what the specialist said.
      block.querySelector(".delegated-text").textContent =
        typeof event.text === "string" ? event.text : "";
      block.dataset.delivered = "true";
    }

    consulted(agents, footer, memories) {
      this.meta.hidden = false;
      this.pills.textContent = "";
      if (footer) this.pills.title = footer;
      // What was remembered from earlier conversations shaped this turn too (D-43).
      for (const m of memories || []) {
        const pill = el("li", "pill remembered", `Remembered: ${m.subject}`);
        pill.dataset.memory = m.id;
        this.pills.append(pill);
      }
      if (agents.length === 0) {
        this.pills.append(el("li", "pill none", "No specialist consulted"));
        return;
      }
      for (const a of agents) {
        const pill = el("li", "pill");
        pill.dataset.agent = a.agent_id || "";
        pill.dataset.status = a.status || "";
        pill.dataset.durationMs = String(a.duration_ms ?? "");
        pill.dataset.toolCalls = String(a.tool_calls ?? "");
        const calls = plural(a.tool_calls || 0, "tool call");
        pill.append(
          el("span", "pill-label", a.label || labelOf(a.agent_id)),
          el("span", "pill-status", a.status || ""),
          el("span", "pill-duration", formatDuration(a.duration_ms)),
          el("span", "pill-tools", calls),
        );
        pill.title = `${a.label || a.agent_id}: ${a.status}, ${formatDuration(a.duration_ms)}, ${calls}`;
        this.pills.append(pill);
      }
    }

    usage(event) {
      this.cost.dataset.costUsd = String(event.cost_usd ?? 0);
      this.cost.textContent = `Cost ${formatCost(event.cost_usd)}`;
      const lines = (event.models || []).map(
        (m) => `${m.model}: ${plural(m.calls || 0, "call")}, ${m.input || 0} in / ${m.output || 0} out tokens, ${formatCost(m.cost_usd)}`,
      );
      this.cost.title = lines.join("\n");
      this.cost.hidden = false;
      this.meta.hidden = false;
    }

    // The turn waits for the user: an approval (what is asked, with Approve and Decline),
    // a question (a box for the answer, with Answer and Decline) or an account link (Connect
    // opens the sign-in page; once the account is connected the turn goes on by itself, or
    // with Done); each resumes the turn in place.
    interruption(event) {
      this.settleStatuses();
      if (event.kind === "account_link") {
        this.accountLink(event);
        return;
      }
      const question = event.kind === "question";
      const who = event.label || labelOf(event.agent);
      const head = question ? `${who} asks` : `${who} asks your approval`;
      const box = el("div", "interruption");
      box.dataset.interruption = event.id || "";
      box.dataset.kind = question ? "question" : "approval";
      box.setAttribute("role", "group");
      box.setAttribute("aria-label", head);
      box.append(el("p", "interruption-head", head), el("p", "interruption-action", event.action || ""));
      if (!question) {
        box.append(el("pre", "interruption-args", JSON.stringify(event.args ?? {}, null, 2)));
      }
      const actions = el("form", "interruption-actions");
      const turnId = this.root.dataset.turnId;
      const spend = (decided) => {
        for (const c of actions.querySelectorAll("button, input")) c.disabled = true;
        box.dataset.decided = decided;
      };
      let input = null;
      if (question) {
        input = el("input", "interruption-answer");
        input.type = "text";
        input.setAttribute("aria-label", `Your answer to ${who}`);
        input.placeholder = "Your answer";
        actions.append(input);
      }
      const choices = question
        ? [["answer", "Answer"], ["decline", "Decline"]]
        : [["approve", "Approve"], ["decline", "Decline"]];
      for (const [choice, label] of choices) {
        const button = el("button", `decide decide-${choice}`, label);
        button.type = choice === "decline" ? "button" : "submit";
        button.dataset.decision = choice;
        if (choice === "decline") {
          button.addEventListener("click", () => {
            spend("decline");
            const said = question ? "Declined to answer" : `Declined: ${event.action || ""}`;
            resume(turnId, event.id, { decision: "decline" }, said);
          });
        }
        actions.append(button);
      }
      actions.addEventListener("submit", (e) => {
        e.preventDefault();
        if (question) {
          const words = input.value.trim();
          if (words === "") return;
          spend("answer");
          resume(turnId, event.id, { answer: words }, words);
        } else {
          spend("approve");
          resume(turnId, event.id, { decision: "approve" }, `Approved: ${event.action || ""}`);
        }
      });
      box.append(actions);
      this.errors.before(box);
    }

    // An account to connect: Connect opens the sign-in page in its own window, which shows
    // a code once the user has signed in; the code, typed here, connects the account and
    // resumes the turn (a sign-in alone connects nothing: whoever opens a page can finish
    // it).
    accountLink(event) {
      const who = event.label || labelOf(event.agent);
      const head = `${who} needs you to ${event.action || "connect an account"}`;
      const box = el("div", "interruption");
      box.dataset.interruption = event.id || "";
      box.dataset.kind = "account_link";
      box.setAttribute("role", "group");
      box.setAttribute("aria-label", head);
      box.append(el("p", "interruption-head", head));
      const actions = el("form", "interruption-actions");
      const turnId = this.root.dataset.turnId;
      const spend = (decided) => {
        for (const c of actions.querySelectorAll("button, input")) c.disabled = true;
        box.dataset.decided = decided;
      };
      const connect = el("button", "decide decide-connect", "Sign in");
      connect.type = "button";
      connect.dataset.decision = "connect";
      connect.addEventListener("click", () => {
        window.open(event.url, "baton-sign-in", "popup,width=520,height=640");
        box.dataset.connecting = "true";
      });
      const code = el("input", "interruption-code");
      code.type = "text";
      code.inputMode = "numeric";
      code.autocomplete = "one-time-code";
      code.setAttribute("aria-label", "The code the sign-in page shows");
      code.placeholder = "Code from the sign-in page";
      const done = el("button", "decide decide-approve", "Connect");
      done.type = "submit";
      done.dataset.decision = "approve";
      const skip = el("button", "decide decide-decline", "Not now");
      skip.type = "button";
      skip.dataset.decision = "decline";
      skip.addEventListener("click", () => {
        spend("decline");
        resume(turnId, event.id, { decision: "decline" }, `Not connected: ${event.action || ""}`);
      });
      actions.addEventListener("submit", (e) => {
        e.preventDefault();
        const digits = code.value.replace(/[^0-9]/g, "");
        if (digits.length !== 6) {
          code.setCustomValidity("The code has 6 digits.");
          code.reportValidity();
          return;
        }
        spend("approve");
        // The link is connected once the resumed turn has confirmed it.
        resume(turnId, event.id, { answer: digits }, `Connected: ${event.action || ""}`).then(loadLinks);
      });
      code.addEventListener("input", () => code.setCustomValidity(""));
      actions.append(connect, code, done, skip);
      box.append(actions);
      this.errors.before(box);
    }

    error(message) {
      this.settleStatuses();
      const node = el("p", "error", message || "Something went wrong.");
      node.setAttribute("role", "alert");
      this.errors.append(node);
    }

    completed(event) {
      this.settleStatuses();
      this.root.dataset.outcome = event.outcome || "";
      const privacy = event.privacy || { total: 0, by_kind: {} };
      this.receipt.dataset.total = String(privacy.total || 0);
      this.receipt.textContent = receiptText(privacy);
      this.receipt.hidden = false;
      this.meta.hidden = false;
      // A lasting direct conversation announces itself every turn: a turn without that
      // indicator (no direct_line, a single message, or the exit) is outside it.
      if (!this.directLine || this.directLine.state !== "sticky") setSticky(null);
      this.finish("completed");
      // What the turn said may be remembered: it is kept just after the answer.
      setTimeout(loadMemory, 300);
    }

    finish(how) {
      if (this.root.dataset.state !== "streaming") return;
      this.settleStatuses();
      this.root.dataset.state = how;
      this.root.setAttribute("aria-busy", "false");
    }
  }

  // ---------------------------------------------------------------------------------
  // Sending a turn and reading its stream.
  // ---------------------------------------------------------------------------------
  function requestBody(message, pictures) {
    const body = { message };
    if (pictures.length > 0) {
      body.pictures = pictures.map((p) => ({ media_type: p.media_type, data: p.data }));
    }
    if (state.episodeId) body.episode_id = state.episodeId;
    const mode = $("direct-mode").value;
    if (mode) body.direct_line_mode = mode;
    const must = [...document.querySelectorAll("#must-consult input:checked")].map((i) => i.value);
    if (must.length > 0) body.must_consult = must;
    return body;
  }

  async function refusal(response) {
    try {
      const json = await response.json();
      if (json && json.error && json.error.message) return json.error.message;
    } catch (_) {
      // Not JSON: fall through to the status line.
    }
    return `The server refused the message (HTTP ${response.status}).`;
  }

  async function send(message, pictures = []) {
    if (state.busy || (message.trim() === "" && pictures.length === 0)) return;
    const shown = pictures.map((p) => {
      const src = URL.createObjectURL(p.blob);
      state.shown.push(src);
      return { src, alt: p.name ? `Your picture ${p.name}` : "Your picture" };
    });
    const refused = () => {
      // Nothing ran: what was written goes back into an empty composer, to be fixed.
      const box = $("message");
      if (box.value === "" && state.pictures.length === 0) {
        box.value = message;
        for (const p of pictures) addPending(p);
      }
    };
    await stream(message, "/v1/turns", requestBody(message, pictures), shown, refused);
  }

  // The user's answer to what a turn waits for: the resumed turn streams as a new one.
  // `reply` is `{decision}` or `{answer}`.
  async function resume(turnId, interruptionId, reply, said) {
    if (state.busy || !turnId) return;
    const body = { episode_id: state.episodeId, interruption_id: interruptionId, ...reply };
    await stream(said, `/v1/turns/${encodeURIComponent(turnId)}/resume`, body);
  }

  async function stream(message, path, body, pictures = [], onRefused = null) {
    setBusy(true);
    $("empty").hidden = true;
    const turn = new Turn(message, pictures);
    $("log").append(turn.root);
    turn.root.scrollIntoView({ block: "end" });

    const controller = new AbortController();
    state.abort = controller;
    try {
      const response = await fetch(path, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "text/event-stream" },
        body: JSON.stringify(body),
        signal: controller.signal,
      });
      if (!response.ok || !response.body) {
        turn.error(await refusal(response));
        turn.finish("refused");
        if (onRefused) onRefused();
        return;
      }
      const parser = new SseParser((frame) => {
        let event;
        try {
          event = JSON.parse(frame.data);
        } catch (_) {
          return; // not one of ours
        }
        if (!event.type) event.type = frame.type;
        turn.handle(event);
        turn.root.scrollIntoView({ block: "end" });
      });
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        parser.push(decoder.decode(value, { stream: true }));
      }
      parser.push(decoder.decode());
      parser.end();
      if (turn.root.dataset.state === "streaming") {
        turn.error("The answer was cut off before it finished.");
        turn.finish("interrupted");
      }
    } catch (e) {
      if (e && e.name === "AbortError") {
        turn.finish("cancelled");
      } else {
        turn.error("The server could not be reached.");
        turn.finish("interrupted");
      }
    } finally {
      if (state.abort === controller) state.abort = null;
      setBusy(false);
      $("message").focus();
    }
  }

  // A conversation as stored (`GET /v1/episodes/{id}`), drawn as its turns were, with the
  // question it still waits on asked again: what a reload shows.
  async function restore(episodeId) {
    let history;
    try {
      const response = await fetch(`/v1/episodes/${encodeURIComponent(episodeId)}`, {
        headers: { accept: "application/json" },
      });
      if (!response.ok) throw new Error(await refusal(response));
      history = await response.json();
    } catch (_) {
      // Gone, or another caller's: start afresh.
      setEpisode(null);
      document.body.dataset.restored = "none";
      return;
    }
    setEpisode(episodeId);
    for (const past of history.turns || []) {
      $("empty").hidden = true;
      // The pictures it sent, as the server keeps them (hidden data removed).
      const pictures = (past.pictures || [])
        .filter((p) => p && typeof p.sha256 === "string")
        .map((p) => {
          const src = `/v1/episodes/${encodeURIComponent(episodeId)}/pictures/${encodeURIComponent(p.sha256)}`;
          const size = p.width && p.height ? `, ${p.width} × ${p.height}` : "";
          return { src, alt: `Your picture (${(p.media_type || "image").replace("image/", "").toUpperCase()}${size})` };
        });
      const turn = new Turn(past.user_text || "", pictures);
      $("log").append(turn.root);
      const replayed = [{ type: "response_id", response_id: past.turn_id, episode_id: episodeId }];
      const answers = (past.direct && past.direct.answers) || [];
      for (const a of answers) {
        replayed.push({ type: "delegated_answer", agent: a.agent_id, label: a.label, status: a.status, text: a.text });
      }
      if (answers.length === 0 || (past.direct && past.direct.note)) {
        replayed.push({ type: "text", source: answers.length === 0 ? "orchestrator" : "note", text: answers.length === 0 ? past.narration : past.direct.note });
      }
      const pending = history.pending;
      if (pending && pending.turn_id === past.turn_id) {
        replayed.push({ type: "interruption", ...pending });
      }
      replayed.push({ type: "agents_consulted", agents: past.consulted || [] });
      replayed.push({ type: "completed", outcome: past.outcome, privacy: past.privacy });
      for (const event of replayed) turn.handle(event);
    }
    document.body.dataset.restored = String((history.turns || []).length);
    const last = $("log").lastElementChild;
    if (last) last.scrollIntoView({ block: "end" });
  }

  // ---------------------------------------------------------------------------------
  // The specialists panel.
  // ---------------------------------------------------------------------------------
  function insertDirective(agentId) {
    const box = $("message");
    const prefix = state.directLine.prefix;
    // Replace a directive already at the start rather than stacking two.
    const rest = box.value.startsWith(prefix) ? box.value.replace(/^\S*\s*/, "") : box.value;
    box.value = `${prefix}${agentId} ${rest}`;
    box.focus();
    box.setSelectionRange(box.value.length, box.value.length);
  }

  function renderAgents(catalog) {
    state.assistant = catalog.assistant || state.assistant;
    state.directLine = { ...state.directLine, ...(catalog.direct_line || {}) };
    $("assistant-label").textContent = state.assistant.label;
    document.title = `${state.assistant.label} · Baton console`;

    const dl = state.directLine;
    $("direct-help").textContent = dl.enabled
      ? `Start a message with ${dl.prefix}<id> to ask a specialist directly; their answer reaches you word for word.` +
        (dl.sticky ? ` ${dl.prefix}<id> alone opens a direct conversation; ${exitDirective()} leaves it.` : "")
      : "The Direct Line is off for this assistant.";

    const list = $("agents");
    const must = $("must-consult");
    list.textContent = "";
    for (const a of catalog.agents || []) {
      state.labels.set(a.id, a.label);
      const item = el("li", "agent");
      item.dataset.agent = a.id;
      const text = el("div", "agent-text");
      text.append(el("span", "agent-label", a.label), el("code", "agent-id", a.id), el("p", "agent-description", a.description));
      item.append(text);
      if (dl.enabled) {
        const talk = el("button", "talk", "Talk directly");
        talk.type = "button";
        talk.dataset.agent = a.id;
        talk.setAttribute("aria-label", `Talk directly with ${a.label}`);
        talk.addEventListener("click", () => insertDirective(a.id));
        item.append(talk);
      }
      list.append(item);

      const option = el("label", "check");
      const box = document.createElement("input");
      box.type = "checkbox";
      box.value = a.id;
      option.append(box, document.createTextNode(` ${a.label}`));
      must.append(option);
    }
    $("direct-mode").disabled = !dl.enabled;
    renderEndpoints(catalog.endpoints || []);
  }

  // The ways in this server offers, each as the URL a client would use.
  function renderEndpoints(endpoints) {
    const list = $("endpoints");
    list.textContent = "";
    for (const e of endpoints) {
      const item = el("li", "endpoint");
      item.dataset.path = e.path;
      item.append(el("span", "endpoint-name", e.name), el("code", "endpoint-url", `${e.method} ${location.origin}${e.path}`));
      list.append(item);
    }
  }

  // The "What I remember" panel (D-43): the user's memories, each with Forget, everything
  // with Forget everything, and their own setting. Hidden where the server keeps none.
  // Loads overlap (after a turn, after a Forget): only the latest started is shown, so an
  // answer read before a Forget never puts the forgotten memory back.
  let memoryLoads = 0;
  async function loadMemory() {
    const mine = ++memoryLoads;
    const panel = $("memory-panel");
    let json;
    try {
      const response = await fetch("/v1/memory", { headers: { accept: "application/json" } });
      if (mine !== memoryLoads) return;
      if (!response.ok) {
        panel.hidden = true;
        return;
      }
      json = await response.json();
    } catch (_) {
      if (mine === memoryLoads) panel.hidden = true;
      return;
    }
    if (mine !== memoryLoads) return;
    panel.hidden = false;
    $("memory-on").checked = json.memory === "on";
    const memories = json.memories || [];
    const list = $("memories");
    list.textContent = "";
    $("memory-empty").hidden = memories.length > 0;
    $("memory-forget-all").hidden = memories.length === 0;
    for (const m of memories) {
      const item = el("li", "memory");
      item.dataset.id = m.id;
      item.dataset.subject = m.subject || "";
      const said = new Date(m.created_ms || 0).toISOString().slice(0, 10);
      const forget = el("button", "forget", "Forget");
      forget.type = "button";
      forget.setAttribute("aria-label", `Forget: ${m.text}`);
      forget.addEventListener("click", async () => {
        forget.disabled = true;
        await fetch(`/v1/memory/${encodeURIComponent(m.id)}`, { method: "DELETE" });
        loadMemory();
      });
      item.append(el("span", "memory-text", m.text), el("span", "memory-said", `said ${said}`), forget);
      list.append(item);
    }
    document.body.dataset.memories = String(memories.length);
  }

  function wireMemory() {
    $("memory-on").addEventListener("change", async (e) => {
      await fetch("/v1/memory/setting", {
        method: "PUT",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ enabled: e.target.checked }),
      });
      loadMemory();
    });
    $("memory-forget-all").addEventListener("click", async () => {
      await fetch("/v1/memory?all=true", { method: "DELETE" });
      loadMemory();
    });
  }

  // The user's account links: each server and when it was connected or renewed, or null
  // when they cannot be read.
  async function linkTimes() {
    try {
      const response = await fetch("/v1/links", { headers: { accept: "application/json" } });
      if (!response.ok) return null;
      const json = await response.json();
      return new Map((json.links || []).map((l) => [l.server, l.updated_ms || 0]));
    } catch (_) {
      return null;
    }
  }

  // The "Connected accounts" panel: each link, with Revoke.
  async function loadLinks() {
    const links = await linkTimes();
    const panel = $("links-panel");
    const list = $("links");
    list.textContent = "";
    panel.hidden = links === null;
    if (!links) return;
    $("links-empty").hidden = links.size > 0;
    for (const [server] of links) {
      const item = el("li", "link");
      item.dataset.server = server;
      const revoke = el("button", "revoke", "Revoke");
      revoke.type = "button";
      revoke.setAttribute("aria-label", `Revoke the link to ${server}`);
      revoke.addEventListener("click", async () => {
        revoke.disabled = true;
        await fetch(`/v1/links?server=${encodeURIComponent(server)}`, { method: "DELETE" });
        loadLinks();
      });
      item.append(el("code", "link-server", server), revoke);
      list.append(item);
    }
    document.body.dataset.links = String(links.size);
  }

  async function loadAgents() {
    try {
      const response = await fetch("/v1/agents", { headers: { accept: "application/json" } });
      if (!response.ok) throw new Error(await refusal(response));
      renderAgents(await response.json());
      document.body.dataset.agents = "loaded";
    } catch (e) {
      const node = $("agents-error");
      node.textContent = `The list of specialists could not be loaded. ${e && e.message ? e.message : ""}`;
      node.hidden = false;
      document.body.dataset.agents = "failed";
    }
  }

  // ---------------------------------------------------------------------------------
  // The pictures waiting in the composer.
  // ---------------------------------------------------------------------------------
  function announce(text) {
    $("attach-status").textContent = text;
  }

  function showAttachError(lines) {
    const node = $("attach-error");
    node.textContent = lines.join(" ");
    node.hidden = lines.length === 0;
  }

  function addPending(picture) {
    picture.url = URL.createObjectURL(picture.blob);
    state.pictures.push(picture);
    renderPending();
  }

  function removePending(index) {
    const [gone] = state.pictures.splice(index, 1);
    if (!gone) return;
    URL.revokeObjectURL(gone.url);
    renderPending();
    announce(`${gone.name || "The picture"} removed. ${plural(state.pictures.length, "picture")} to send.`);
    // Focus stays in the list (the next picture's Remove), or returns to the message.
    const buttons = $("attachments").querySelectorAll(".attachment-remove");
    const next = buttons[Math.min(index, buttons.length - 1)];
    (next || $("message")).focus();
  }

  function renderPending() {
    const list = $("attachments");
    list.textContent = "";
    state.pictures.forEach((p, index) => {
      const name = p.name || "Pasted picture";
      const item = el("li", "attachment");
      item.dataset.mediaType = p.media_type;
      item.title = `${name}, ${formatSize(p.size)}`;
      const img = el("img", "thumbnail");
      img.src = p.url;
      img.alt = `Picture to send: ${name}, ${formatSize(p.size)}`;
      const remove = el("button", "attachment-remove", "×");
      remove.type = "button";
      remove.setAttribute("aria-label", `Remove ${name}`);
      remove.addEventListener("click", () => removePending(index));
      item.append(img, remove);
      list.append(item);
    });
    list.hidden = state.pictures.length === 0;
    document.body.dataset.pictures = String(state.pictures.length);
  }

  // Reads `files` into the composer, refusing in plain words what cannot be sent.
  function addFiles(files) {
    const incoming = [...files];
    if (incoming.length === 0) return state.reading;
    state.reading = state.reading.then(async () => {
      const problems = [];
      let added = 0;
      for (const file of incoming) {
        if (state.pictures.length >= MAX_PICTURES) {
          problems.push(`${pictureName(file)} was not added: a message takes at most ${MAX_PICTURES} pictures.`);
          continue;
        }
        const read = await readPicture(file);
        if (read.refused) {
          problems.push(read.refused);
        } else {
          addPending(read.picture);
          added += 1;
        }
      }
      showAttachError(problems);
      if (added > 0) {
        announce(`${plural(added, "picture")} added. ${plural(state.pictures.length, "picture")} to send.`);
      }
    }).catch(() => {
      // Whatever went wrong, the next message must not wait on it.
      showAttachError(["The picture could not be added."]);
    });
    return state.reading;
  }

  function imageFiles(transfer) {
    if (!transfer) return [];
    const files = [...(transfer.files || [])];
    if (files.length > 0) return files;
    return [...(transfer.items || [])]
      .filter((item) => item.kind === "file")
      .map((item) => item.getAsFile())
      .filter(Boolean);
  }

  // ---------------------------------------------------------------------------------
  // Wiring.
  // ---------------------------------------------------------------------------------
  async function submit() {
    if (state.busy) return;
    // A picture still being read goes with this message.
    await state.reading;
    const box = $("message");
    const message = box.value;
    if (state.busy || (message.trim() === "" && state.pictures.length === 0)) return;
    const pictures = state.pictures;
    state.pictures = [];
    for (const p of pictures) URL.revokeObjectURL(p.url);
    renderPending();
    showAttachError([]);
    box.value = "";
    send(message, pictures);
  }

  function newConversation() {
    if (state.abort) state.abort.abort();
    setEpisode(null);
    setSticky(null);
    $("log").textContent = "";
    for (const url of state.shown) URL.revokeObjectURL(url);
    state.shown = [];
    $("empty").hidden = false;
    $("message").focus();
  }

  function wirePictures() {
    const input = $("picture-input");
    $("attach").addEventListener("click", () => input.click());
    input.addEventListener("change", () => {
      addFiles(input.files || []);
      // The same file chosen again is a new change.
      input.value = "";
    });
    $("message").addEventListener("paste", (e) => {
      const files = imageFiles(e.clipboardData);
      if (files.length === 0) return;
      // Words pasted with the picture still go in the box.
      if (![...(e.clipboardData.types || [])].includes("text/plain")) e.preventDefault();
      addFiles(files);
    });
    // A file dropped anywhere on the page goes into the composer (a browser would
    // otherwise leave the page to show it).
    const composer = $("composer");
    let leaving = null;
    const carriesFiles = (e) => e.dataTransfer && [...(e.dataTransfer.types || [])].includes("Files");
    document.addEventListener("dragover", (e) => {
      if (!carriesFiles(e)) return;
      e.preventDefault();
      e.dataTransfer.dropEffect = "copy";
      composer.dataset.dropping = "true";
      clearTimeout(leaving);
      leaving = setTimeout(() => delete composer.dataset.dropping, 200);
    });
    document.addEventListener("drop", (e) => {
      if (!carriesFiles(e)) return;
      e.preventDefault();
      delete composer.dataset.dropping;
      addFiles(imageFiles(e.dataTransfer));
      $("message").focus();
    });
  }

  document.addEventListener("DOMContentLoaded", () => {
    $("composer").addEventListener("submit", (e) => {
      e.preventDefault();
      submit();
    });
    $("message").addEventListener("keydown", (e) => {
      if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
        e.preventDefault();
        submit();
      }
    });
    $("new-conversation").addEventListener("click", newConversation);
    wirePictures();
    $("sticky-leave").addEventListener("click", () => {
      if (!state.busy) send(exitDirective());
    });
    setBusy(false);
    loadAgents();
    loadLinks();
    wireMemory();
    loadMemory();
    const saved = decodeURIComponent(window.location.hash.slice(1));
    if (saved) restore(saved);
    $("message").focus();
  });

  // For tests and the curious: the parser, to feed it chunks by hand.
  window.batonConsole = { SseParser, receiptText, formatCost, toBase64, sniff, addFiles };
})();
