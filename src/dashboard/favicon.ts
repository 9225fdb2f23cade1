/**
 * The tab icon browsers ask for on every page (/favicon.ico): two overlapping
 * squares, one kept, one dropped. SVG (every current browser takes it under
 * that name when the content type says so); public and cacheable.
 */
export const FAVICON_SVG =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect x="3" y="3" width="18" height="18" rx="3" fill="#2f6fde"/>' +
  '<rect x="11" y="11" width="18" height="18" rx="3" fill="none" stroke="#1d2330" stroke-width="2.5" stroke-dasharray="4 3"/></svg>';

export function faviconResponse(): Response {
  return new Response(FAVICON_SVG, {
    headers: { "content-type": "image/svg+xml", "cache-control": "public, max-age=86400", "x-content-type-options": "nosniff" },
  });
}
