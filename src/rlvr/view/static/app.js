// rlvr view: the page's script. One data source (the server's JSON API, or the data an
// exported page carries), one state object, render functions that rebuild a section
// from the state. Text from a run (prompts, completions) is always set as text or
// escaped: it is model output and may contain anything.
"use strict";

const BOOT = JSON.parse(document.getElementById("rlvr-boot").textContent);
const $ = (id) => document.getElementById(id);
const COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b"];

// --- data source --------------------------------------------------------------------

function servedSource() {
  const get = async (path) => {
    const response = await fetch(path);
    const body = await response.json();
    if (!response.ok) throw new Error(body.error || `${path}: HTTP ${response.status}`);
    return body;
  };
  return {
    live: true,
    runs: () => get("api/runs"),
    step: (run, step) => get(`api/runs/${run}/steps/${step}`),
    follow: (run, id) => get(`api/runs/${run}/prompt?id=${encodeURIComponent(JSON.stringify(id))}`),
    search: (run, text) => get(`api/runs/${run}/search?q=${encodeURIComponent(text)}`),
    strict: (run) => get(`api/runs/${run}/strict`),
  };
}

function exportedSource(data) {
  // An exported page holds some steps' attempts: following a prompt and searching
  // look through those steps only (the page says which steps it holds).
  const held = (run) => Object.values(data.steps[String(run)] || {});
  return {
    live: false,
    runs: async () => data.runs,
    step: async (run, step) => (data.steps[String(run)] || {})[String(step)] ||
      {step, groups: [], problems: [], missing: true},
    follow: async (run, id) => held(run)
      .map((s) => ({step: s.step, attempts: (s.groups.find((g) => sameId(g.prompt_id, id)) || {attempts: []}).attempts}))
      .filter((s) => s.attempts.length),
    search: async (run, text) => {
      const found = new Map();
      for (const s of held(run)) for (const g of s.groups) {
        if (!g.prompt.toLowerCase().includes(text.toLowerCase())) continue;
        const key = JSON.stringify(g.prompt_id);
        if (!found.has(key)) found.set(key, {prompt_id: g.prompt_id, prompt: g.prompt, steps: []});
        found.get(key).steps.push(s.step);
      }
      return [...found.values()];
    },
    strict: async (run) => data.strict[String(run)],
  };
}

const source = BOOT.mode === "export" ? exportedSource(BOOT.data) : servedSource();
const sameId = (a, b) => JSON.stringify(a) === JSON.stringify(b);

// --- state --------------------------------------------------------------------------

const state = {
  runs: [],            // overviews from /api/runs
  strict: [],          // per run: the strict re-grade so far
  run: 0,              // the run whose attempts are shown
  step: null,          // the step shown
  stepData: null,      // its attempts
  followLatest: true,
  filter: {status: "all", reason: "", text: ""},
  following: null,     // a prompt id followed across steps
};

// --- helpers ------------------------------------------------------------------------

function el(tag, attrs = {}, children = []) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "text") node.textContent = value;
    else if (key === "cls") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  for (const child of children) if (child != null) node.append(child);
  return node;
}
const fmt = (v, digits = 3) => (v == null ? "–" : typeof v === "number" ? (Number.isInteger(v) ? String(v) : v.toFixed(digits)) : String(v));
const fmtShare = (v) => (typeof v === "number" ? v.toFixed(3) : fmt(v));  // 0 -> 0.000, as 0.25 -> 0.250
const signed = (v) => (v == null ? "–" : (v > 0 ? "+" : "") + v.toFixed(3));
const steps = () => (state.runs[state.run] || {steps: []}).steps;

// --- header -------------------------------------------------------------------------

