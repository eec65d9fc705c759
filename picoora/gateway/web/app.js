// The picoora web chat. No framework, no build step, nothing fetched from elsewhere.
// Safety rule: everything from the model, tools or memory becomes DOM text nodes (textContent,
// createTextNode); this file never assigns innerHTML, and links are made only for http(s) URLs.
"use strict";

const TOKEN_KEY = "picoora.token";
const SESSION_KEY = "picoora.session";
const $ = (id) => document.getElementById(id);

// -- the token, as Jupyter does it: /?token=... once, then this origin's storage ------------------

function takeTokenFromUrl() {
  const url = new URL(window.location.href);
  const token = url.searchParams.get("token");
  if (token) {
    localStorage.setItem(TOKEN_KEY, token);
    url.searchParams.delete("token");
    history.replaceState(null, "", url.pathname + url.search + url.hash); // out of the address bar and history
  }
  return localStorage.getItem(TOKEN_KEY);
}

class Unauthorized extends Error {}

async function api(path, options = {}) {
  const headers = { Authorization: "Bearer " + localStorage.getItem(TOKEN_KEY), ...(options.headers || {}) };
  if (options.body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(path, { ...options, headers, body: options.body === undefined ? undefined : JSON.stringify(options.body) });
  if (response.status === 401) throw new Unauthorized("wrong or missing token");
  if (options.raw) return response;
  const data = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error((data.error && data.error.message) || "HTTP " + response.status);
  return data;
}

// -- small DOM helpers ------------------------------------------------------------------------------

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  for (const child of children) node.append(child); // strings become text nodes
  return node;
}

// -- markdown to DOM nodes (never HTML): paragraphs, headings, lists, code, bold, italic, links ------

const SAFE_URL = /^https?:\/\/[^\s]+$/i;

