// Small DOM helpers: text goes in only through text nodes and textContent, never innerHTML.

export type Attrs = Record<string, string | number>;
export type Kid = Node | string | number;

/** The page's element with this id (the HTML in ../page.ts has them all). */
export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const el = document.getElementById(id);
  if (!el) throw new Error(`the page has no #${id}`);
  return el as T;
}

/** An HTML element with these attributes and children (strings and numbers become text). */
export function h(tag: string, attrs?: Attrs, kids?: Kid[]): HTMLElement {
  const el = document.createElement(tag);
  const a = attrs || {};
  for (const k in a) el.setAttribute(k, String(a[k]));
  for (const c of kids || []) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return el;
}

/** An SVG element with these attributes and, when given, this text. */
export function s(tag: string, attrs?: Attrs, text?: string): SVGElement {
  const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
  const a = attrs || {};
  for (const k in a) el.setAttribute(k, String(a[k]));
  if (text !== undefined) el.textContent = text;
  return el;
}

/** Replaces the children of the element with this id. */
export function fill(id: string, kids: (Node | string)[]): void {
  byId(id).replaceChildren(...kids);
}