function renderHeader() {
  const box = $("runs");
  box.replaceChildren(...state.runs.map((run, i) => {
    const s = run.summary || {};
    const heldOut = s.held_out_before != null ? `held-out ${fmtShare(s.held_out_before)} → ${fmtShare(s.held_out_after)}` : "";
    return el("div", {cls: "run-card", style: `border-color:${COLORS[i % COLORS.length]}`}, [
      el("span", {cls: "run-name", text: run.name}),
      el("span", {cls: `status ${run.status}`, text: run.status}),
      el("span", {cls: "muted", text: `${run.steps.length} steps · verifier ${run.verifier || "?"} ${heldOut ? "· " + heldOut : ""}`}),
      el("div", {cls: "muted path", text: run.path}),
    ]);
  }));
  const notes = state.runs.flatMap((run) => run.notes.map((n) => `${run.name}: ${n}`));
  $("notes").replaceChildren(...notes.map((n) => el("li", {text: n})));
  const select = $("run-select");
  if (select.options.length !== state.runs.length) {
    select.replaceChildren(...state.runs.map((run, i) => el("option", {value: i, text: run.name})));
  }
  select.value = String(state.run);
}

// --- curves -------------------------------------------------------------------------

function chartSpecs() {
  // The honesty chart first: what the checker paid for against the strict re-grade
  // and held-out accuracy. Then one chart per logged metric, runs overlaid; keys that
  // name a shared chart (an episode's success by turn k, its end kinds) are its traces.
  const specs = [{id: "honest", title: "Reward vs strict re-grade", traces: honestTraces()}];
  const charts = new Map();  // chart id -> {title, keys: Map(key -> trace name)}
  const add = (chart, title, key, trace) => {
    if (!charts.has(chart)) charts.set(chart, {title, keys: new Map()});
    charts.get(chart).keys.set(key, trace);
  };
  for (const run of state.runs) {
    for (const [key, series] of Object.entries(run.curves)) add(series.chart || key, series.label, key, series.trace || null);
    for (const [key, series] of Object.entries(run.evals)) add("eval:" + key, series.label, "eval:" + key, null);
  }
  for (const [id, chart] of charts) {
    const traces = [];
    const several = state.runs.length > 1;
    [...chart.keys].forEach(([key, trace], k) => state.runs.forEach((run, i) => {
      const series = key.startsWith("eval:") ? run.evals[key.slice(5)] : run.curves[key];
      if (!series) return;
      const name = trace == null ? run.name : several ? `${run.name}: ${trace}` : trace;
      const color = trace == null || several ? COLORS[i % COLORS.length] : COLORS[k % COLORS.length];
      traces.push({x: series.x, y: series.y, name, mode: "lines+markers", marker: {size: 4},
                   line: {color, dash: several && trace != null ? DASHES[k % DASHES.length] : "solid"}});
    }));
    specs.push({id, title: chart.title, traces, legend: [...chart.keys.values()].some((t) => t != null)});
  }
  return specs;
}
const DASHES = ["solid", "dot", "dash", "longdash", "dashdot"];

// One run: a colour per series. Several: a colour per run, a dash per series.
const HONEST_SERIES = {reward: ["#1f77b4", "solid"], passed: ["#2ca02c", "dot"],
                       strict: ["#ff7f0e", "dash"], held: ["#9467bd", "solid"]};

function honestTraces() {
  const traces = [];
  state.runs.forEach((run, i) => {
    const several = state.runs.length > 1;
    const tag = several ? `${run.name}: ` : "";
    const line = (series, width = 2) => ({color: several ? COLORS[i % COLORS.length] : HONEST_SERIES[series][0],
                                          dash: HONEST_SERIES[series][1], width});
    const reward = run.curves["reward/mean"];
    if (reward) traces.push({x: reward.x, y: reward.y, name: tag + "reward", line: line("reward")});
    const strict = state.strict[i];
    if (strict && strict.x.length) {
      traces.push({x: strict.x, y: strict.passed, name: tag + "passed (verifier)", line: line("passed")});
      traces.push({x: strict.x, y: strict.strict, name: tag + "passed strict re-grade", line: line("strict", 3)});
    }
    const held = run.evals["greedy/accuracy"];
    if (held) traces.push({x: held.x, y: held.y, name: tag + "held-out accuracy", mode: "lines+markers",
                           line: line("held", 1), marker: {symbol: "diamond", size: 8}});
  });
  return traces;
}

