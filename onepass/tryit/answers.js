// The try-it page's answers (docs/try-page.md): each answer's summary line and its bars (the
// raw read's beside them), boxes drawn over the image, the effort used, thoughts and the JSON.
import {$, el, state} from "./page.js";

function options(a) {  // [[option, probability]] of an answer, in the response's order
  if (a.type === "noul") return [["yes", a.noul], ["no", 1 - a.noul]];
  if (a.type === "score") {
    return Object.entries(a.probabilities).map(([k, p]) => {
      const level = a.legend && a.legend[k];
      return [`${k} ${typeof level === "string" ? level : JSON.stringify(level)}`, p, k];
    });
  }
  // a choice, and any other kind that answers with {option: probability}
  if (a.probabilities && typeof a.probabilities === "object") return Object.entries(a.probabilities);
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

const SUMMARY = {  // the built-in kinds' summary lines
  noul: (a) => [`P(yes) ${a.noul.toFixed(3)}`],
  choice: (a) => [`choice ${a.choice}`],
  score: (a) => [`score ${a.score.toFixed(3)}`],
  number: (a) => [`number ${a.number} (written "${a.text}")`],
  box: (a) => [
    a.box ? `box left ${a.box.left.toFixed(3)} top ${a.box.top.toFixed(3)} right ${a.box.right.toFixed(3)} bottom ${a.box.bottom.toFixed(3)}` : "no box",
    ...(a.found === false ? ["not found (the box is the whole image)"] : []),
    ...(typeof a.present === "number" ? [`present ${a.present.toFixed(3)}`] : [])],
};

function own(a) {  // another kind's answer: the field named for its type, as its schema has it
  const v = a[a.type];
  return v === undefined ? [] : [`${a.type} ${typeof v === "string" ? v : JSON.stringify(v)}`];
}

function summary(a) {
  const parts = (Object.hasOwn(SUMMARY, a.type) ? SUMMARY[a.type] : own)(a);
  if (typeof a.confidence === "number") parts.push(`confidence ${a.confidence.toFixed(3)}`);
  return parts.join(" · ");
}

function drawBoxes(answers) {
  for (const old of document.querySelectorAll(".box-overlay")) old.remove();
  for (const [id, a] of Object.entries(answers)) {
    if (a.type !== "box" || !a.box || !state.image) continue;
    const b = a.box, frame = el("div", {class: "box-overlay", title: id}, el("span", {}, id));
    Object.assign(frame.style, {left: `${100 * b.left}%`, top: `${100 * b.top}%`,
      width: `${100 * (b.right - b.left)}%`, height: `${100 * (b.bottom - b.top)}%`});
    $("image-view").append(frame);
  }
}

export function show(reply, raw) {
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
