// The trace page: lists the traces of the directory (searchable), or shows one conversation.
// Everything read from a trace goes into the page as text (textContent), never as markup; the
// text of a message is rendered as a small markdown subset into DOM nodes (markdown.js).
"use strict";

const app = document.getElementById("app");
const where = document.getElementById("where");
// The path the page is mounted under ("" at the root), as the server wrote it.
const base = document.body.dataset.base || "";

// el("div", {class: "x"}, child, "text", ...): one element with attributes and children.
function el(tag, attributes, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes || {})) {
    node.setAttribute(name, value);
  }
  for (const child of children) {
    if (child !== null && child !== undefined) {
      node.append(child instanceof Node ? child : String(child));
    }
  }
  return node;
}

function show(...nodes) {
  app.replaceChildren(...nodes.filter((node) => node !== null));
}

function fail(message) {
  show(el("p", {class: "error"}, message));
}

async function getJSON(url) {
  const response = await fetch(url, {headers: {accept: "application/json"}});
  const body = await response.json();
  if (!response.ok) {
    throw new Error(body && body.error ? body.error.message : `HTTP ${response.status}`);
  }
  return body;
}

// The URL path of a trace id, each segment percent-encoded.
function encodePath(path) {
  return path.split("/").map(encodeURIComponent).join("/");
}

function bytesOfBase64(text) {
  const padding = text.endsWith("==") ? 2 : text.endsWith("=") ? 1 : 0;
  return Math.max(0, Math.floor(text.length * 3 / 4) - padding);
}

function pretty(value) {
  return JSON.stringify(value, null, 2);
}

const DASH = "—";

function seconds(value) {
  return typeof value === "number" ? `${value.toFixed(value < 10 ? 3 : 1)} s` : DASH;
}

// -- the list ----------------------------------------------------------------------------------

function summaryCells(summary) {
  const s = summary || {};
  const time = s.time ? new Date(s.time) : null;
  const outcome = s.outcome || DASH;
  return [
    el("td", {class: "model"}, s.model || DASH),
    el("td", {class: "time"}, time && !isNaN(time) ? time.toLocaleString() : DASH),
    el("td", {class: "duration"}, seconds(s.duration_s)),
    el("td", {class: "tokens"}, typeof s.tokens === "number" ? s.tokens.toLocaleString() : DASH),
    el("td", {class: "cost"}, typeof s.cost === "number" ? `$${s.cost.toFixed(6)}` : DASH),
    el("td", {class: `outcome ${outcome === "ok" ? "ok" : outcome === DASH ? "" : "failed"}`},
      outcome),
  ];
}

let searching = null;

async function showList() {
  where.textContent = "";
  const query = new URLSearchParams(location.search).get("q") || "";
  const box = el("input", {type: "search", id: "search", placeholder: "Search model, text, error",
    "aria-label": "Search the traces"});
  box.value = query;
  const results = el("div", {id: "results"});
  box.addEventListener("input", () => {
    clearTimeout(searching);
    searching = setTimeout(() => {
      const url = new URL(location.href);
      if (box.value) {
        url.searchParams.set("q", box.value);
      } else {
        url.searchParams.delete("q");
      }
      history.replaceState(null, "", url);
      listInto(results, box.value).catch((error) => results.replaceChildren(
        el("p", {class: "error"}, error.message)));
    }, 200);
  });
  show(el("form", {class: "search", role: "search"}, box), results);
  box.form.addEventListener("submit", (event) => event.preventDefault());
  await listInto(results, query);
}

// How many listings were asked for: only the latest one is shown, however answers arrive.
let listings = 0;

async function listInto(results, query) {
  const asked = ++listings;
  const listing = await getJSON(`${base}/api/traces?q=${encodeURIComponent(query)}`);
  if (asked !== listings) {
    return;
  }
  const skipped = listing.skipped_count ? el("p", {class: "note"},
    `${listing.skipped_count} entries could not be listed: `,
    listing.skipped.map((entry) => `${entry.path} (${entry.reason})`).join("; ")) : null;
  if (listing.traces.length === 0) {
    results.replaceChildren(el("p", {class: "note"}, query ? "No trace matches the search."
      : "No trace files in this directory yet."), ...(skipped ? [skipped] : []));
    return;
  }
  const rows = listing.traces.map((trace) => el("tr", {},
    // A trace too large to be shown whole links its raw file.
    el("td", {}, el("a", {class: "trace-link",
      href: trace.too_large ? trace.json : `${base}/trace/${encodePath(trace.id)}`}, trace.id)),
    ...summaryCells(trace.summary),
    el("td", {class: "size"}, `${trace.size.toLocaleString()} B`),
    el("td", {}, el("a", {href: trace.json}, "JSON"),
      trace.txt ? " · " : null, trace.txt ? el("a", {href: trace.txt}, "text") : null),
  ));
  const headings = ["Trace", "Model", "Time", "Duration", "Tokens", "Cost", "Outcome", "Size",
    "Files"];
  results.replaceChildren(...[
    el("table", {class: "traces"},
      el("thead", {}, el("tr", {}, ...headings.map((name) => el("th", {}, name)))),
      el("tbody", {}, ...rows)),
    listing.truncated ? el("p", {class: "note"}, "Only the first traces found are listed.") : null,
    skipped,
  ].filter((node) => node !== null));
}