function renderInline(text) {
  const out = document.createDocumentFragment();
  const pattern = /(`[^`\n]+`)|(\*\*[^*\n]+\*\*)|(\*[^*\n]+\*)|(\[[^\]\n]+\]\([^)\s]+\))/g;
  let last = 0;
  for (const match of text.matchAll(pattern)) {
    out.append(text.slice(last, match.index));
    const token = match[0];
    if (match[1]) out.append(el("code", { text: token.slice(1, -1) }));
    else if (match[2]) out.append(el("strong", { text: token.slice(2, -2) }));
    else if (match[3]) out.append(el("em", { text: token.slice(1, -1) }));
    else {
      const [, label, href] = token.match(/^\[([^\]]+)\]\(([^)]+)\)$/);
      if (SAFE_URL.test(href)) out.append(el("a", { href, rel: "noopener noreferrer nofollow", target: "_blank", text: label }));
      else out.append(token); // javascript:, data:, relative ...: shown as the text it is
    }
    last = match.index + token.length;
  }
  out.append(text.slice(last));
  return out;
}

const LIST_ITEM = /^\s*([-*]|\d+[.)])\s+/;

function renderMarkdown(text) {
  const out = document.createDocumentFragment();
  const blocks = text.split(/^```[^\n]*\n?/m); // odd pieces are fenced code
  let list = null; // the list the next paragraph may continue (models often put a blank line between items)
  blocks.forEach((block, index) => {
    if (index % 2 === 1) { list = null; out.append(el("pre", {}, el("code", { text: block.replace(/\n$/, "") }))); return; }
    for (const para of block.split(/\n{2,}/)) {
      if (!para.trim()) continue;
      const lines = para.split("\n");
      const heading = para.match(/^(#{1,6})\s+(.*)$/);
      if (heading && lines.length === 1) { list = null; out.append(el("h" + Math.min(6, heading[1].length + 2), {}, renderInline(heading[2]))); continue; }
      if (LIST_ITEM.test(lines[0])) { list = appendListItems(out, list, lines); continue; }
      if (list && /^\s+\S/.test(para)) { list.lastChild.append(paragraph(lines.map((line) => line.trim()))); continue; } // an item's indented paragraph
      list = null;
      out.append(paragraph(lines));
    }
  });
  return out;
}

function paragraph(lines) {
  const p = el("p");
  lines.forEach((line, i) => { if (i) p.append(el("br")); p.append(renderInline(line)); });
  return p;
}

// List lines go into ``list`` when it is of the same kind (a numbered list split by blank lines keeps
// counting), else into a new list that starts at its first number; a line that is not an item continues
// the item before it. Returns the list the lines went into.
function appendListItems(out, list, lines) {
  const ordered = /^\s*\d/.test(lines[0]);
  if (!list || (list.tagName === "OL") !== ordered) {
    list = el(ordered ? "ol" : "ul");
    const first = parseInt(lines[0], 10);
    if (ordered && first !== 1) list.setAttribute("start", String(first));
    out.append(list);
  }
  for (const line of lines) {
    if (LIST_ITEM.test(line)) list.append(el("li", {}, renderInline(line.replace(LIST_ITEM, ""))));
    else list.lastChild.append(el("br"), renderInline(line.trim()));
  }
  return list;
}

// -- one assistant turn on screen --------------------------------------------------------------------

class TurnView {
  constructor() {
    this.reasoning = el("pre", { class: "reasoning-text" });
    this.reasoningBox = el("details", { class: "reasoning", hidden: "" }, el("summary", { text: "reasoning" }), this.reasoning);
    this.tools = el("div", { class: "tools" });
    this.answer = el("div", { class: "answer" });
    this.meta = el("div", { class: "meta muted" });
    this.node = el("li", { class: "message assistant streaming" }, this.reasoningBox, this.tools, this.answer, this.meta);
    this.working = null;
    this.running = new Set(); // the tools running now, named by the indicator
    this.text = "";
    this.tokens = 0;
    this.toolLines = {};
  }

  token(text) {
    this.text += text;
    this.tokens += 1;
    this.answer.dataset.tokens = String(this.tokens);
    this.answer.textContent = this.text; // plain text while streaming; markdown once the answer is final
  }

  reason(text) { this.reasoningBox.hidden = false; this.reasoning.textContent += text; }

  toolStarted(id, name, args) {
    const result = el("pre", { class: "tool-result", text: "running..." });
    const line = el("details", { class: "tool-line" }, el("summary", { text: `${name}(${briefArgs(args)})` }), result);
    this.toolLines[id] = { line, result };
    this.tools.append(line);
    this.running.add(name);
  }

  toolFinished(id, name, result, ok) {
    if (!this.toolLines[id]) this.toolStarted(id, name, {});
    const entry = this.toolLines[id];
    this.running.delete(name);
    entry.result.textContent = result;
    if (!ok) entry.line.classList.add("failed");
  }

  notice(text) { this.tools.append(el("div", { class: "notice", text })); }

  // "Thinking... 12 s" and a Stop button while the turn runs: a model may think for a minute before its
  // first word, and an empty bubble looks like a hang.
  startWorking(onStop) {
    const label = el("span", { class: "working-label", text: "Thinking... 0 s" });
    const stop = el("button", { class: "stop-turn", type: "button", text: "Stop", onclick: () => { stop.disabled = true; onStop(); } });
    const started = Date.now();
    const timer = setInterval(() => { label.textContent = `${this.activity()}... ${Math.floor((Date.now() - started) / 1000)} s`; }, 1000);
    this.working = { node: el("div", { class: "working", role: "status" }, el("span", { class: "dot" }), label, stop), timer };
    this.node.append(this.working.node);
  }

  activity() {
    if (this.running.size) return "Running " + [...this.running].join(", ");
    return this.text ? "Answering" : "Thinking";
  }

  stopWorking() {
    if (!this.working) return;
    clearInterval(this.working.timer);
    this.working.node.remove();
    this.working = null;
  }

  // A turn stopped with Stop (or /stop), or one that failed, seen again in the history: what had streamed
  // stays, and a marker says it was not finished (it is not sent to the model again).
  stopped() { this.unfinished("stopped", "Stopped"); }

  failedEarlier() { this.unfinished("failed", "Failed"); }

  unfinished(kind, word) {
    this.stopWorking();
    this.node.classList.remove("streaming");
    this.node.classList.add(kind);
    this.answer.textContent = "";
    if (this.text) this.answer.append(renderMarkdown(this.text));
    this.meta.append(el("span", { class: "stopped-note", text: this.text ? `${word} before the end.` : `${word}: not answered. Send it again for an answer.` }));
  }

  final(text, stopReason, turnId) {
    this.stopWorking();
    this.node.classList.remove("streaming");
    this.answer.textContent = "";
    this.answer.append(renderMarkdown(text));
    if (stopReason !== "answer") this.node.classList.add("failed");
    if (turnId) this.meta.append(el("button", { class: "link why-button", type: "button", text: "why?", onclick: () => showWhy(turnId) }));
    if (turnId && window.picooraDocs) window.picooraDocs.showSources(this.meta, turnId); // docs.js: cited sources
    if (stopReason !== "answer") this.meta.append(el("span", { text: stopReason }));
  }
}

function briefArgs(args) {
  const text = JSON.stringify(args || {});
  return text.length > 80 ? text.slice(0, 77) + "..." : text.slice(1, -1);
}

// -- server-sent events from a fetch body (EventSource cannot POST or send the token) -----------------

async function* sseEvents(response) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const raw = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const data = raw.split("\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("\n");
      if (data) yield JSON.parse(data);
    }
  }
}

