// A few DOM helpers: elements are built with createElement and text nodes,
// never from HTML strings, so nothing the server sends can become markup;
// and every text shows its bidirectional controls escaped (logic.bidiRuns),
// so no name can read as another.
import { bidiRuns } from "./logic";

type Attrs = Record<string, string | boolean | number | EventListener | undefined>;
type Child = Node | string | number | null | undefined | false;

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === false) continue;
    if (typeof v === "function") el.addEventListener(k.replace(/^on/, ""), v);
    else if (v === true) el.setAttribute(k, "");
    else el.setAttribute(k, String(v));
  }
  append(el, children);
  return el;
}

export function append(el: Node, children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    el.appendChild(typeof c === "object" ? c : text(String(c)));
  }
}

/** Text as nodes: as it is, with each bidirectional control as a marked escape ("\u202E"). */
export function text(s: string): Node {
  const runs = bidiRuns(s);
  if (runs.length <= 1 && !runs[0]?.escaped) return document.createTextNode(s);
  const frag = document.createDocumentFragment();
  for (const r of runs) {
    frag.appendChild(r.escaped
      ? h("span", { class: "bidi-escape", title: "A bidirectional control character, shown escaped" }, document.createTextNode(r.text))
      : document.createTextNode(r.text));
  }
  return frag;
}

const SVG = "http://www.w3.org/2000/svg";

/** A sparkline: a polyline in a small SVG, described for screen readers. */
export function spark(points: string, label: string, width: number, height: number): SVGSVGElement {
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.setAttribute("width", String(width));
  svg.setAttribute("height", String(height));
  svg.setAttribute("class", "spark");
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", label);
  const line = document.createElementNS(SVG, "polyline");
  line.setAttribute("points", points);
  svg.appendChild(line);
  return svg;
}

/** Replaces what el holds. */
export function replace(el: Element, ...children: Child[]): void {
  el.replaceChildren();
  append(el, children);
}