// plotly.js is loaded after the first paint of the attempts: compiling its 4.8 MB
// blocks the page for a second or more on a slow CPU. Served: from the server; exported:
// from the page's own non-running script element.
function loadPlotly() {
  return new Promise((resolve) => {
    const script = document.createElement("script");
    const inline = document.getElementById("plotly-source");
    if (inline) {
      script.textContent = inline.textContent;
      document.head.append(script);  // an inline script runs as it is inserted
      return resolve(typeof Plotly !== "undefined");
    }
    script.src = BOOT.plotly;
    script.onload = () => resolve(true);
    script.onerror = () => resolve(false);
    document.head.append(script);
  });
}

const nextPaint = () => new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));

// Markers are one SVG element per point: past this many points a curve is a line only.
const MARKER_LIMIT = 150;
let chartsDrawing = null;

// One chart per task: the page stays responsive (and painted) while ten plots draw.
function renderCharts() {
  if (typeof Plotly === "undefined") return Promise.resolve();
  const previous = chartsDrawing || Promise.resolve();
  chartsDrawing = previous.then(drawCharts);
  return chartsDrawing;
}

async function drawCharts() {
  const box = $("charts");
  for (const spec of chartSpecs()) {
    await new Promise((resolve) => setTimeout(resolve, 0));
    for (const trace of spec.traces) {
      if (trace.x.length > MARKER_LIMIT && (trace.mode || "lines+markers").includes("markers")) trace.mode = "lines";
    }
    let div = box.querySelector(`[data-key="${CSS.escape(spec.id)}"]`);
    if (!div) {
      div = el("div", {cls: "chart", "data-key": spec.id});
      box.append(div);
    }
    const layout = {title: {text: spec.title, font: {size: 13}}, margin: {l: 50, r: 10, t: 32, b: 24},
                    height: 240, yaxis: {exponentformat: "e", rangemode: spec.id === "honest" ? "tozero" : "normal"},
                    showlegend: spec.id === "honest" || spec.legend || state.runs.length > 1,
                    legend: {orientation: "h", y: -0.15, font: {size: 10}}};
    Plotly.react(div, spec.traces, layout, {displayModeBar: false, responsive: true});
  }
  box.dataset.drawn = String(box.children.length);  // for tests and benchmarks: all drawn
  performance.mark("rlvr:charts-drawn");
}

// --- attempts -----------------------------------------------------------------------

function visibleAttempts(group) {
  const f = state.filter;
  return group.attempts.filter((a) =>
    (f.status === "all" || (f.status === "passed" && a.passed) || (f.status === "failed" && !a.passed) ||
     (f.status === "flagged" && a.flags.length)) && (!f.reason || a.reason === f.reason));
}

function renderStep() {
  const data = state.stepData;
  const run = state.runs[state.run];
  if (!data || !run) return;
  const all = data.groups.flatMap((g) => g.attempts);
  const passed = all.filter((a) => a.passed).length;
  const flagged = all.filter((a) => a.flags.length).length;
  const summary = data.missing
    ? `step ${data.step}: this exported page does not hold its attempts (it holds steps ${(run.exported_steps || []).join(", ")})`
    : `step ${data.step}: ${all.length} attempts at ${data.groups.length} prompts, ${passed} passed (${all.length ? (100 * passed / all.length).toFixed(1) : 0}%), ${flagged} flagged by the audit`;
  $("step-summary").replaceChildren(el("span", {id: "step-title", text: summary}),
    ...data.problems.map((p) => el("div", {cls: "error", text: p})));
  renderReasons(all);
  const text = state.filter.text.toLowerCase();
  const cards = [];
  for (const group of data.groups) {
    if (text && !group.prompt.toLowerCase().includes(text)) continue;
    const shown = visibleAttempts(group);
    if (!shown.length) continue;
    cards.push(groupCard(group, shown));
  }
  $("groups").replaceChildren(...(cards.length ? cards : [el("p", {cls: "muted", text: "no attempt matches the filters"})]));
}

