// The trace page: lists the traces of the directory, or shows one conversation.
// Everything read from a trace goes into the page as text (textContent), never as markup.
"use strict";

const app = document.getElementById("app");
const where = document.getElementById("where");

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

// -- the list ----------------------------------------------------------------------------------

async function showList() {
  where.textContent = "";
  const listing = await getJSON("/api/traces");
  const skipped = listing.skipped_count ? el("p", {class: "note"},
    `${listing.skipped_count} entries could not be listed: `,
    listing.skipped.map((entry) => `${entry.path} (${entry.reason})`).join("; ")) : null;
  if (listing.traces.length === 0) {
    show(el("p", {class: "note"}, "No trace files in this directory yet."), skipped);
    return;
  }
  const rows = listing.traces.map((trace) => el("tr", {},
    // A trace too large to be shown whole links its raw file.
    el("td", {}, el("a", {class: "trace-link",
      href: trace.too_large ? trace.json : "/trace/" + encodePath(trace.id)}, trace.id)),
    el("td", {}, trace.modified ? new Date(trace.modified).toLocaleString() : ""),
    el("td", {class: "size"}, `${trace.size.toLocaleString()} B`),
    el("td", {}, el("a", {href: trace.json}, "JSON"),
      trace.txt ? " · " : null, trace.txt ? el("a", {href: trace.txt}, "text") : null),
  ));
  show(
    el("table", {class: "traces"},
      el("thead", {}, el("tr", {}, el("th", {}, "Trace"), el("th", {}, "Modified"),
        el("th", {}, "Size"), el("th", {}, "Files"))),
      el("tbody", {}, ...rows)),
    listing.truncated ? el("p", {class: "note"}, "Only the first traces found are listed.") : null,
    skipped,
  );
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
      return el("div", {class: "item text"}, item.text);
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

async function showTrace(id) {
  where.textContent = id;
  document.title = `${id} · MMSP traces`;
  const answer = await getJSON("/api/trace/" + encodePath(id));
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
  show(
    el("div", {class: "links"},
      el("a", {class: "raw-json", href: answer.raw}, "Raw JSON"),
      answer.transcript ? el("a", {class: "transcript", href: answer.transcript}, "Transcript") : null,
      trace.timestamp ? el("span", {class: "note"}, String(trace.timestamp)) : null),
    el("details", {class: "config"},
      el("summary", {}, config.model ? `Configuration · model ${config.model}` : "Configuration"),
      el("pre", {}, pretty(config))),
    ...history.map((message, index) => messageNode(message, index, callNames)),
  );
}

function route() {
  const path = location.pathname;
  if (path.startsWith("/trace/")) {
    return showTrace(path.slice("/trace/".length).split("/").map(decodeURIComponent).join("/"));
  }
  return showList();
}

route().catch((error) => fail(error.message));
