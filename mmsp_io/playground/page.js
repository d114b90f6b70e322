// The playground: pick a model, chat, watch the answer stream in, stop it, open its trace.
// Everything a model or the server sends goes into the page as text nodes, never as markup;
// a finished text is rendered as a small markdown subset into DOM nodes (markdown.js).
"use strict";

const $ = (id) => document.getElementById(id);
const conversation = $("conversation");
const status = $("status");
let models = [];

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

async function postJSON(route, body) {
  return fetch(route, {method: "POST", headers: {"content-type": "application/json"},
    body: JSON.stringify(body)});
}

async function errorOf(response) {
  try {
    return (await response.json()).error || `HTTP ${response.status}`;
  } catch {
    return `HTTP ${response.status}`;
  }
}

function scrollDown() {
  conversation.lastElementChild?.scrollIntoView({block: "end"});
}

// -- the settings -----------------------------------------------------------------------------

async function loadModels() {
  const source = $("source").value;
  $("gateway").hidden = source !== "gateway";
  const body = {source};
  if (source === "gateway") {
    body.base_url = $("gateway-url").value;
    body.api_key = $("gateway-key").value || null;
  }
  const select = $("model");
  select.replaceChildren();
  $("models-note").textContent = "";
  const response = await postJSON("/api/models", body);
  if (!response.ok) {
    $("models-note").textContent = await errorOf(response);
    return;
  }
  models = (await response.json()).models;
  models.forEach((model, index) => select.append(el("option", {value: String(index)},
    model.label)));
  if (!models.length) {
    $("models-note").textContent = source === "catalog"
      ? "No catalog model has its key in the environment." : "No model listed.";
  }
}

// The config of the next call, or throws an Error saying what is wrong with the settings.
function config() {
  const result = {};
  if ($("thinking-level").value) {
    result.thinking_level = $("thinking-level").value;
  }
  if ($("temperature").value !== "") {
    result.temperature = Number($("temperature").value);
  }
  if ($("max-tokens").value !== "") {
    result.max_tokens = Number($("max-tokens").value);
  }
  if ($("system-prompt").value.trim()) {
    result.system_prompt = $("system-prompt").value;
  }
  const tools = $("tools").value.trim();
  if (tools) {
    try {
      result.tools = JSON.parse(tools);
    } catch (error) {
      throw new Error(`The tools are not JSON: ${error.message}`);
    }
  }
  return result;
}

function chosenModel() {
  const model = models[Number($("model").value)];
  if (!model) {
    throw new Error("Pick a model first.");
  }
  return model.source === "gateway" ? {...model, api_key: $("gateway-key").value || null}
    : model;
}

// -- one answer, as it streams ----------------------------------------------------------------

// The view of one turn's answer: one block per call, the items growing inside it.
class Answer {
  constructor(turn) {
    this.turn = turn;
    this.block = null;
    this.open = {};
  }

  blockNode() {
    if (!this.block) {
      this.block = el("section", {class: "message assistant"}, el("h2", {}, "assistant"));
      this.turn.append(this.block);
      this.open = {};
    }
    return this.block;
  }

  // A public event in its wire form (spec 01).
  event(event) {
    const block = this.blockNode();
    for (const item of event.content_items || []) {
      this.item(block, item);
    }
    if (event.event_type === "stop") {
      const usage = event.usage_metadata || {};
      const parts = ["prompt", "cached", "thoughts", "response"]
        .filter((name) => typeof usage[`${name}_tokens`] === "number")
        .map((name) => el("span", {class: `usage usage-${name}`},
          `${name} tokens: ${usage[`${name}_tokens`]}`));
      block.append(el("footer", {class: "turn-usage"}, ...parts,
        el("span", {class: "finish-reason"}, `finish reason: ${event.finish_reason}`)));
      this.block = null;
    }
  }

  item(block, item) {
    const open = this.open;
    switch (item.type) {
      case "text.delta":
        if (!open.text) {
          open.text = el("div", {class: "item text streaming"});
          block.append(open.text);
        }
        open.text.append(item.text);
        break;
      case "text.done": {
        const node = open.text || block.appendChild(el("div", {class: "item text"}));
        node.classList.remove("streaming");
        node.classList.add("markdown");
        node.replaceChildren(mmspMarkdown.render(item.text));
        open.text = null;
        break;
      }
      case "thinking.delta":
        if (!open.thinking) {
          open.thinking = el("div", {class: "thinking-text"});
          block.append(el("details", {class: "item thinking", open: ""},
            el("summary", {}, "Thinking"), open.thinking));
        }
        open.thinking.append(item.thinking);
        break;
      case "thinking.done":
        if (!open.thinking) {
          open.thinking = el("div", {class: "thinking-text"});
          block.append(el("details", {class: "item thinking"}, el("summary", {}, "Thinking"),
            open.thinking));
        }
        open.thinking.textContent = item.thinking;
        open.thinking = null;
        break;
      case "tool_call.delta":
        if (item.tool_call_id || !open.tool) {
          open.tool = el("div", {class: "item tool-call"},
            el("span", {class: "label"}, "Tool call: "),
            el("span", {class: "tool-name"}, item.name),
            el("span", {class: "tool-id"}, item.tool_call_id),
            el("pre", {class: "arguments"}));
          block.append(open.tool);
        }
        open.tool.querySelector(".arguments").append(item.arguments);
        break;
      case "tool_call.done": {
        const node = open.tool || block.appendChild(el("div", {class: "item tool-call"},
          el("span", {class: "label"}, "Tool call: "), el("span", {class: "tool-name"}),
          el("span", {class: "tool-id"}), el("pre", {class: "arguments"})));
        node.querySelector(".tool-name").textContent = item.name;
        node.querySelector(".tool-id").textContent = item.tool_call_id;
        node.querySelector(".arguments").textContent = JSON.stringify(item.arguments, null, 2);
        open.tool = null;
        break;
      }
      default:
        if (item.type.endsWith(".done")) {  // images, embeddings: named, not shown
          block.append(el("div", {class: "item media"}, `${item.type.slice(0, -5)} received`));
        }
    }
  }

