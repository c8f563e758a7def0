// tx8lab graph view: shows the SVG that Python laid out (dot or wasm Graphviz), colours
// nodes from the `colors` trait by SVG id, shows op attributes on hover, sends clicks
// back (`selected`; a collapsed group asks Python to expand it). A new overlay only
// changes `colors`: the fills are restyled in place, the layout is not recomputed.

const SHAPES = "path, polygon, ellipse";

function el_(tag, attrs = {}, text = "") {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text) e.textContent = text;
  return e;
}

// "op12" -> 12; a long-edge stub "px-op12-op40" stands for its source op 12
function opId(name) {
  if (name && name.startsWith("px-")) name = name.split("-")[1];
  return name && name.startsWith("op") ? Number(name.slice(2)) : null;
}

function render({ model, el }) {
  el.classList.add("tx8-graph");
  const bar = el_("div", { class: "tx8-bar" });
  const select = el_("select", { class: "tx8-overlay", title: "overlay" });
  const legend = el_("span", { class: "tx8-legend" });
  const zoomOut = el_("button", { class: "tx8-zoom", title: "zoom out" }, "−");
  const zoomFit = el_("button", { class: "tx8-zoom", title: "fit width" }, "fit");
  const zoomIn = el_("button", { class: "tx8-zoom", title: "zoom in" }, "+");
  const status = el_("span", { class: "tx8-status" });
  bar.append(select, legend, zoomOut, zoomFit, zoomIn, status);
  const body = el_("div", { class: "tx8-body" });
  const canvas = el_("div", { class: "tx8-canvas" });
  const side = el_("div", { class: "tx8-side" });
  const hover = el_("div", { class: "tx8-hover" });
  const details = el_("div", { class: "tx8-details" });
  side.append(hover, details);
  body.append(canvas, side);
  el.append(bar, body);

  let shapes = new Map(); // svg id -> first shape element of the node
  let svg = null;
  let natural = null; // [width, height] in pt
  let zoom = 1;

  function applyZoom() {
    if (!svg || !natural) return;
    svg.setAttribute("width", `${natural[0] * zoom}pt`);
    svg.setAttribute("height", `${natural[1] * zoom}pt`);
  }

  function draw() {
    canvas.innerHTML = model.get("svg");
    svg = canvas.querySelector("svg");
    shapes = new Map();
    if (!svg) return;
    natural = [parseFloat(svg.getAttribute("width")), parseFloat(svg.getAttribute("height"))];
    for (const g of svg.querySelectorAll("g.node")) {
      const shape = g.querySelector(SHAPES);
      if (shape) shapes.set(g.id, shape);
    }
    canvas.style.height = model.get("height");
    applyZoom();
    recolor();
    markSelected();
    showStatus();
  }

  function recolor() {
    const t0 = performance.now();
    const colors = model.get("colors");
    for (const [id, shape] of shapes) {
      const c = colors[id];
      if (c) shape.setAttribute("fill", c.slice(0, 7));
    }
    legend.replaceChildren(
      ...model.get("legend").map(([label, color]) => {
        const chip = el_("span", { class: "tx8-chip" }, label);
        chip.style.background = color;
        return chip;
      }),
    );
    const ms = performance.now() - t0;
    model.set("browser_recolor_ms", ms);
    model.save_changes();
    showStatus();
  }

  function showStatus() {
    const n = shapes.size;
    const layout = model.get("render_seconds").toFixed(2);
    const rec = model.get("browser_recolor_ms").toFixed(1);
    status.textContent = `${n} nodes · layout ${layout} s (${model.get("render_engine")}) · recolour ${rec} ms`;
  }

  function fillOverlays() {
    const names = model.get("overlay_names");
    select.replaceChildren(...names.map((n) => el_("option", { value: n }, n)));
    select.value = model.get("overlay");
  }

  function markSelected() {
    for (const g of canvas.querySelectorAll(".tx8-selected")) g.classList.remove("tx8-selected");
    const id = model.get("selected");
    if (id < 0) return;
    const g = canvas.querySelector(`#op${id}`) || canvas.querySelector(`#grp${id}`);
    if (g) g.classList.add("tx8-selected");
  }

  function table(rows) {
    const t = el_("table");
    for (const [k, v] of rows) {
      const tr = el_("tr");
      tr.append(el_("th", {}, k), el_("td", {}, v));
      t.append(tr);
    }
    return t;
  }

  function showHover(name) {
    const info = model.get("node_info")[name];
    if (!info) {
      hover.replaceChildren();
      return;
    }
    const label = model.get("labels")[name];
    const rows = Object.entries(info);
    if (label) rows.splice(1, 0, [model.get("overlay"), label]);
    hover.replaceChildren(el_("div", { class: "tx8-title" }, "hover"), table(rows));
  }

  function showDetails() {
    const info = model.get("selected_info");
    const decisions = model.get("selected_decisions");
    if (!Object.keys(info).length) {
      details.replaceChildren(el_("div", { class: "tx8-hint" }, "click an op to see its decisions"));
      return;
    }
    const parts = [el_("div", { class: "tx8-title" }, `selected ${info.op || ""}`), table(Object.entries(info))];
    const head = el_("div", { class: "tx8-title" }, `decisions (${decisions.length})`);
    parts.push(head);
    if (decisions.length) {
      const t = el_("table", { class: "tx8-decisions" });
      const hr = el_("tr");
      for (const h of ["pass", "choice", "reason"]) hr.append(el_("th", {}, h));
      t.append(hr);
      for (const d of decisions) {
        const tr = el_("tr");
        tr.append(el_("td", {}, d.pass), el_("td", {}, d.choice), el_("td", {}, d.reason));
        t.append(tr);
      }
      parts.push(t);
    } else {
      parts.push(el_("div", { class: "tx8-hint" }, "no pass decided anything about this op"));
    }
    const id = model.get("selected");
    if (canvas.querySelector(`#grp${id}`)) {
      const btn = el_("button", {}, "collapse this group");
      btn.onclick = () => model.send({ type: "collapse", id });
      parts.push(btn);
    }
    details.replaceChildren(...parts);
  }

  canvas.addEventListener("mouseover", (e) => {
    const g = e.target.closest("g.node");
    if (g) showHover(g.id.startsWith("px-") ? g.id.split("-")[1] : g.id);
  });
  canvas.addEventListener("click", (e) => {
    const g = e.target.closest("g.node, g.cluster");
    if (!g) return;
    if (g.classList.contains("collapsed")) {
      model.send({ type: "expand", id: opId(g.id) });
      return;
    }
    const id = g.classList.contains("cluster") ? Number(g.id.slice(3)) : opId(g.id);
    if (id === null || Number.isNaN(id)) return;
    model.set("selected", id);
    model.save_changes();
  });
  select.addEventListener("change", () => {
    model.set("overlay", select.value);
    model.save_changes();
  });
  zoomIn.onclick = () => { zoom *= 1.25; applyZoom(); };
  zoomOut.onclick = () => { zoom /= 1.25; applyZoom(); };
  zoomFit.onclick = () => {
    if (!natural) return;
    zoom = (canvas.clientWidth - 8) / (natural[0] * 96 / 72);
    applyZoom();
  };

  const handlers = [
    ["change:svg", draw],
    ["change:colors", recolor],
    ["change:selected", () => { markSelected(); }],
    ["change:selected_info", showDetails],
    ["change:selected_decisions", showDetails],
    ["change:overlay_names", fillOverlays],
    ["change:overlay", fillOverlays],
    ["change:height", () => { canvas.style.height = model.get("height"); }],
  ];
  for (const [ev, fn] of handlers) model.on(ev, fn);
  fillOverlays();
  draw();
  showDetails();
  return () => { for (const [ev, fn] of handlers) model.off(ev, fn); };
}

export default { render };
