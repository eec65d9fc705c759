// The knowledge base in the web chat, kept apart from app.js: an "add file" button beside the composer
// (POST /v1/docs, multipart) and, under an answer, the sources its search_docs calls used (from the trace).
// Same safety rule as app.js: text nodes only, never innerHTML.
"use strict";

window.picooraDocs = (() => {
  const token = () => localStorage.getItem("picoora.token");

  function line(text, cls) {
    const item = document.createElement("li");
    item.className = "message notice " + (cls || "");
    item.textContent = text;
    document.getElementById("messages").append(item);
  }

  async function upload(file) {
    const form = new FormData();
    form.append("file", file, file.name);
    try {
      const response = await fetch("/v1/docs", { method: "POST", headers: { Authorization: "Bearer " + token() }, body: form });
      const data = await response.json().catch(() => ({}));
      if (!response.ok) return line(`Could not add ${file.name}: ${(data.error && data.error.message) || response.status}`, "failed");
      line(`${file.name}: ${data.status} (${data.document.chunks} chunks)`);
    } catch (err) {
      line(`Could not add ${file.name}: ${err.message || err}`, "failed");
    }
  }

  function addButton() {
    const composer = document.getElementById("composer");
    const input = document.createElement("input");
    input.type = "file";
    input.id = "doc-file";
    input.hidden = true;
    input.accept = ".txt,.md,.html,.htm,.pdf,.docx";
    input.addEventListener("change", async () => {
      for (const file of input.files) await upload(file);
      input.value = "";
    });
    const button = document.createElement("button");
    button.type = "button";
    button.id = "add-doc";
    button.className = "link";
    button.title = "add a document to search (txt, md, html, pdf, docx)";
    button.textContent = "add file";
    button.addEventListener("click", () => input.click());
    composer.insertBefore(button, document.getElementById("send"));
    composer.append(input);
  }

  // Under an answer: the chunks its search_docs calls found, as "title, page N" (or "chunk N").
  async function showSources(meta, turnId) {
    let trace;
    try {
      const response = await fetch("/v1/traces/" + encodeURIComponent(turnId), { headers: { Authorization: "Bearer " + token() } });
      if (!response.ok) return;
      trace = await response.json();
    } catch (err) { return; }
    const used = trace.tool_calls.filter((c) => c.name === "search_docs").flatMap((c) => c.used || []);
    if (!used.length) return;
    const seen = new Set();
    const sources = document.createElement("div");
    sources.className = "sources";
    sources.append("Sources: ");
    for (const u of used) {
      const label = `${u.title || u.source}, ${u.page ? "page " + u.page : "chunk " + (u.chunk + 1)}`;
      if (seen.has(label)) continue;
      seen.add(label);
      const item = document.createElement("span");
      item.className = "source";
      item.title = `${u.source} (${(u.score * 100).toFixed(0)}% match)`;
      item.textContent = label;
      sources.append(item, " ");
    }
    meta.append(sources);
  }

  document.addEventListener("DOMContentLoaded", addButton);
  return { showSources, upload };
})();
