// The views of a piece shared by the playground and the piece editor: its movements' effective
// tools and its movement graph (its findings are drawn by diagnostics.ts). The data comes from the wasm core
// (validatePiece, pieceTools, pieceGraphModel); these functions only draw it.
import { el } from "./dom";
import { visible } from "./visible";
import type { EffectiveTools, Graph } from "../../extension/src/generated/core";

/** One card per movement: the commands it allows and its runcommand patterns. */
export function toolCards(all: EffectiveTools[]): HTMLDivElement[] {
  return all.map((t) => {
    const d = el("div", "tools-m");
    d.append(el("b", "", t.movement), visible(t.commands.join(", ")));
    if (t.command_patterns) d.append(el("div", "timing", t.command_patterns.length ? `runcommand only: ${t.command_patterns.join(" | ")}` : "runcommand: nothing (an empty allowed_commands)"));
    return d;
  });
}

const SVG = "http://www.w3.org/2000/svg";

function svg<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Record<string, string | number>, text = ""): SVGElementTagNameMap[K] {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text) e.textContent = visible(text);
  return e;
}

/** Splits a label into lines of at most `max` characters at spaces (a longer word stays whole). */
function wrapLabel(label: string, max: number): string[] {
  const lines: string[] = [];
  let line = "";
  for (const word of label.split(/\s+/).filter((w) => w !== "")) {
    if (line && line.length + 1 + word.length > max) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) lines.push(line);
  return lines.length > 0 ? lines : [""];
}

/** Draws the core's graph: nodes in their layers, rules as arrows, default_next dashed. */
export function drawGraph(graph: Graph, title: string): SVGSVGElement {
  const layers = new Map<number, string[]>();
  for (const n of graph.nodes) layers.set(n.layer, [...(layers.get(n.layer) ?? []), n.id]);
  const W = 150, H = 44, GX = 60, GY = 70;
  const pos = new Map<string, { x: number; y: number }>();
  const maxPer = Math.max(1, ...[...layers.values()].map((l) => l.length));
  const depths = [...layers.keys()].sort((a, b) => a - b);
  depths.forEach((d, row) => {
    const ids = layers.get(d) ?? [];
    ids.forEach((id, i) => pos.set(id, { x: 30 + i * (W + GX) + ((maxPer - ids.length) * (W + GX)) / 2, y: 30 + row * (H + GY) }));
  });
  let width = 60 + maxPer * (W + GX) - GX;
  const height = 60 + depths.length * (H + GY) - GY;
  // Drawn at its own size (shrunk to fit, never blown up).
  const root = svg("svg", { viewBox: `0 0 ${width} ${height}`, width, height, role: "img", "aria-label": visible(`movement graph of ${title}`) });
  const defs = svg("defs", {});
  const marker = svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" });
  marker.append(svg("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: "#6b7384" }));
  defs.append(marker);
  root.append(defs);
  for (const e of graph.edges) {
    const a = pos.get(e.from), b = pos.get(e.to);
    if (!a || !b) continue;
    const x1 = a.x + W / 2, y1 = a.y + H, x2 = b.x + W / 2, y2 = b.y;
    const back = y2 <= y1;
    const d = back ? `M ${a.x + W} ${a.y + H / 2} C ${a.x + W + 60} ${a.y + H / 2}, ${b.x + W + 60} ${b.y + H / 2}, ${b.x + W} ${b.y + H / 2}` : `M ${x1} ${y1} L ${x2} ${y2}`;
    root.append(svg("path", { d, fill: "none", stroke: e.fallback ? "#adb5bd" : "#6b7384", "stroke-width": 1.5, "stroke-dasharray": e.fallback ? "5 4" : "", "marker-end": "url(#arrow)" }));
    const lx = back ? Math.max(a.x, b.x) + W + 34 : (x1 + x2) / 2 + 6, ly = back ? (a.y + b.y) / 2 + H / 2 : (y1 + y2) / 2;
    // The whole label, wrapped at word boundaries (never clipped); the drawing widens to hold it.
    const lines = wrapLabel(visible(e.label), 24);
    const text = svg("text", { x: lx, y: ly - ((lines.length - 1) * 13) / 2, "font-size": 11, fill: "#495057" });
    lines.forEach((line, i) => text.append(svg("tspan", { x: lx, dy: i === 0 ? 0 : 13 }, line)));
    text.append(svg("title", {}, e.label));
    root.append(text);
    width = Math.max(width, lx + Math.max(...lines.map((l) => l.length)) * 6.4 + 12);
  }
  root.setAttribute("viewBox", `0 0 ${width} ${height}`);
  root.setAttribute("width", String(width));
  for (const n of graph.nodes) {
    const p = pos.get(n.id);
    if (!p) continue;
    const sentinel = n.kind === "sentinel";
    const g = svg("g", { "data-node": n.name });
    g.append(svg("rect", { x: p.x, y: p.y, width: W, height: H, rx: sentinel ? 22 : 8, fill: sentinel ? "#f1f3f5" : n.kind === "edits" ? "#e7f5ff" : "#fff", stroke: n.initial ? "#3b5bdb" : "#ced4da", "stroke-width": n.initial ? 2 : 1 }));
    g.append(svg("text", { x: p.x + W / 2, y: p.y + 19, "text-anchor": "middle", "font-size": 13, "font-weight": 600, fill: "#1d2330" }, n.name.length > 20 ? `${n.name.slice(0, 19)}…` : n.name));
    g.append(svg("text", { x: p.x + W / 2, y: p.y + 35, "text-anchor": "middle", "font-size": 11, fill: "#6b7384" }, sentinel ? "terminal" : n.kind === "edits" ? "edits" : "read-only"));
    root.append(g);
  }
  return root;
}
