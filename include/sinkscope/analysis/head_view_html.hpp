// One self-contained HTML page of a HeadView (analysis/head_view.hpp): no network, no server, no files
// beside it. What it shows:
//   - α₀ per (layer, head) as a heat-map (click a cell to choose the head; its α₀ is in the cell's title);
//   - the chosen head's attention pattern as a (query × key) picture (shade ∝ √p, so that weights of a few
//     percent stay visible beside a sink's), and the text: hovering a token (or
//     a row of the picture) shades every key by the attention that query gives it and lists the row;
//   - the residual stream's ℓ2 norm per (read-out point, position) on a log colour scale, with the
//     largest channels of the hovered cell;
//   - the logit lens: the most probable token at every read-out point and position.
//
// Size: patterns are stored as bytes, q = round(255·p), lower triangle only (a causal pattern is zero above
// its diagonal; the writer checks that it is), base64-encoded: L·H·P(P+1)/2 bytes before encoding, 2.2 MB
// for 30 layers × 9 heads × 128 positions. The page shows q/255, so a pattern entry on the page is within
// 1/510 of the float the forward computed; α₀, the norms and the lens probabilities are written as numbers.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sinkscope/analysis/head_view.hpp"
#include "sinkscope/core/error.hpp"

namespace sinkscope::analysis {

namespace detail {

inline std::string base64(const std::vector<std::uint8_t>& in) {
    static const char* digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    out.reserve((in.size() + 2) / 3 * 4);
    std::size_t i = 0;
    for (; i + 2 < in.size(); i += 3) {
        const std::uint32_t v = (std::uint32_t(in[i]) << 16) | (std::uint32_t(in[i + 1]) << 8) | in[i + 2];
        out += digits[v >> 18];
        out += digits[(v >> 12) & 63];
        out += digits[(v >> 6) & 63];
        out += digits[v & 63];
    }
    if (i < in.size()) {
        const std::uint32_t v = (std::uint32_t(in[i]) << 16) | (i + 1 < in.size() ? std::uint32_t(in[i + 1]) << 8 : 0u);
        out += digits[v >> 18];
        out += digits[(v >> 12) & 63];
        out += i + 1 < in.size() ? digits[(v >> 6) & 63] : '=';
        out += '=';
    }
    return out;
}

// JSON for a <script type="application/json"> element: "</" would end the element early.
inline std::string script_safe_json(const nlohmann::json& j) {
    std::string s = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    std::string out;
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size(); ++i) {
        out += s[i];
        if (s[i] == '<' && i + 1 < s.size() && s[i + 1] == '/') out += '\\';
    }
    return out;
}

// Four significant digits are all a picture needs, and they keep the page small.
inline double round4(double x) {
    if (x == 0 || !std::isfinite(x)) return x;
    const double scale = std::pow(10.0, 3 - std::floor(std::log10(std::abs(x))));
    return std::round(x * scale) / scale;
}

inline const char* head_view_page_script() {
    return R"JS(
const D = JSON.parse(document.getElementById('data').textContent);
const L = D.layers, H = D.heads, P = D.positions, R = D.points.length, S = D.sink_slots, K = D.top_channels;
const bin = atob(D.pattern_b64), bytes = new Uint8Array(bin.length);
for (let i = 0; i < bin.length; ++i) bytes[i] = bin.charCodeAt(i);
const tri = P * (P + 1) / 2;
function pat(l, h, t, j) { return j > t ? 0 : bytes[(l * H + h) * tri + t * (t + 1) / 2 + j] / 255; }
function shade(v) { const c = Math.round(255 * (1 - v)); return `rgb(${c},${c},255)`; }
function esc(s) { return s.replace(/[&<>"]/g, ch => ({'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;'}[ch])); }
function show(s) { return JSON.stringify(s).slice(1, -1); }
let cur = {l: 0, h: 0};

// α₀ heat-map: one cell per (layer, head).
const grid = document.getElementById('alpha');
grid.style.gridTemplateColumns = `4em repeat(${H}, 1.6em)`;
grid.appendChild(document.createElement('div'));
for (let h = 0; h < H; ++h) { const d = document.createElement('div'); d.className = 'lab'; d.textContent = h; grid.appendChild(d); }
for (let l = 0; l < L; ++l) {
  const lab = document.createElement('div'); lab.className = 'lab'; lab.textContent = 'L' + l; grid.appendChild(lab);
  for (let h = 0; h < H; ++h) {
    const a = D.alpha0[l * H + h], d = document.createElement('div');
    d.className = 'cell'; d.dataset.layer = l; d.dataset.head = h; d.dataset.alpha = a;
    d.style.background = shade(a); d.title = `layer ${l} head ${h}: alpha0 = ${a.toFixed(4)}${a > D.eps ? ' (sink)' : ''}`;
    d.addEventListener('click', () => choose(l, h));
    grid.appendChild(d);
  }
}

// The text: one span per position.
const toks = document.getElementById('tokens');
for (let t = 0; t < P; ++t) {
  const s = document.createElement('span'); s.className = 'tok'; s.dataset.pos = t;
  s.textContent = show(D.tokens[t]) || ' '; s.title = `position ${t}`;
  s.addEventListener('mouseenter', () => row(t));
  toks.appendChild(s);
}
toks.addEventListener('mouseleave', () => row(-1));

// The chosen head's pattern, one pixel block per (query, key).
const cv = document.getElementById('pattern'), ctx = cv.getContext('2d');
const cell = Math.max(1, Math.floor(512 / P));
cv.width = cv.height = cell * P;
cv.addEventListener('mousemove', e => { const t = Math.floor(e.offsetY / cell); if (t >= 0 && t < P) row(t); });
function draw() {
  const img = ctx.createImageData(cv.width, cv.height);
  for (let t = 0; t < P; ++t) for (let j = 0; j < P; ++j) {
    const c = Math.round(255 * (1 - Math.sqrt(pat(cur.l, cur.h, t, j))));  // sqrt: small weights stay visible
    for (let y = t * cell; y < (t + 1) * cell; ++y) for (let x = j * cell; x < (j + 1) * cell; ++x) {
      const o = 4 * (y * cv.width + x); img.data[o] = c; img.data[o + 1] = c; img.data[o + 2] = 255; img.data[o + 3] = 255;
    }
  }
  ctx.putImageData(img, 0, 0);
}
function choose(l, h) {
  cur = {l, h};
  document.querySelectorAll('.cell.on').forEach(c => c.classList.remove('on'));
  document.querySelector(`.cell[data-layer="${l}"][data-head="${h}"]`).classList.add('on');
  const a = D.alpha0[l * H + h];
  const title = document.getElementById('head-title');
  title.textContent = `layer ${l}, head ${h}: alpha0 = ${a.toFixed(4)} (rows: queries, columns: keys; shade ~ sqrt of the weight)`;
  title.dataset.layer = l; title.dataset.head = h; title.dataset.alpha = a;
  draw(); row(-1);
}
function row(t) {
  const info = document.getElementById('row-info'), spans = toks.children;
  if (t < 0) {
    for (const s of spans) s.style.background = '';
    info.textContent = 'hover a token (or a row of the picture) to see where it attends';
    info.dataset.query = ''; info.dataset.row = ''; return;
  }
  const r = [];
  for (let j = 0; j < P; ++j) r.push(pat(cur.l, cur.h, t, j));
  for (let j = 0; j < P; ++j) spans[j].style.background = j === t ? '#fde68a' : (j < t ? shade(r[j]) : '');
  const top = r.map((v, j) => [v, j]).filter(x => x[1] <= t).sort((a, b) => b[0] - a[0]).slice(0, 5);
  info.textContent = `query ${t} "${show(D.tokens[t])}" attends to: ` +
      top.map(([v, j]) => `${j} "${show(D.tokens[j])}" ${v.toFixed(3)}`).join(', ');
  info.dataset.query = t; info.dataset.row = JSON.stringify(r.slice(0, t + 1).map(v => +v.toFixed(4)));
}

// Residual norms: one cell per (read-out point, position), log colour scale.
const rc = document.getElementById('resid'), rctx = rc.getContext('2d');
const rw = Math.max(2, Math.floor(768 / P)), rh = 10;
rc.width = rw * P; rc.height = rh * R;
const lo = Math.log(Math.max(1e-12, Math.min(...D.resid_norm))), hi = Math.log(Math.max(...D.resid_norm));
for (let r = 0; r < R; ++r) for (let t = 0; t < P; ++t) {
  const v = (Math.log(Math.max(1e-12, D.resid_norm[r * P + t])) - lo) / Math.max(1e-12, hi - lo);
  rctx.fillStyle = `hsl(${Math.round(240 - 240 * v)},80%,${Math.round(90 - 45 * v)}%)`;
  rctx.fillRect(t * rw, r * rh, rw, rh);
}
rc.addEventListener('mousemove', e => {
  const t = Math.floor(e.offsetX / rw), r = Math.floor(e.offsetY / rh);
  if (t < 0 || t >= P || r < 0 || r >= R) return;
  const ch = [];
  for (let i = 0; i < K; ++i) ch.push(`c${D.top_channel[(r * P + t) * K + i]} = ${D.top_value[(r * P + t) * K + i]}`);
  document.getElementById('resid-info').textContent =
      `${D.points[r]}, position ${t} "${show(D.tokens[t])}": |x| = ${D.resid_norm[r * P + t]}; largest: ${ch.join(', ')}`;
});

// The logit lens: the top token at every read-out point (rows) and position (columns).
const T = P - S, KL = D.lens_top, tb = document.getElementById('lens');
let head = '<tr><th></th>';
for (let t = 0; t < T; ++t) head += `<th title="${esc(show(D.tokens[t + S]))}">${t + S}</th>`;
let html = head + '</tr>';
for (let r = 0; r < R; ++r) {
  html += `<tr><th>${esc(D.points[r])}</th>`;
  for (let t = 0; t < T; ++t) {
    const at = (r * T + t) * KL, alt = [];
    for (let i = 0; i < KL; ++i) alt.push(`${show(D.vocab[D.lens_tokens[at + i]] ?? String(D.lens_tokens[at + i]))} ${D.lens_probs[at + i]}`);
    html += `<td title="${esc(alt.join(' | '))}">${esc(show(D.vocab[D.lens_tokens[at]] ?? String(D.lens_tokens[at])))}</td>`;
  }
  html += '</tr>';
}
tb.innerHTML = html;

let best = 0;
for (let i = 1; i < L * H; ++i) if (D.alpha0[i] > D.alpha0[best]) best = i;
choose(Math.floor(best / H), best % H);
document.body.dataset.ready = '1';
)JS";
}

inline const char* head_view_page_style() {
    return R"CSS(
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #111; }
h1 { font-size: 1.3em; } h2 { font-size: 1.1em; margin-top: 1.5em; }
.row { display: flex; gap: 2em; align-items: flex-start; flex-wrap: wrap; }
#alpha { display: grid; gap: 1px; font-size: 11px; }
#alpha .cell { width: 1.6em; height: 1.1em; cursor: pointer; outline: 1px solid #ddd; }
#alpha .cell.on { outline: 2px solid #c00; }
#alpha .lab { text-align: center; color: #555; }
#tokens { font-family: ui-monospace, monospace; white-space: pre-wrap; max-width: 70em; line-height: 1.9; }
.tok { border: 1px solid #eee; padding: 0 1px; margin: 0 1px; cursor: default; }
#row-info, #resid-info { font-family: ui-monospace, monospace; font-size: 12px; min-height: 2.5em; max-width: 80em; }
canvas { image-rendering: pixelated; border: 1px solid #ccc; }
#lens-wrap { overflow: auto; max-height: 40em; max-width: 100%; }
#lens { border-collapse: collapse; font: 11px ui-monospace, monospace; }
#lens td, #lens th { border: 1px solid #eee; padding: 1px 3px; white-space: pre; }
#lens th { background: #f6f6f6; position: sticky; left: 0; }
)CSS";
}

}  // namespace detail

// The page. `decode(id)` gives a token's text (for the text and the lens); `meta` (an object, or null) is
// kept in the data, and its "model" names the page.
inline std::string head_view_html(const HeadView& v, const std::function<std::string(std::int32_t)>& decode,
                                  const std::vector<std::int32_t>& tokens, const nlohmann::json& meta, double eps = 0.3) {
    const std::int64_t L = v.layers, H = v.heads, P = v.positions;
    require(std::int64_t(tokens.size()) + v.sink_slots == P,
            "head_view_html: " + std::to_string(tokens.size()) + " tokens for " + std::to_string(P) + " positions");
    std::vector<std::uint8_t> q;
    q.reserve(std::size_t(L * H * P * (P + 1) / 2));
    for (std::int64_t l = 0; l < L; ++l)
        for (std::int64_t h = 0; h < H; ++h)
            for (std::int64_t t = 0; t < P; ++t)
                for (std::int64_t j = 0; j < P; ++j) {
                    const float p = v.pattern[std::size_t(v.pattern_index(l, h, t, j))];
                    if (j > t) {
                        require(p == 0.f, "head_view_html: layer " + std::to_string(l) + " head " + std::to_string(h) +
                                              " attends from query " + std::to_string(t) + " to the later key " +
                                              std::to_string(j) + ": the page stores causal patterns only");
                        continue;
                    }
                    q.push_back(std::uint8_t(std::lround(std::clamp(double(p), 0.0, 1.0) * 255.0)));
                }
    nlohmann::json d;
    d["meta"] = meta;
    d["layers"] = L;
    d["heads"] = H;
    d["positions"] = P;
    d["sink_slots"] = v.sink_slots;
    d["eps"] = eps;
    std::vector<std::string> texts;
    if (v.sink_slots) texts.push_back("<sink>");
    for (const auto id : tokens) texts.push_back(decode(id));
    d["tokens"] = texts;
    d["token_ids"] = tokens;
    d["alpha0"] = v.alpha0;
    d["points"] = v.points;
    std::vector<double> norms, values;
    for (const float x : v.resid_norm) norms.push_back(detail::round4(x));
    for (const float x : v.top_value) values.push_back(detail::round4(x));
    d["resid_norm"] = norms;
    d["top_channels"] = v.top_channels;
    d["top_channel"] = v.top_channel;
    d["top_value"] = values;
    d["lens_top"] = v.lens.top_k;
    d["lens_tokens"] = v.lens.top_tokens;
    std::vector<double> probs;
    for (const float x : v.lens.top_probs) probs.push_back(detail::round4(x));
    d["lens_probs"] = probs;
    nlohmann::json vocab = nlohmann::json::object();
    for (const auto id : v.lens.top_tokens) {
        const std::string key = std::to_string(id);
        if (!vocab.contains(key)) vocab[key] = decode(id);
    }
    d["vocab"] = vocab;
    d["pattern_b64"] = detail::base64(q);

    const std::string model = meta.is_object() ? meta.value("model", std::string("model")) : std::string("model");
    std::string page;
    page += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>sinkscope view: ";
    nlohmann::json title = model;
    page += detail::script_safe_json(title);
    page += "</title>\n<style>";
    page += detail::head_view_page_style();
    page += "</style></head>\n<body>\n<h1>sinkscope view</h1>\n<p id=\"summary\"></p>\n";
    page += "<h2>Attention received by position 0 (&alpha;<sub>0</sub>) per layer and head</h2>\n";
    page += "<div class=\"row\"><div id=\"alpha\"></div><div><div id=\"head-title\"></div><canvas id=\"pattern\"></canvas></div></div>\n";
    page += "<h2>The text (hover a token)</h2>\n<div id=\"tokens\"></div>\n<div id=\"row-info\"></div>\n";
    page += "<h2>Residual-stream norm per read-out point (rows) and position (columns), log scale</h2>\n";
    page += "<canvas id=\"resid\"></canvas>\n<div id=\"resid-info\">hover a cell</div>\n";
    page += "<h2>Logit lens: the most probable token (hover for the top tokens)</h2>\n<div id=\"lens-wrap\"><table id=\"lens\"></table></div>\n";
    page += "<script type=\"application/json\" id=\"data\">";
    page += detail::script_safe_json(d);
    page += "</script>\n<script>";
    page += detail::head_view_page_script();
    page += R"JS(document.getElementById('summary').textContent = `${(D.meta && D.meta.model) || ''}: ${L} layers x ${H} heads, ${P} positions` +
    `${S ? ' (position 0 is the sink slot)' : ''}; sink heads (alpha0 > ${D.eps}): ${D.alpha0.filter(a => a > D.eps).length} of ${L * H}`;)JS";
    page += "</script>\n</body></html>\n";
    return page;
}

}  // namespace sinkscope::analysis