// -- one conversation --------------------------------------------------------------------------

// An image URL is shown inline only for schemes a browser loads as an image.
function imageNode(url) {
  if (typeof url === "string" && /^(data:image\/|https?:)/i.test(url)) {
    return el("img", {class: "inline", src: url, alt: "image"});
  }
  return el("div", {class: "media"}, `Image: ${url}`);
}

function inlineMedia(item, label) {
  const mime = String(item.mime_type || "");
  const size = typeof item.data === "string" ? bytesOfBase64(item.data) : 0;
  if (/^image\/[a-z0-9.+-]+$/i.test(mime) && typeof item.data === "string") {
    return el("div", {class: `item ${label}`},
      el("img", {class: "inline", src: `data:${mime};base64,${item.data}`, alt: mime}));
  }
  return el("div", {class: `item ${label} media`}, `${mime}, ${size.toLocaleString()} bytes`);
}

function itemNode(item, callNames) {
  switch (item && item.type) {
    case "text.done":
      return el("div", {class: "item text markdown"}, mmspMarkdown.render(item.text));
    case "thinking.done":
      return el("details", {class: "item thinking"}, el("summary", {}, "Thinking"),
        el("div", {class: "thinking-text"}, item.thinking));
    case "inline_thinking.done":
      return el("details", {class: "item thinking"}, el("summary", {}, "Thinking (encoded)"),
        inlineMedia(item, "inline-thinking"));
    case "image_url.done":
      return el("div", {class: "item image"}, imageNode(item.image_url));
    case "inline_data.done":
      return inlineMedia(item, "inline-data");
    case "tool_call.done":
      return el("div", {class: "item tool-call"},
        el("span", {class: "label"}, "Tool call: "), el("span", {class: "tool-name"}, item.name),
        el("span", {class: "tool-id"}, item.tool_call_id),
        el("pre", {class: "arguments"}, pretty(item.arguments)));
    case "tool_result.done": {
      const name = callNames.get(item.tool_call_id);
      return el("div", {class: "item tool-result"},
        el("span", {class: "label"}, name ? `Tool result of ${name}` : "Tool result"),
        el("span", {class: "tool-id"}, item.tool_call_id),
        el("div", {class: "text"}, item.text),
        ...(Array.isArray(item.images) ? item.images.map(imageNode) : []));
    }
    case "embedding.done": {
      const values = Array.isArray(item.embedding) ? item.embedding : [];
      const head = values.slice(0, 5).map((v) => Number(v).toPrecision(6)).join(", ");
      return el("div", {class: "item embedding media"},
        `Embedding [${head}${values.length > 5 ? ", …" : ""}] (${values.length} dimensions)`);
    }
    default:
      return el("pre", {class: "item unknown"}, pretty(item));
  }
}

function turnNode(message) {
  const usage = message.usage_metadata;
  const hasFinish = Object.prototype.hasOwnProperty.call(message, "finish_reason");
  if (!usage && !hasFinish) {
    return null;
  }
  const parts = [];
  if (usage && typeof usage === "object") {
    const counts = [["prompt", usage.prompt_tokens], ["cached", usage.cached_tokens],
      ["thoughts", usage.thoughts_tokens], ["response", usage.response_tokens]]
      .filter(([, n]) => typeof n === "number");
    for (const [name, n] of counts) {
      parts.push(el("span", {class: `usage usage-${name}`}, `${name} tokens: ${n}`));
    }
    if (counts.length) {
      // total = input (cached + prompt) + output (thoughts + response), null as 0 (spec 01)
      const total = counts.reduce((sum, [, n]) => sum + n, 0);
      parts.push(el("span", {class: "usage usage-total"}, `total: ${total}`));
    }
  }
  if (hasFinish && message.finish_reason !== null) {
    parts.push(el("span", {class: "finish-reason"}, `finish reason: ${message.finish_reason}`));
  }
  return parts.length ? el("footer", {class: "turn"}, ...parts) : null;
}