// -- the chat ------------------------------------------------------------------------------------------

let session = localStorage.getItem(SESSION_KEY) || newSessionId();

function newSessionId() { return Date.now().toString(36) + Math.random().toString(36).slice(2, 8); }

function addUser(text) { $("messages").append(el("li", { class: "message user", text })); scrollDown(); }

function scrollDown() { const list = $("messages"); list.scrollTop = list.scrollHeight; }

const MEMORY_TOOLS = new Set(["remember", "forget"]); // the memory panel is refreshed after these ran

async function send(text) {
  const chat = session; // the turn stays this chat's if another one is opened meanwhile
  nameChat(chat, text);
  showTitle(chat);
  addUser(text);
  const view = new TurnView();
  $("messages").append(view.node);
  view.startWorking(() => stopTurn(chat));
  $("send").disabled = true;
  let memoryChanged = false;
  try {
    const response = await api("/v1/chat", { method: "POST", body: { session_id: chat, text, stream: true }, raw: true });
    if (!response.ok) {
      const data = await response.json().catch(() => ({}));
      throw new Error((data.error && data.error.message) || "HTTP " + response.status);
    }
    for await (const event of sseEvents(response)) {
      if (event.type === "token") view.token(event.text);
      else if (event.type === "reasoning") view.reason(event.text);
      else if (event.type === "tool_call_started") view.toolStarted(event.call_id, event.name, event.arguments);
      else if (event.type === "tool_call_finished") {
        view.toolFinished(event.call_id, event.name, event.result, event.ok);
        memoryChanged = memoryChanged || (event.ok && MEMORY_TOOLS.has(event.name));
      } else if (event.type === "notice") view.notice(event.text);
      else if (event.type === "final_answer") view.final(event.text, event.stop_reason, event.turn_id);
      else if (event.type === "stopped") view.stopped();
      else if (event.type === "error" && !event.turn_id) view.final(event.message, "error", "");
      scrollDown();
    }
  } catch (err) {
    if (err instanceof Unauthorized) return askForToken(err.message);
    view.final(String(err.message || err), "error", "");
  } finally {
    view.stopWorking();
    $("send").disabled = false;
  }
  if (memoryChanged) searchMemory($("memory-query").value.trim());
  loadSessions();
}

async function stopTurn(chat) {
  try { await api("/v1/sessions/" + encodeURIComponent("web:" + chat) + "/stop", { method: "POST" }); } catch (err) { handle(err); }
}

async function loadHistory() {
  $("messages").textContent = "";
  $("session-title").textContent = chatTitle(session);
  let data;
  try { data = await api("/v1/sessions/" + encodeURIComponent("web:" + session)); } catch (err) { return handle(err); }
  let view = null;
  for (const { message } of data.entries) {
    if (message.role === "user") { addUser(message.content); view = null; continue; }
    if (!view) { view = new TurnView(); $("messages").append(view.node); }
    if (message.role === "assistant" && message.cancelled && !(message.tool_calls || []).length) {
      if (CANCELLED_MARK.test(message.content)) { view.stopped(); view = null; }
      else if (FAILED_MARK.test(message.content)) { view.failedEarlier(); view = null; }
      else view.text += message.content; // what had streamed
    } else if (message.role === "assistant") {
      for (const call of message.tool_calls || []) view.toolStarted(call.id, call.name, call.arguments);
      if (message.reasoning) view.reason(message.reasoning);
      if (message.content && !(message.tool_calls || []).length) view.final(message.content, "answer", "");
    } else if (message.role === "tool") view.toolFinished(message.tool_call_id, message.name || "tool", message.content, true);
  }
  scrollDown();
  const first = data.entries.find((e) => e.message.role === "user");
  if (first && !titles()[session]) { // opened in another browser, or named before titles were kept
    nameChat(session, first.message.content);
    showTitle(session);
  }
  loadModel();
}

// -- chat names: the first message, kept in this browser (a chat opened elsewhere is named from its history)

