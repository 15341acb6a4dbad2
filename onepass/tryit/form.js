// The try-it page's form (docs/try-page.md): built from what this server serves (/try/info),
// the question editors, the example one click away and the image sent with the state.
import {$, auth, clearErrors, el, showAt, state, status} from "./page.js";
import {preview} from "./request.js";

let counter = 0;

// -- what this server serves ---------------------------------------------------------------
export async function loadInfo() {
  let doc;
  try {
    const r = await fetch("/try/info", {headers: auth(), cache: "no-store"});
    doc = await r.json();
  } catch (e) {
    status("cannot reach the server: " + e.message, "bad");
    return void setTimeout(loadInfo, 3000);
  }
  state.info = doc;
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
  state.example = doc.vision ? "vision" : "text";
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
export function addQuestion(id, q) {
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

// -- the example and the image ---------------------------------------------------------------
export function loadExample() {
  const doc = state.info.examples[state.example];
  const json = typeof doc.state !== "string";
  $("state-format").value = json ? "json" : "text";
  $("state").value = json ? JSON.stringify(doc.state, null, 2) : doc.state;
  $("questions").replaceChildren();
  for (const [id, q] of Object.entries(doc.questions)) addQuestion(id, q);
  if (state.example === "vision") setImage("png", drawShapes());
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

export function setImage(format, url) {
  const image = state.image = url ? {format, url, base64: url.slice(url.indexOf(",") + 1)} : null;
  $("image-view").hidden = !image;
  $("image-preview").src = image ? image.url : "";
  for (const old of document.querySelectorAll(".box-overlay")) old.remove();
  preview();
}

export function readImage() {
  const file = $("image").files[0];
  $("image").value = "";  // the bytes are kept in `state.image`; the input may pick the same again
  if (!file) return;
  const format = {"image/png": "png", "image/jpeg": "jpeg"}[file.type];
  if (!format) return void showAt("image", `${file.type || "this file"} is not PNG or JPEG`);
  const info = state.info;
  const limit = info && info.limits && info.limits.max_body_bytes;
  if (limit && file.size * 4 / 3 > limit) return void showAt("image", `${file.size} bytes is over this server's body limit (${limit} bytes, base64 adds a third)`);
  const reader = new FileReader();
  reader.onload = () => setImage(format, reader.result);
  reader.readAsDataURL(file);
}
