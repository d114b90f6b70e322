// A small markdown subset rendered into DOM nodes, never into markup: paragraphs, fenced code
// blocks, inline code, emphasis (*em*, _em_, **strong**), bullet and numbered lists, and links
// whose target is http(s) (any other target stays text). Every piece of the source reaches the
// page through createElement and text nodes, so no text of a trace can become an element.
// Shared by the trace page and the playground (mmsp_io.playground loads it from the trace page).
"use strict";

const mmspMarkdown = (() => {
  // One inline token: `code`, **strong**, *em* or _em_, [label](http(s) URL).
  const INLINE = /`([^`\n]+)`|\*\*(?=\S)([^*]*?\S)\*\*|\*(?=\S)([^*\n]*?\S)\*|(?<![\w])_(?=\S)([^_\n]*?\S)_(?![\w])|\[([^\]\n]+)\]\((https?:\/\/[^\s()]+)\)/g;
  const FENCE = /^\s*```/;
  const ITEM = /^\s*(?:([-*+])|(\d{1,9})[.)])\s+(.*)$/;

  // The inline nodes of `text`, appended to `parent`; nested emphasis is rendered the same way.
  function inline(parent, text) {
    let last = 0;
    for (const match of text.matchAll(INLINE)) {
      if (match.index > last) {
        parent.append(text.slice(last, match.index));
      }
      const [, code, strong, em, em2, label, url] = match;
      if (code !== undefined) {
        const node = document.createElement("code");
        node.textContent = code;
        parent.append(node);
      } else if (strong !== undefined || em !== undefined || em2 !== undefined) {
        const node = document.createElement(strong !== undefined ? "strong" : "em");
        inline(node, strong !== undefined ? strong : em !== undefined ? em : em2);
        parent.append(node);
      } else {
        const node = document.createElement("a");
        node.setAttribute("href", url);
        node.setAttribute("rel", "noopener noreferrer nofollow");
        node.setAttribute("target", "_blank");
        inline(node, label);
        parent.append(node);
      }
      last = match.index + match[0].length;
    }
    if (last < text.length) {
      parent.append(text.slice(last));
    }
    return parent;
  }

  // `text` as a document fragment of blocks: <p>, <pre><code>, <ul>/<ol> of <li>.
  function render(text) {
    const fragment = document.createDocumentFragment();
    const lines = String(text).split(/\r?\n/);
    let paragraph = [];
    let list = null;
    const flush = () => {
      if (paragraph.length) {
        fragment.append(inline(document.createElement("p"), paragraph.join("\n")));
        paragraph = [];
      }
      list = null;
    };
    for (let i = 0; i < lines.length; i += 1) {
      const line = lines[i];
      if (FENCE.test(line)) {
        flush();
        const code = [];
        for (i += 1; i < lines.length && !FENCE.test(lines[i]); i += 1) {
          code.push(lines[i]);
        }
        const pre = document.createElement("pre");
        const node = document.createElement("code");
        node.textContent = code.join("\n");
        pre.append(node);
        fragment.append(pre);
        continue;
      }
      const item = ITEM.exec(line);
      if (item) {
        const kind = item[1] !== undefined ? "ul" : "ol";
        if (paragraph.length || !list || list.tagName.toLowerCase() !== kind) {
          flush();
          list = document.createElement(kind);
          if (kind === "ol" && item[2] !== "1") {
            list.setAttribute("start", String(Number(item[2])));
          }
          fragment.append(list);
        }
        list.append(inline(document.createElement("li"), item[3]));
      } else if (line.trim() === "") {
        flush();
      } else {
        if (list) {
          list = null;
        }
        paragraph.push(line);
      }
    }
    flush();
    return fragment;
  }

  return {render};
})();