const TITLES_KEY = "picoora.titles";
const CANCELLED_MARK = /^\[the turn was cancelled/; // the agent's closing message of a cancelled turn
const FAILED_MARK = /^\[the turn failed/; // and of a failed one
function titles() {
  try { return JSON.parse(localStorage.getItem(TITLES_KEY) || "{}"); } catch { return {}; } // hand-edited: start afresh
}

function chatTitle(id) { return titles()[id] || "New chat"; }

function nameChat(id, text) {
  const all = titles();
  if (all[id]) return;
  const line = text.trim().split("\n")[0];
  all[id] = line.length > 48 ? line.slice(0, 47) + "…" : line;
  localStorage.setItem(TITLES_KEY, JSON.stringify(all));
}

function showTitle(id) {
  if (id === session) $("session-title").textContent = chatTitle(id);
  for (const item of $("session-list").children) if (item.dataset.session === id) item.querySelector(".open").textContent = chatTitle(id);
}

function forgetTitle(id) { const all = titles(); delete all[id]; localStorage.setItem(TITLES_KEY, JSON.stringify(all)); }

async function titleFromHistory(id) {
  let data;
  try { data = await api("/v1/sessions/" + encodeURIComponent("web:" + id)); } catch (err) { return handle(err); }
  const first = data.entries.find((e) => e.message.role === "user");
  if (!first) return;
  nameChat(id, first.message.content);
  showTitle(id);
}

// -- the session's model: shown, and switched (owner only) ---------------------------------------------

async function loadModel() {
  const path = "/v1/sessions/" + encodeURIComponent("web:" + session) + "/model";
  try {
    const model = await api(path);
    $("model-input").value = model.provider + "/" + model.model;
    $("model-note").textContent = "";
  } catch (err) { handle(err); }
  try {
    const listed = await api("/v1/models");
    const options = $("model-options");
    options.textContent = "";
    options.append(el("option", { value: "default", label: "the configured default" }));
    for (const card of listed.data) if (card.id !== "picoora") options.append(el("option", { value: card.id }));
  } catch (err) { handle(err); }
}

const PROVIDERS = ["ollama", "openai", "anthropic"];

async function switchModel(name) {
  const [head, ...rest] = name.split("/");
  const body = PROVIDERS.includes(head) && rest.length ? { provider: head, model: rest.join("/") } : { model: name };
  const path = "/v1/sessions/" + encodeURIComponent("web:" + session) + "/model";
  try {
    const model = await api(path, name === "default" ? { method: "DELETE" } : { method: "PUT", body }); // as /model default
    $("model-input").value = model.provider + "/" + model.model;
    $("model-note").textContent = "this chat now answers with " + model.model;
  } catch (err) {
    if (err instanceof Unauthorized) return askForToken(err.message);
    $("model-note").textContent = String(err.message || err); // nothing changed: the server kept the model
  }
}

async function loadSessions() {
  let sessions;
  try { sessions = await api("/v1/sessions"); } catch (err) { return handle(err); }
  const list = $("session-list");
  list.textContent = "";
  const ids = sessions.filter((s) => s.key.startsWith("web:")).map((s) => s.key.slice(4));
  if (!ids.includes(session)) ids.unshift(session);
  const named = titles();
  for (const id of ids) {
    const open = el("button", { class: "open", type: "button", title: "web:" + id, text: chatTitle(id), onclick: () => switchTo(id) });
    const item = el("li", { class: id === session ? "current" : "", "data-session": id }, open,
      el("button", { class: "link delete-session", type: "button", title: "delete this chat", text: "delete", onclick: () => removeSession(id) }));
    list.append(item);
    if (!named[id] && id !== session) titleFromHistory(id);
  }
}

function switchTo(id) {
  session = id;
  localStorage.setItem(SESSION_KEY, id);
  for (const item of $("session-list").children) item.classList.toggle("current", item.dataset.session === id); // at once, before the list reloads
  loadHistory();
  loadSessions();
}

async function removeSession(id) {
  try { await api("/v1/sessions/" + encodeURIComponent("web:" + id), { method: "DELETE" }); } catch (err) { return handle(err); }
  forgetTitle(id);
  if (id === session) switchTo(newSessionId()); else loadSessions();
}

// -- memory panel and the "why" view ------------------------------------------------------------------

async function searchMemory(query) {
  const path = query ? "/v1/memory?limit=20&q=" + encodeURIComponent(query) : "/v1/memory?limit=50";
  let data;
  try { data = await api(path); } catch (err) { return handle(err); }
  const list = $("memory-list");
  list.textContent = "";
  $("memory-note").textContent = data.note || (query ? `${data.matches.length} match(es)` : `${data.memories.length} memories`);
  const rows = query ? data.matches : data.memories.map((memory) => ({ memory, score: null }));
  for (const { memory, score } of rows) {
    const item = el("li", { class: "memory-item" });
    if (score !== null) item.append(el("span", { class: "score", text: (score * 100).toFixed(1) + "%" }));
    item.append(el("span", { class: "memory-text", text: memory.content }));
    item.append(el("span", { class: "memory-source muted", text: " · " + memorySource(memory) }));
    item.append(el("button", { type: "button", class: "forget", text: "forget", onclick: () => forget(memory.id, query) }));
    list.append(item);
  }
}

// Where a memory came from and until when it holds, as the CLI's `memory list` says it.
function memorySource(memory) {
  const p = memory.provenance || { how: "unknown" };
  let text = p.how + (p.person ? " by " + p.person : "") + (p.session ? " in " + p.session : "");
  if (memory.expires_at) text += ", until " + memory.expires_at.slice(0, 16).replace("T", " ");
  return text;
}

async function forget(id, query) {
  try { await api("/v1/memory/" + encodeURIComponent(id), { method: "DELETE" }); } catch (err) { return handle(err); }
  searchMemory(query);
}

async function showWhy(turnId) {
  const body = $("why-body");
  body.textContent = "";
  $("why").hidden = false;
  let trace;
  try { trace = await api("/v1/traces/" + encodeURIComponent(turnId)); } catch (err) { body.append(el("p", { class: "error", text: String(err.message) })); return; }
  body.append(el("p", { text: `${trace.provider}/${trace.model}, ${trace.model_calls} model call(s), ${Math.round(trace.latency_ms)} ms, ${trace.prompt_tokens}+${trace.completion_tokens} tokens` }));
  body.append(el("h3", { text: "memories recalled" }));
  const recalled = el("ul", { class: "why-recalled" });
  for (const m of trace.recalled) recalled.append(el("li", { text: `${(m.score * 100).toFixed(1)}%  ${m.content}${m.provenance ? "  (" + m.provenance + ")" : ""}` }));
  if (!trace.recalled.length) recalled.append(el("li", { class: "muted", text: trace.recall_note || "none" }));
  body.append(recalled);
  body.append(el("h3", { text: "tools run" }));
  const tools = el("ul", { class: "why-tools" });
  for (const call of trace.tool_calls) tools.append(el("li", { text: `${call.ok ? "ok" : "failed"}  ${call.name}(${briefArgs(call.arguments)}) ${Math.round(call.duration_ms)} ms` }));
  if (!trace.tool_calls.length) tools.append(el("li", { class: "muted", text: "none" }));
  body.append(tools);
  if (trace.error) body.append(el("p", { class: "error", text: trace.error }));
}

// -- start ---------------------------------------------------------------------------------------------

function handle(err) {
  if (err instanceof Unauthorized) askForToken(err.message);
  else console.error(err);
}

function askForToken(message) {
  $("app").hidden = true;
  $("token-form").hidden = false;
  $("token-error").textContent = message || "";
  $("token-input").focus();
}

async function start() {
  $("token-form").hidden = true;
  try { await api("/v1/sessions"); } catch (err) { return handle(err); }
  $("app").hidden = false;
  localStorage.setItem(SESSION_KEY, session);
  loadSessions();
  loadHistory();
  searchMemory("");
  $("input").focus();
}

document.addEventListener("DOMContentLoaded", () => {
  $("token-form").addEventListener("submit", (e) => {
    e.preventDefault();
    localStorage.setItem(TOKEN_KEY, $("token-input").value.trim());
    $("token-input").value = "";
    start();
  });
  $("composer").addEventListener("submit", (e) => {
    e.preventDefault();
    const text = $("input").value.trim();
    if (!text || $("send").disabled) return;
    $("input").value = "";
    send(text);
  });
  $("input").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); $("composer").requestSubmit(); }
  });
  $("new-session").addEventListener("click", () => switchTo(newSessionId()));
  $("memory-form").addEventListener("submit", (e) => { e.preventDefault(); searchMemory($("memory-query").value.trim()); });
  $("model-form").addEventListener("submit", (e) => { e.preventDefault(); const name = $("model-input").value.trim(); if (name) switchModel(name); });
  $("why-close").addEventListener("click", () => { $("why").hidden = true; });
  if (takeTokenFromUrl()) start(); else askForToken("");
});
