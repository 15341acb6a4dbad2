// The try-it page's shared pieces (docs/try-page.md): its elements, what it holds between
// calls, the status line, the key's header, and errors shown at the field they name.
// The API key lives in the password field and the page's calls only: never in storage,
// cookies, the URL or the page's text.

export const $ = (id) => document.getElementById(id);

// what the page holds: the server's /try/info, the image to send, the example to load
export const state = {info: null, image: null, example: "text"};

export function el(tag, attrs, ...children) {  // text goes in as text, never as markup
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") node.className = v; else node.setAttribute(k, v);
  }
  for (const c of children) node.append(c);
  return node;
}

export function status(text, tone) {
  $("status").textContent = text;
  $("status").className = "status " + (tone || "");
}

export function auth() {
  const key = $("key").value;
  return key ? {Authorization: "Bearer " + key} : {};
}

// -- errors, at the field they name ------------------------------------------------------------
export function clearErrors() {
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

export function showAt(field, message) {
  const p = document.querySelector(`[data-error-for="${field}"]`) || $("error");
  p.textContent += (p.textContent ? "\n" : "") + message;
}

export function showErrors(reply) {
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