function renderReasons(attempts) {
  const counts = new Map();
  for (const a of attempts) counts.set(a.reason, (counts.get(a.reason) || 0) + 1);
  const select = $("filter-reason");
  const keep = state.filter.reason;
  select.replaceChildren(el("option", {value: "", text: "any reason"}),
    ...[...counts].sort((a, b) => b[1] - a[1]).map(([r, n]) => el("option", {value: r, text: `${r} (${n})`})));
  select.value = counts.has(keep) ? keep : "";
}

function groupCard(group, shown) {
  const passed = group.attempts.filter((a) => a.passed).length;
  const rewards = group.attempts.map((a) => a.reward).filter((r) => typeof r === "number");
  const mean = rewards.length ? rewards.reduce((x, y) => x + y, 0) / rewards.length : null;
  const hidden = group.attempts.length - shown.length;
  return el("div", {cls: "group"}, [
    el("div", {cls: "group-head"}, [
      el("span", {cls: "prompt-id", text: String(group.prompt_id)}),
      el("span", {cls: "muted", text: ` ${passed}/${group.attempts.length} passed · mean reward ${fmt(mean)}` +
                                      `${hidden ? ` · ${hidden} filtered out` : ""} · reference `}),
      el("code", {cls: "reference", text: String(group.reference)}),
      el("button", {cls: "follow-button", text: "follow across steps", onclick: () => followPrompt(group.prompt_id)}),
    ]),
    el("pre", {cls: "prompt", text: group.prompt}),
    el("div", {cls: "attempts"}, shown.map(attemptRow)),
  ]);
}

function attemptRow(a) {
  const details = Object.entries(a.details || {}).map(([k, v]) => {
    const text = typeof v === "string" ? v : JSON.stringify(v);  // e.g. a failing test's output
    return el("span", {cls: "detail", title: text.length > 300 ? text : ""},
              [el("b", {text: k + ": "}), text.length > 300 ? text.slice(0, 300) + " …" : text]);
  });
  const episode = a.episode;
  const body = episode && episode.messages
    ? transcriptView(episode)
    : el("pre", {cls: "completion", text: a.completion + (a.cut ? `\n… (${a.cut} more characters)` : "")});
  return el("div", {cls: `attempt ${a.passed ? "pass" : "fail"}${a.flags.length ? " flagged" : ""}`, "data-sample": a.sample}, [
    el("div", {cls: "meta"}, [
      el("span", {cls: "badge", text: a.passed ? "PASS" : "FAIL"}),
      el("span", {text: ` #${a.sample} · reason `}),
      el("span", {cls: "reason", text: a.reason}),
      el("span", {text: ` · score ${fmt(a.score)} · reward ${fmt(a.reward)} · advantage `}),
      el("span", {cls: `advantage ${a.advantage > 0 ? "pos" : a.advantage < 0 ? "neg" : ""}`, text: signed(a.advantage)}),
      el("span", {text: ` · ${fmt(a.length)} tokens · ${a.finish_reason || ""}`}),
      ...a.flags.map((f) => el("span", {cls: "flag", title: "rlvr audit: the strict re-check rejects this passed attempt", text: f})),
    ]),
    episode ? episodeMeta(episode) : null,
    body,
    details.length ? el("div", {cls: "details"}, details) : null,
  ]);
}

// --- an episode: how it went, and its transcript -------------------------------------

function episodeMeta(e) {
  const fault = /^(env_error|env_timeout|bad_observation)/.test(e.end_reason || "");
  return el("div", {cls: "episode-meta"}, [
    el("span", {text: `episode: ${fmt(e.turns)} turn(s) · ended `}),
    el("span", {cls: `end-reason${fault ? " fault" : ""}`, text: String(e.end_reason)}),
    el("span", {text: ` · ${fmt(e.tool_calls)} tool call(s), ${fmt(e.tool_errors)} error(s) · reward from ${e.reward_source || "?"}` +
                      ` · ${fmt(e.model_tokens)} model tokens (trained), ${fmt(e.env_tokens)} environment tokens (context)` +
                      ((e.turn_rewards || []).some((r) => r != null) ? ` · turn rewards ${e.turn_rewards.map((r) => fmt(r)).join(", ")}` : "")}),
  ]);
}

