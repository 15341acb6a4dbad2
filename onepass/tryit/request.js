// The try-it page's request (docs/try-page.md): the form read into a /v1/systemone body, its
// preview, and the call itself, sent as any client would to this server only.
import {$, auth, state} from "./page.js";

export const PLACEHOLDER = "<image>";  // the asset's name; the image is read even where unnamed

export class Local extends Error {  // a problem found before sending, shown at its field
  constructor(field, message) { super(message); this.field = field; }
}

function question(node) {  // one question editor as the API's question
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

export function body() {
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
  const image = state.image;
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

export function preview() {
  try {
    const doc = body();
    if (doc.assets) doc.assets[PLACEHOLDER].data_base64 = `(${state.image.base64.length} base64 characters)`;
    $("body-view").textContent = JSON.stringify(doc, null, 2);
  } catch (e) {
    $("body-view").textContent = e.message;
  }
}

export async function post(doc) {
  const text = JSON.stringify(doc);
  const info = state.info;
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