  toolResult(item) {
    this.turn.append(el("section", {class: "message tool"}, el("h2", {}, "tool"),
      el("div", {class: "item tool-result"}, el("span", {class: "label"}, "Tool result"),
        el("span", {class: "tool-id"}, item.tool_call_id),
        el("div", {class: "text"}, item.text))));
  }

  traceLink(href) {
    return href ? el("a", {class: "trace-link", href, target: "_blank"}, "Open its trace") : null;
  }

  error(frame) {
    this.turn.append(el("div", {class: "error-frame"},
      el("span", {class: "error-type"}, frame.type), ": ",
      el("span", {class: "error-message"}, frame.error), " ", this.traceLink(frame.trace)));
  }

  done(frame) {
    this.turn.append(el("div", {class: "turn-end"}, this.traceLink(frame.trace)));
  }
}

// The frames of a server-sent event stream, each `data:` line's JSON, as they arrive.
async function* frames(response) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const {value, done} = await reader.read();
    if (done) {
      return;
    }
    buffer += value;
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const frame = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const data = frame.split("\n").filter((line) => line.startsWith("data: "))
        .map((line) => line.slice(6)).join("\n");
      if (data) {
        yield JSON.parse(data);
      }
    }
  }
}

function busy(on, text) {
  $("send").disabled = on;
  $("stop").disabled = !on;
  status.textContent = text;
}

async function send(event) {
  event.preventDefault();
  const text = $("message").value;
  if (!text.trim()) {
    return;
  }
  let body;
  try {
    body = {message: text, model: chosenModel(), config: config()};
    $("settings-error").hidden = true;
  } catch (error) {
    $("settings-error").textContent = error.message;
    $("settings-error").hidden = false;
    return;
  }
  const turn = el("article", {class: "turn"},
    el("section", {class: "message user"}, el("h2", {}, "user"),
      el("div", {class: "item text markdown"}, mmspMarkdown.render(text))));
  conversation.append(turn);
  $("message").value = "";
  busy(true, "Answering…");
  const answer = new Answer(turn);
  let ended = "Stopped.";
  try {
    const response = await postJSON("/api/chat", body);
    if (!response.ok) {
      answer.error({type: `HTTP ${response.status}`, error: await errorOf(response)});
      ended = "";
      return;
    }
    for await (const frame of frames(response)) {
      if (frame.event_type) {
        answer.event(frame);
      } else if (frame.tool_result) {
        answer.toolResult(frame.tool_result);
      } else if (frame.error !== undefined) {
        answer.error(frame);
        ended = frame.type === "AbortedError" ? "Stopped." : "Failed.";
      } else if (frame.done) {
        answer.done(frame.done);
        ended = "Done.";
      }
      scrollDown();
    }
  } catch (error) {
    answer.error({type: "Error", error: error.message});
    ended = "Failed.";
  } finally {
    turn.classList.add("finished");
    busy(false, ended);
  }
}

async function stop() {
  $("stop").disabled = true;
  await postJSON("/api/abort", {});
}

async function clear() {
  await postJSON("/api/clear", {});
  conversation.replaceChildren();
  status.textContent = "Cleared.";
}

// The session's conversation so far, shown again (after a reload).
async function restore() {
  const response = await postJSON("/api/history", {});
  if (!response.ok) {
    return;
  }
  let answer = null;
  for (const message of (await response.json()).messages) {
    const items = message.content_items || [];
    const results = items.filter((item) => item.type === "tool_result.done");
    if (message.role === "user" && !results.length) {
      const turn = el("article", {class: "turn finished"},
        el("section", {class: "message user"}, el("h2", {}, "user"),
          ...items.filter((item) => item.type === "text.done")
            .map((item) => el("div", {class: "item text markdown"},
              mmspMarkdown.render(item.text)))));
      conversation.append(turn);
      answer = new Answer(turn);
    } else if (answer && message.role === "user") {
      results.forEach((item) => answer.toolResult(item));
    } else if (answer) {
      answer.event({...message, event_type: "delta"});
      answer.event({event_type: "stop", content_items: [],
        usage_metadata: message.usage_metadata, finish_reason: message.finish_reason});
    }
  }
}

$("source").addEventListener("change", () => loadModels());
$("load-models").addEventListener("click", () => loadModels());
$("composer").addEventListener("submit", send);
$("message").addEventListener("keydown", (event) => {
  if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
    $("composer").requestSubmit();
  }
});
$("stop").addEventListener("click", stop);
$("clear").addEventListener("click", clear);
loadModels();
restore();