const PART_LABELS = {prompt: "prompt · context", model: "model · trained", tool_result: "tool result · context",
                     environment: "environment · context"};

function transcriptView(e) {
  // The first prompt folded (the group card shows the task); every later turn in order.
  const first = e.messages.filter((m) => m.part === "prompt");
  const rest = e.messages.filter((m) => m.part !== "prompt");
  const last = rest.map((m) => m.part).lastIndexOf("model");  // the graded final turn
  let turn = 0;
  const rows = rest.map((m, k) => {
    if (m.part === "model") turn += 1;
    return messageView(m, m.part === "model" ? `turn ${turn} · ` : "", k === last);
  });
  return el("div", {cls: "transcript"}, [
    first.length ? el("details", {cls: "first-prompt"}, [
      el("summary", {text: `first prompt: ${first.length} message(s), context`}),
      ...first.map((m) => messageView(m, "")),
    ]) : null,
    ...rows,
    e.more_messages ? el("div", {cls: "muted", text: `… ${e.more_messages} more message(s) not shown`}) : null,
  ]);
}

function messageView(m, prefix, final = false) {
  const who = m.role + (m.name ? ` (${m.name})` : "");
  const text = m.segments
    ? m.segments.map((s) => el("span", {cls: s.kind === "tool_call" ? "tool-call" : "", text: s.text}))
    : [m.text];
  if (m.cut) text.push(`\n… (${m.cut} more characters)`);
  return el("div", {cls: `turn ${m.part}`}, [
    el("div", {cls: "turn-label", text: `${prefix}${who} · ${PART_LABELS[m.part] || m.part}`}),
    el("pre", {cls: final ? "turn-text completion" : "turn-text"}, text),
  ]);
}

// --- following a prompt, searching --------------------------------------------------

async function followPrompt(id) {
  state.following = id;
  const box = $("follow");
  box.replaceChildren(el("p", {cls: "muted", text: `following ${id} ...`}));
  const rows = await source.follow(state.run, id);
  const close = el("button", {text: "close", onclick: () => { state.following = null; box.replaceChildren(); }});
  box.replaceChildren(el("div", {cls: "follow-head"}, [el("b", {text: `prompt ${id} across ${rows.length} steps `}), close]),
    ...rows.map((row, k) => {
      const passed = row.attempts.filter((a) => a.passed).length;
      // the first and the latest step open: what it tried then, what it tries now
      const open = k === 0 || k === rows.length - 1 ? {open: ""} : {};
      return el("details", {cls: "follow-step", ...open}, [
        el("summary", {text: `step ${row.step}: ${passed}/${row.attempts.length} passed`}),
        el("div", {cls: "attempts"}, row.attempts.map(attemptRow)),
      ]);
    }));
}

async function searchAll() {
  const text = $("search").value.trim();
  const box = $("search-results");
  if (!text) { box.replaceChildren(); return; }
  const found = await source.search(state.run, text);
  box.replaceChildren(el("div", {cls: "muted", text: `${found.length} prompt(s) containing “${text}”`}),
    ...found.map((f) => el("div", {cls: "search-hit"}, [
      el("code", {text: String(f.prompt_id)}), " ",
      el("span", {text: f.prompt.slice(0, 120)}), " — steps ",
      ...f.steps.slice(0, 30).map((s) => el("a", {href: "#", text: String(s) + " ", onclick: (e) => { e.preventDefault(); goToStep(s); }})),
      el("button", {text: "follow", onclick: () => followPrompt(f.prompt_id)}),
    ])));
}

// --- navigation ---------------------------------------------------------------------