function messageNode(message, index, callNames) {
  const role = message && typeof message.role === "string" ? message.role : "?";
  const items = message && Array.isArray(message.content_items) ? message.content_items : [];
  return el("section", {class: `message role-${role.replace(/[^a-z_-]/gi, "")}`},
    el("h2", {}, `${index + 1} · ${role}`),
    ...items.map((item) => itemNode(item, callNames)),
    turnNode(message || {}));
}

// The turn's timeline (first event, duration, attempts), from the tracer's keys; "—" where the
// trace does not hold them.
function timelineNode(trace) {
  const attempts = Array.isArray(trace.attempts) ? trace.attempts : [];
  return el("section", {class: "timeline"},
    el("h2", {}, "Turn"),
    el("dl", {},
      el("dt", {}, "Outcome"), el("dd", {class: "outcome"},
        trace.outcome === "error" ? "error" : trace.outcome ? "ok" : DASH),
      el("dt", {}, "First event"), el("dd", {class: "first-event"}, seconds(trace.first_event_s)),
      el("dt", {}, "Duration"), el("dd", {class: "duration"}, seconds(trace.duration_s)),
      el("dt", {}, "Attempts"), el("dd", {class: "attempts"},
        Array.isArray(trace.attempts) ? String(attempts.length) : DASH)),
    attempts.length ? el("ol", {class: "attempt-list"}, ...attempts.map((attempt) =>
      el("li", {class: "attempt"}, `at ${seconds(attempt && attempt.started_s)}: `,
        attempt && attempt.error ? `${attempt.error.type}: ${attempt.error.message}`
          : "streamed"))) : null);
}

// A failed turn's error in full (every field of its wire form) and what arrived before it.
function errorNode(trace) {
  if (!trace.error || typeof trace.error !== "object") {
    return null;
  }
  const partial = Array.isArray(trace.partial) ? trace.partial : [];
  return el("section", {class: "failure"},
    el("h2", {}, `Error · ${trace.error.type || "unknown"}`),
    el("div", {class: "error-message text"}, String(trace.error.message ?? "")),
    el("pre", {class: "error-fields"}, pretty(trace.error)),
    partial.length ? el("div", {class: "partial"}, el("h3", {}, "Arrived before the error"),
      ...partial.map((item) => el("pre", {class: "partial-item"},
        `${item.type}: ${item.text ?? item.thinking ?? item.arguments ?? ""}`))) : null);
}

async function showTrace(id) {
  where.textContent = id;
  document.title = `${id} · MMSP traces`;
  const answer = await getJSON(`${base}/api/trace/${encodePath(id)}`);
  const trace = answer.trace;
  const history = trace.history;
  const callNames = new Map();
  for (const message of history) {
    for (const item of (message && Array.isArray(message.content_items)) ? message.content_items : []) {
      if (item && item.type === "tool_call.done") {
        callNames.set(item.tool_call_id, item.name);
      }
    }
  }
  const config = trace.config && typeof trace.config === "object" ? trace.config : {};
  const system = typeof config.system_prompt === "string" && config.system_prompt
    ? el("section", {class: "message system-prompt"}, el("h2", {}, "System prompt"),
      el("div", {class: "text"}, config.system_prompt)) : null;
  show(
    el("div", {class: "links"},
      el("a", {class: "raw-json", href: answer.raw}, "Raw JSON"),
      answer.transcript ? el("a", {class: "transcript", href: answer.transcript}, "Transcript") : null,
      trace.timestamp ? el("span", {class: "note"}, String(trace.timestamp)) : null),
    el("details", {class: "config"},
      el("summary", {}, config.model ? `Configuration · model ${config.model}` : "Configuration"),
      el("pre", {}, pretty(config))),
    timelineNode(trace),
    errorNode(trace),
    system,
    ...history.map((message, index) => messageNode(message, index, callNames)),
  );
}

function route() {
  const path = location.pathname.slice(base.length);
  if (path.startsWith("/trace/")) {
    return showTrace(path.slice("/trace/".length).split("/").map(decodeURIComponent).join("/"));
  }
  return showList();
}

route().catch((error) => fail(error.message));
