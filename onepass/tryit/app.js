// The try-it page (docs/try-page.md): composes a /v1/systemone request, sends it as any client
// would, and draws each answer. No library, nothing fetched but this server's own routes.
// The API key lives in the password field and the page's calls only: never in storage,
// cookies, the URL or the page's text. This module wires the page; the others:
// page.js (elements, status, errors), form.js (the form, the example, the image),
// request.js (the body and the call), answers.js (the answers drawn).
import {$, clearErrors, showAt, showErrors, state, status} from "./page.js";
import {addQuestion, loadExample, loadInfo, readImage, setImage} from "./form.js";
import {Local, body, post, preview} from "./request.js";
import {show} from "./answers.js";

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
    if ($("raw").checked) {  // the calibration off, as /try/info says it for these kinds
      const calibration = state.info.raw_calibration;
      const second = await post({...doc, kwargs: {...(doc.kwargs || {}), calibration}});
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

document.addEventListener("DOMContentLoaded", async () => {
  $("form").addEventListener("submit", send);
  $("form").addEventListener("input", preview);
  $("form").addEventListener("change", preview);
  $("key").addEventListener("change", loadInfo);
  $("image").addEventListener("change", readImage);
  $("image-clear").addEventListener("click", () => setImage(null, null));
  $("add").addEventListener("click", () => {
    const info = state.info;
    const limit = info && info.limits && info.limits.max_questions;
    if (limit && $("questions").children.length >= limit) return void showAt("questions", `this server takes at most ${limit} questions`);
    addQuestion(`q${$("questions").children.length + 1}`, {type: $("add-type").value || "noul"});
    preview();
  });
  $("example").addEventListener("click", loadExample);
  await loadInfo();
  if (state.info && state.info.examples) loadExample();
});
