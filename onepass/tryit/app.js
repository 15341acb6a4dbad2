// The try-it page (docs/try-page.md): composes a /v1/systemone request, sends it as any client
// would, and draws each answer. No library, nothing fetched but this server's own routes.
// The API key lives in the password field and this script's calls only: never in storage,
// cookies, the URL or the page's text.
"use strict";
(() => {
  const $ = (id) => document.getElementById(id);
  const PLACEHOLDER = "<image>";  // the asset's name; the image is read even where unnamed
  // the raw read: the profile's calibration off (no temperature, prior, floor or re-read)
  const RAW = {temperature: {noul: 1, choice: 1, score: 1}, noul_floor: 0, reread_below: 0,
               label_prior: {}};
  let info = null, image = null, example = "text", counter = 0;

  function el(tag, attrs, ...children) {  // text goes in as text, never as markup
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") node.className = v; else node.setAttribute(k, v);
    }
    for (const c of children) node.append(c);
    return node;
  }

  function status(text, tone) {
    $("status").textContent = text;
    $("status").className = "status " + (tone || "");
  }

  function auth() {
    const key = $("key").value;
    return key ? {Authorization: "Bearer " + key} : {};
  }

  // -- what this server serves ---------------------------------------------------------------
  async function loadInfo() {
    let doc;
    try {
      const r = await fetch("/try/info", {headers: auth(), cache: "no-store"});
      doc = await r.json();
    } catch (e) {
      status("cannot reach the server: " + e.message, "bad");
      return void setTimeout(loadInfo, 3000);
    }
    info = doc;
    $("key-section").hidden = !doc.auth;
    if (!doc.authorized) {
      status("this server needs an API key: enter it above", "warn");
      return;
    }
    const served = Object.entries(doc.kinds || {}).filter(([, why]) => why === null);
    const refused = Object.entries(doc.kinds || {}).filter(([, why]) => why !== null);
    fillSelect($("add-type"), served.map(([t]) => t));
    fillSelect($("attention"), doc.attention_modes || [], true);
    $("image-row").hidden = !doc.vision;
    example = doc.vision ? "vision" : "text";
    $("example").textContent = `Load the ${doc.vision ? "image" : "README"} example`;
    $("add").disabled = !doc.kinds;
    if (doc.phase !== "ready") {
      status(`the server is ${doc.phase}; this page asks again shortly`, "warn");
      return void setTimeout(loadInfo, 2000);
    }
    status(`ready: ${served.map(([t]) => t).join(", ")}` + (doc.vision ? "; images read" : "")
           + refused.map(([t, why]) => `; ${t} refused (${why})`).join(""), "ok");
  }

  function fillSelect(select, values, keepFirst) {
    const chosen = select.value;
    while (select.options.length > (keepFirst ? 1 : 0)) select.remove(select.options.length - 1);
    for (const v of values) select.append(el("option", {value: v}, v));
    if (values.includes(chosen)) select.value = chosen;
  }

  // -- the question editors --------------------------------------------------------------------
  function addQuestion(id, q) {
    const types = [...$("add-type").options].map((o) => o.value);
    if (!types.includes(q.type)) types.push(q.type);  // an example's type, even if refused
    const type = el("select", {class: "q-type", "aria-label": "type"});
    for (const t of types) type.append(el("option", {value: t}, t));
    type.value = q.type;
    const box = el("select", {class: "q-box", "aria-label": "box mode"});
    for (const m of ["", "generate", "edges", "hybrid"]) box.append(el("option", {value: m}, m || "profile mode"));
    box.value = (q.box && q.box.mode) || "";
    const node = el("div", {class: "question", "data-n": String(++counter)},
      el("div", {class: "row"},
        el("input", {class: "q-id", "aria-label": "question id", value: id, spellcheck: "false"}),
        type, box, el("span", {class: "spacer"}),
        el("button", {type: "button", class: "q-remove"}, "Remove")),
      el("textarea", {class: "q-instructions", rows: "2", "aria-label": "instructions",
                      placeholder: "instructions"}),
      el("textarea", {class: "q-criteria", rows: "3", "aria-label": "criteria", spellcheck: "false"}),
      el("p", {class: "error q-error"}));
    node.querySelector(".q-instructions").value = q.instructions || "";
    node.querySelector(".q-criteria").value = criteriaText(q);
    node.querySelector(".q-remove").addEventListener("click", () => { node.remove(); preview(); });
    type.addEventListener("change", () => shape(node));
    $("questions").append(node);
    shape(node);
  }

  function shape(node) {  // the fields a type takes
    const t = node.querySelector(".q-type").value;
    const criteria = node.querySelector(".q-criteria");
    criteria.hidden = !(t === "choice" || t === "score");
    criteria.placeholder = t === "choice" ? "one option a line: name: description"
      : "one level a line, lowest first";
    node.querySelector(".q-box").hidden = t !== "box";
  }

  function criteriaText(q) {
    if (Array.isArray(q.criteria)) return q.criteria.map((l) => typeof l === "string" ? l : JSON.stringify(l)).join("\n");
    if (q.criteria && typeof q.criteria === "object") {
      return Object.entries(q.criteria).map(([k, v]) => v === null ? k : `${k}: ${v}`).join("\n");
    }
    return "";
  }

  function question(node) {
    const t = node.querySelector(".q-type").value, q = {type: t};
    const text = node.querySelector(".q-instructions").value.trim();
    if (text) q.instructions = text;
    const lines = node.querySelector(".q-criteria").value.split("\n").map((l) => l.trim()).filter(Boolean);
    if (t === "choice") {
      q.criteria = {};
      for (const line of lines) {
        const at = line.indexOf(":");
        if (at < 0) q.criteria[line] = null;
        else q.criteria[line.slice(0, at).trim()] = line.slice(at + 1).trim() || null;
      }
    } else if (t === "score") {
      q.criteria = lines;
    } else if (t === "box" && node.querySelector(".q-box").value) {
      q.box = {mode: node.querySelector(".q-box").value};
    }
    return q;
  }

  // -- the request ---------------------------------------------------------------------------
  class Local extends Error {  // a problem found before sending, shown at its field
    constructor(field, message) { super(message); this.field = field; }
  }

  function body() {
    const doc = {model: "jev-latest"};
    const text = $("state").value;
    if ($("state-format").value === "json") {
      try { doc.state = JSON.parse(text); } catch (e) { throw new Local("state", "not JSON: " + e.message); }
    } else {
      doc.state = text;
    }
    doc.questions = {};
    for (const node of $("questions").children) {
      const id = node.querySelector(".q-id").value;
      if (id in doc.questions) throw new Local("questions", `two questions are named ${JSON.stringify(id)}`);
      doc.questions[id] = question(node);
    }
    if (image) doc.assets = {[PLACEHOLDER]: {type: "image", format: image.format, data_base64: image.base64}};
    if ($("attention").value) doc.attention_mode = $("attention").value;
    const kwargs = {}, layout = {}, reasoning = {};
    if ($("orders").value) layout.orders = Number($("orders").value);
    if ($("orders-as-reads").checked) layout.orders_as_reads = true;
    if ($("both-directions").checked) layout.both_directions = true;
    if ($("reasoning").value) reasoning.mode = $("reasoning").value;
    if ($("budget").value) reasoning.budget_ms = Number($("budget").value);
    if ($("trace").checked) reasoning.trace = true;
    if (Object.keys(layout).length) kwargs.layout = layout;
    if (Object.keys(reasoning).length) kwargs.reasoning = reasoning;
    if (Object.keys(kwargs).length) doc.kwargs = kwargs;
    return doc;
  }

  function preview() {
    try {
      const doc = body();
      if (doc.assets) doc.assets[PLACEHOLDER].data_base64 = `(${image.base64.length} base64 characters)`;
      $("body-view").textContent = JSON.stringify(doc, null, 2);
    } catch (e) {
      $("body-view").textContent = e.message;
    }
  }

  async function post(doc) {
    const text = JSON.stringify(doc);
    const limit = info && info.limits && info.limits.max_body_bytes;
    const size = new TextEncoder().encode(text).length;
    if (limit && size > limit) throw new Local("body", `this body is ${size} bytes; this server takes at most ${limit}`);
    const started = performance.now();
    const r = await fetch("/v1/systemone", {method: "POST", body: text, cache: "no-store",
      credentials: "omit", headers: {"Content-Type": "application/json", ...auth()}});
    const reply = await r.json().catch(() => null);
    return {status: r.status, ms: performance.now() - started, doc: reply,
            id: r.headers.get("x-request-id"), retry: r.headers.get("retry-after-ms")};
  }

  async function send(event) {
    event.preventDefault();
    clearErrors();
    $("send").disabled = true;
    status("sending…", "");
    try {
      const doc = body();
      const first = await post(doc);
      if (first.status !== 200) return void showErrors(first);
      let raw = null;
      if ($("raw").checked) {
        const second = await post({...doc, kwargs: {...(doc.kwargs || {}), calibration: RAW}});
        if (second.status !== 200) return void showErrors(second);
        raw = second;
      }
      show(first, raw);
      status("answered", "ok");
    } catch (e) {
      if (e instanceof Local) showAt(e.field, e.message);
      else showAt("body", "the request failed: " + e.message);
      status("not sent", "bad");
    } finally {
      $("send").disabled = false;
    }
  }

  // -- errors, at the field they name ------------------------------------------------------------
  function clearErrors() {
    for (const p of document.querySelectorAll(".error")) p.textContent = "";
    for (const n of document.querySelectorAll(".invalid")) n.classList.remove("invalid");
  }

  function target(loc) {  // the error line for a `loc` of the contract's detail[]
    const [, field, id] = loc;
    if (field === "questions" && id !== undefined) {
      for (const node of $("questions").children) {
        if (node.querySelector(".q-id").value === String(id)) {
          node.classList.add("invalid");
          return node.querySelector(".q-error");
        }
      }
    }
    const name = {state: "state", questions: "questions", kwargs: "kwargs", assets: "image",
                  images: "image", attention_mode: "attention_mode"}[field] || "body";
    return document.querySelector(`[data-error-for="${name}"]`);
  }

  function showAt(field, message) {
    const p = document.querySelector(`[data-error-for="${field}"]`) || $("error");
    p.textContent += (p.textContent ? "\n" : "") + message;
  }

  function showErrors(reply) {
    const detail = reply.doc && reply.doc.detail;
    if (Array.isArray(detail)) {
      for (const d of detail) {
        const loc = Array.isArray(d.loc) ? d.loc : ["body"];
        const p = target(loc);
        p.textContent += (p.textContent ? "\n" : "") + `${loc.slice(1).join(".")}: ${d.msg}`;
      }
    } else {
      const message = (detail && detail.message) || `HTTP ${reply.status}`;
      const retry = reply.retry ? ` (retry in ${reply.retry} ms)` : "";
      showAt(reply.status === 401 || reply.status === 403 ? "key" : "body", message + retry);
    }
    status(`HTTP ${reply.status}: see the fields marked`, "bad");
  }

  // -- the answers ---------------------------------------------------------------------------
  function options(a) {  // [[option, probability]] of an answer, in the response's order
    if (a.type === "noul") return [["yes", a.noul], ["no", 1 - a.noul]];
    if (a.type === "choice") return Object.entries(a.probabilities);
    if (a.type === "score") {
      return Object.entries(a.probabilities).map(([k, p]) => {
        const level = a.legend && a.legend[k];
        return [`${k} ${typeof level === "string" ? level : JSON.stringify(level)}`, p, k];
      });
    }
    return [];
  }

  function bars(a, raw) {
    const list = el("div", {class: "bars"});
    const rawOf = new Map(raw ? options(raw) : []);
    const top = Math.max(...options(a).map(([, p]) => p));
    for (const [name, p, key] of options(a)) {
      const row = el("div", {class: "bar" + (p === top ? " top" : ""), "data-option": key ?? name,
                             "data-p": String(p)},
        el("span", {class: "name"}, name),
        el("span", {class: "track"}, el("span", {class: "fill"})),
        el("span", {class: "value"}, p.toFixed(3)));
      row.querySelector(".fill").style.width = `${(100 * p).toFixed(2)}%`;
      if (rawOf.has(name)) {
        const q = rawOf.get(name), track = el("span", {class: "raw-fill"});
        track.style.width = `${(100 * q).toFixed(2)}%`;
        row.querySelector(".track").append(track);
        row.setAttribute("data-raw-p", String(q));
        row.querySelector(".value").append(el("span", {class: "raw-value"}, ` raw ${q.toFixed(3)}`));
      }
      list.append(row);
    }
    return list;
  }

  function summary(a) {
    const parts = [];
    if (a.type === "noul") parts.push(`P(yes) ${a.noul.toFixed(3)}`);
    if (a.type === "choice") parts.push(`choice ${a.choice}`);
    if (a.type === "score") parts.push(`score ${a.score.toFixed(3)}`);
    if (a.type === "number") parts.push(`number ${a.number} (written "${a.text}")`);
    if (a.type === "box") {
      parts.push(a.box ? `box left ${a.box.left.toFixed(3)} top ${a.box.top.toFixed(3)} right ${a.box.right.toFixed(3)} bottom ${a.box.bottom.toFixed(3)}` : "no box");
      if (a.found === false) parts.push("not found (the box is the whole image)");
      if (typeof a.present === "number") parts.push(`present ${a.present.toFixed(3)}`);
    }
    if (typeof a.confidence === "number") parts.push(`confidence ${a.confidence.toFixed(3)}`);
    return parts.join(" · ");
  }

  function drawBoxes(answers) {
    for (const old of document.querySelectorAll(".box-overlay")) old.remove();
    for (const [id, a] of Object.entries(answers)) {
      if (a.type !== "box" || !a.box || !image) continue;
      const b = a.box, frame = el("div", {class: "box-overlay", title: id}, el("span", {}, id));
      Object.assign(frame.style, {left: `${100 * b.left}%`, top: `${100 * b.top}%`,
        width: `${100 * (b.right - b.left)}%`, height: `${100 * (b.bottom - b.top)}%`});
      $("image-view").append(frame);
    }
  }

  function show(reply, raw) {
    const doc = reply.doc, out = $("answers");
    out.replaceChildren();
    for (const [id, a] of Object.entries(doc.answers)) {
      const other = raw && raw.doc.answers[id];
      out.append(el("div", {class: "answer", "data-qid": id},
        el("h3", {}, id, el("span", {class: "type"}, a.type)),
        el("p", {class: "summary"}, summary(a)), bars(a, other)));
    }
    drawBoxes(doc.answers);
    const u = doc.usage || {};
    $("meta").textContent = [`HTTP ${reply.status}`, `${Math.round(reply.ms)} ms`,
      `${u.input_tokens} input tokens`, `${u.output_tokens} output tokens`,
      `attention ${doc.x_attention_mode}`, `model ${doc.model}`,
      raw ? `raw read ${Math.round(raw.ms)} ms` : "", reply.id || ""].filter(Boolean).join(" · ");
    $("meta").dataset.ms = String(reply.ms);
    $("effort").hidden = !doc.x_effort_used;
    $("effort-view").textContent = doc.x_effort_used ? effortText(doc.x_effort_used) : "";
    $("thoughts").hidden = !doc.x_thoughts;
    $("thoughts-view").replaceChildren(...(doc.x_thoughts || []).map((t) =>
      el("div", {class: "thought"}, el("b", {}, `${t.question ?? ""} `), t.text)));
    $("response-view").textContent = JSON.stringify(doc, null, 2);
    $("result").hidden = false;
  }

  function effortText(e) {
    const lines = [];
    if (e.reread) lines.push(`re-read below ${e.reread.below}: ${JSON.stringify(e.reread.questions)} (first read weighs ${e.reread.first_weight})`);
    if (e.reasoning) {
      lines.push(`reasoning ${e.reasoning.mode}, at most ${e.reasoning.token_cap} tokens a thought`);
      for (const q of e.reasoning.questions) {
        lines.push(`  ${q.question}: ` + (q.thought ? `thought ${q.tokens} tokens${q.cut ? ", cut" : ""}` : "no thought"));
      }
    }
    for (const s of e.state_selection || []) {
      lines.push(`state cut for ${s.question}: kept ${s.kept_tokens} of ${s.total_tokens} tokens (${s.method})`);
    }
    return lines.join("\n");
  }

  // -- the example and the image ---------------------------------------------------------------
  function loadExample() {
    const doc = info.examples[example];
    const json = typeof doc.state !== "string";
    $("state-format").value = json ? "json" : "text";
    $("state").value = json ? JSON.stringify(doc.state, null, 2) : doc.state;
    $("questions").replaceChildren();
    for (const [id, q] of Object.entries(doc.questions)) addQuestion(id, q);
    if (example === "vision") setImage("png", drawShapes());
    clearErrors();
    preview();
  }

  function drawShapes() {  // the vision example's picture: a red circle left of a blue square
    const c = el("canvas", {width: "96", height: "64"}), g = c.getContext("2d");
    g.fillStyle = "#ffffff"; g.fillRect(0, 0, 96, 64);
    g.fillStyle = "#d02020"; g.beginPath(); g.arc(26, 32, 14, 0, 2 * Math.PI); g.fill();
    g.fillStyle = "#2040d0"; g.fillRect(56, 18, 28, 28);
    return c.toDataURL("image/png");
  }

  function setImage(format, url) {
    image = url ? {format, url, base64: url.slice(url.indexOf(",") + 1)} : null;
    $("image-view").hidden = !image;
    $("image-preview").src = image ? image.url : "";
    for (const old of document.querySelectorAll(".box-overlay")) old.remove();
    preview();
  }

  function readImage() {
    const file = $("image").files[0];
    $("image").value = "";  // the bytes are kept in `image`; the input may pick the same again
    if (!file) return;
    const format = {"image/png": "png", "image/jpeg": "jpeg"}[file.type];
    if (!format) return void showAt("image", `${file.type || "this file"} is not PNG or JPEG`);
    const limit = info && info.limits && info.limits.max_body_bytes;
    if (limit && file.size * 4 / 3 > limit) return void showAt("image", `${file.size} bytes is over this server's body limit (${limit} bytes, base64 adds a third)`);
    const reader = new FileReader();
    reader.onload = () => setImage(format, reader.result);
    reader.readAsDataURL(file);
  }

  document.addEventListener("DOMContentLoaded", async () => {
    $("form").addEventListener("submit", send);
    $("form").addEventListener("input", preview);
    $("form").addEventListener("change", preview);
    $("key").addEventListener("change", loadInfo);
    $("image").addEventListener("change", readImage);
    $("image-clear").addEventListener("click", () => setImage(null, null));
    $("add").addEventListener("click", () => {
      const limit = info && info.limits && info.limits.max_questions;
      if (limit && $("questions").children.length >= limit) return void showAt("questions", `this server takes at most ${limit} questions`);
      addQuestion(`q${$("questions").children.length + 1}`, {type: $("add-type").value || "noul"});
      preview();
    });
    $("example").addEventListener("click", loadExample);
    await loadInfo();
    if (info && info.examples) loadExample();
  });
})();