async function goToStep(step, {keepFollow = false} = {}) {
  const list = steps();
  if (!list.length) { $("step-summary").textContent = "this run has no steps yet"; return; }
  if (!list.includes(step)) step = list.reduce((best, s) => Math.abs(s - step) < Math.abs(best - step) ? s : best, list[0]);
  state.step = step;
  if (!keepFollow) state.followLatest = step === list[list.length - 1] && state.followLatest;
  $("follow-latest").checked = state.followLatest;
  $("step-input").value = step;
  $("step-input").min = list[0];
  $("step-input").max = list[list.length - 1];
  $("step-range").max = list.length - 1;
  $("step-range").value = list.indexOf(step);
  try {
    state.stepData = await source.step(state.run, step);
    performance.mark("rlvr:step-fetched");
  } catch (error) {
    state.stepData = {step, groups: [], problems: [String(error)]};
  }
  if (state.step === step) renderStep();
  performance.mark("rlvr:step-drawn");
}

function moveBy(delta) {
  const list = steps();
  const at = list.indexOf(state.step);
  state.followLatest = false;
  goToStep(list[Math.max(0, Math.min(list.length - 1, at + delta))]);
}

function bindControls() {
  $("run-select").addEventListener("change", (e) => { state.run = Number(e.target.value); const l = steps(); goToStep(l[l.length - 1], {keepFollow: true}); });
  $("step-first").addEventListener("click", () => { state.followLatest = false; goToStep(steps()[0]); });
  $("step-prev").addEventListener("click", () => moveBy(-1));
  $("step-next").addEventListener("click", () => moveBy(1));
  $("step-last").addEventListener("click", () => { state.followLatest = true; const l = steps(); goToStep(l[l.length - 1], {keepFollow: true}); });
  $("step-input").addEventListener("change", (e) => { state.followLatest = false; goToStep(Number(e.target.value)); });
  $("step-range").addEventListener("change", (e) => { state.followLatest = false; goToStep(steps()[Number(e.target.value)]); });
  $("follow-latest").addEventListener("change", (e) => { state.followLatest = e.target.checked; if (state.followLatest) { const l = steps(); goToStep(l[l.length - 1], {keepFollow: true}); } });
  $("filter-status").addEventListener("change", (e) => { state.filter.status = e.target.value; renderStep(); });
  $("filter-reason").addEventListener("change", (e) => { state.filter.reason = e.target.value; renderStep(); });
  $("search").addEventListener("input", (e) => { state.filter.text = e.target.value; renderStep(); });
  $("search-all").addEventListener("click", searchAll);
}

// --- loading and following a live run -----------------------------------------------

async function loadRuns() {
  const before = steps().length;
  state.runs = await source.runs();
  performance.mark("rlvr:runs");
  renderHeader();
  const list = steps();
  if (state.step == null || (state.followLatest && list.length !== before)) {
    await goToStep(list[list.length - 1], {keepFollow: true});
  }
  await renderCharts();
}

async function loadStrict() {
  let pending = false;
  for (let i = 0; i < state.runs.length; i++) {
    try { state.strict[i] = await source.strict(i); } catch (error) { state.strict[i] = null; }
    pending = pending || (state.strict[i] && !state.strict[i].done);
  }
  await renderCharts();
  return pending;
}

async function main() {
  bindControls();
  await loadRuns();  // header and attempts (the curves wait for plotly.js)
  await nextPaint();
  performance.mark("rlvr:attempts-painted");  // read by benchmarks/bench_view.py
  if (!(await loadPlotly())) {
    $("charts").replaceChildren(el("p", {cls: "error", text: "plotly.js did not load: no curves."}));
  }
  performance.mark("rlvr:plotly");
  await renderCharts();
  let strictPending = await loadStrict();
  if (!source.live) return;
  const every = Math.max(1, BOOT.refresh_s || 5) * 1000;
  setInterval(async () => {
    if (state.runs.some((r) => r.status === "running")) await loadRuns();
  }, every);
  const strictTimer = setInterval(async () => {
    strictPending = await loadStrict();
    if (!strictPending && !state.runs.some((r) => r.status === "running")) clearInterval(strictTimer);
  }, strictPending ? 1500 : every);
}

main().catch((error) => {
  document.body.prepend(el("p", {cls: "error", text: `rlvr view: ${error.message || error}`}));
});
